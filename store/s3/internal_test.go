package s3

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/miniotest"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

func TestRetryable(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Put", URL: "http://x/y", Err: err} }
	for _, c := range []struct {
		err  error
		want bool
	}{
		{minio.ErrorResponse{Code: "SlowDown", StatusCode: 503}, true},
		{minio.ErrorResponse{Code: "InternalError", StatusCode: 500}, true},
		{minio.ErrorResponse{Code: "Whatever", StatusCode: 502}, true},
		{minio.ErrorResponse{Code: "TooManyRequests", StatusCode: 429}, true},
		{fmt.Errorf("wrapped: %w", minio.ErrorResponse{Code: "RequestTimeout", StatusCode: 400}), true},
		{minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}, false},
		{minio.ErrorResponse{Code: "NoSuchKey", StatusCode: 404}, false},
		{minio.ErrorResponse{Code: "InvalidRange", StatusCode: 416}, false},
		{minio.ErrorResponse{Code: "SignatureDoesNotMatch", StatusCode: 403}, false},
		{minio.ErrorResponse{Code: "PreconditionFailed", StatusCode: 412}, false},
		{urlErr(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{urlErr(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), true},
		{urlErr(errors.New("Connection closed by foreign host http://x/y. Retry again.")), true},
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("read: %w", retry.ErrStalled), true},
		{urlErr(x509.UnknownAuthorityError{}), false},
		{context.Canceled, false},
		{errors.New("something else"), false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Retries that all failed for want of an answer from the store give
// store.ErrUnavailable (the error's text unchanged); an answer from the
// store itself, however often retried, does not.
func TestUnavailable(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "http://x/y", Err: err} }
	pol := retry.New(2, time.Minute, 1, retry.Classifier{Retryable: retryable, Status: status})
	for _, c := range []struct {
		err  error
		want bool
	}{
		{urlErr(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{urlErr(&net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}), true},
		{urlErr(context.DeadlineExceeded), true},
		{fmt.Errorf("read: %w", retry.ErrStalled), true},
		{io.ErrUnexpectedEOF, true},
		{minio.ErrorResponse{Code: "ServiceUnavailable", StatusCode: 503}, true},
		{minio.ErrorResponse{Code: "Whatever", StatusCode: 504}, true},
		{minio.ErrorResponse{Code: "InternalError", StatusCode: 500}, false},
		{minio.ErrorResponse{Code: "SlowDown", StatusCode: 429}, false},
		{minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}, false},
		{urlErr(x509.UnknownAuthorityError{}), false},
	} {
		calls := 0
		err := pol.Attempts(t.Context(), retry.NoSlot, func(context.Context) error { calls++; return c.err })
		if got := errors.Is(err, store.ErrUnavailable); got != c.want {
			t.Errorf("%v after %d attempts: unavailable %v, want %v (%v)", c.err, calls, got, c.want, err)
		}
		if !strings.Contains(err.Error(), c.err.Error()) {
			t.Errorf("error %q lost %q", err, c.err)
		}
	}
}

func TestEndpointFromEnv(t *testing.T) {
	for _, c := range []struct {
		s3, any string
		host    string
		secure  bool
		ok      bool
	}{
		{"", "", "s3.amazonaws.com", true, true},
		{"http://127.0.0.1:9000", "", "127.0.0.1:9000", false, true},
		{"http://127.0.0.1:9000/", "", "127.0.0.1:9000", false, true},
		{"", "https://minio.example.org", "minio.example.org", true, true},
		{"minio.example.org:9000", "", "minio.example.org:9000", true, true},
		{"http://a:1", "http://b:2", "a:1", false, true},
		{"http://user:pw@a:1", "", "", false, false},
		{"http://a:1/path", "", "", false, false},
		{"ftp://a", "", "", false, false},
	} {
		t.Setenv("AWS_ENDPOINT_URL_S3", c.s3)
		t.Setenv("AWS_ENDPOINT_URL", c.any)
		host, secure, err := endpointFromEnv()
		if (err == nil) != c.ok || host != c.host || secure != c.secure {
			t.Errorf("endpoint from %q, %q = %q, %v, %v; want %q, %v, ok=%v", c.s3, c.any, host, secure, err, c.host, c.secure, c.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("error shows a password: %v", err)
		}
	}
}

func testStore(t *testing.T, url string, opt Options) (*Store, *miniotest.Server) {
	t.Helper()
	srv := miniotest.Start(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL", "")
	opt.CreateBucket = true
	s, err := Open(t.Context(), url, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

// TestListSkipsJunk stores keys that are not objects next to objects, and
// a neighbouring prefix; List reports only the objects under its prefix.
func TestListSkipsJunk(t *testing.T) {
	s, _ := testStore(t, "s3://junk/p/1", Options{})
	ctx := t.Context()
	want := map[hashing.ID]int64{}
	for i := range 5 {
		data := bytes.Repeat([]byte{byte(i)}, i+1)
		id := hashing.Sum(data)
		if err := s.Put(ctx, id, data); err != nil {
			t.Fatal(err)
		}
		want[id] = int64(len(data))
	}
	other := hashing.Sum([]byte("other")).String()
	for _, key := range []string{
		"p/1/README",
		"p/1/ab/notahash",
		"p/1/" + other[:2] + "/" + strings.ToUpper(other),
		"p/1/00/" + other, // wrong fan-out folder
		"p/1/" + other[:2] + "/" + other + ".tmp",
		"p/1/x/" + other[:2] + "/" + other,
		"p/10/" + other[:2] + "/" + other, // a neighbouring store
		"p/" + other[:2] + "/" + other,
	} {
		if _, err := s.client.PutObject(ctx, s.bucket, key, strings.NewReader("junk"), 4, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[hashing.ID]int64{}
	if err := s.List(ctx, func(info store.Info) error { got[info.ID] = info.Size; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("listed %d objects, want %d", len(got), len(want))
	}
	for id, n := range want {
		if got[id] != n {
			t.Errorf("listed %s with size %d, want %d", id.Short(), got[id], n)
		}
	}
}

// breaker cuts the body of the first GET answers after a number of bytes,
// as a reset connection would.
type breaker struct {
	next  http.RoundTripper
	left  atomic.Int32 // answers still to cut
	after int
	cuts  atomic.Int32
}

func (b *breaker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && resp.StatusCode/100 == 2 && b.left.Add(-1) >= 0 {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: b.after, b: b}
	}
	return resp, err
}

type cutBody struct {
	io.ReadCloser
	left int
	b    *breaker
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.b.cuts.Add(1)
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= n
	return n, err
}

// TestGetResumes breaks GET answers midway: the reader picks up where it
// stopped and returns the exact bytes; with too many breaks it fails.
func TestGetResumes(t *testing.T) {
	br := &breaker{after: 100 << 10}
	testHookTransport = func(rt http.RoundTripper) http.RoundTripper { br.next = rt; return br }
	t.Cleanup(func() { testHookTransport = nil })
	s, _ := testStore(t, "s3://resume/x", Options{Retries: 3})
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	id := hashing.Sum(data)
	if err := s.Put(ctx, id, data); err != nil {
		t.Fatal(err)
	}
	// Load the pack indexes (a LIST, itself a GET) before breaking answers.
	if err := s.Packs.Load(ctx); err != nil {
		t.Fatal(err)
	}
	br.left.Store(2)
	got, err := store.ReadAll(ctx, s, id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll through 2 broken answers: %d bytes, %v", len(got), err)
	}
	if br.cuts.Load() != 2 {
		t.Errorf("%d answers were cut, want 2", br.cuts.Load())
	}
	// A ranged read resumes within its range.
	br.left.Store(1)
	rc, err := s.Get(ctx, id, 50<<10, 300<<10)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[50<<10:350<<10]) {
		t.Errorf("ranged read through a broken answer: %d bytes, %v", len(got), err)
	}
	// Every answer broken at once: the reader gives up with an error.
	br.after = 0
	br.left.Store(1000)
	_, err = store.ReadAll(ctx, s, id)
	if err == nil || !strings.Contains(err.Error(), id.Short()) {
		t.Errorf("ReadAll with every answer broken: %v; want an error naming the object", err)
	}
}

// TestStalledServer points the store at a server that accepts connections
// and never answers: calls fail after about Timeout per attempt.
func TestStalledServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+l.Addr().String())
	t.Setenv("AWS_ACCESS_KEY_ID", "stalled")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "stalled-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	start := time.Now()
	_, err = Open(t.Context(), "s3://stalled/x", Options{Timeout: 500 * time.Millisecond, Retries: 2})
	took := time.Since(start)
	if err == nil {
		t.Fatal("open against a stalled server succeeded")
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	if took > 5*time.Second {
		t.Errorf("open took %v to fail, want about 2 × 0.5 s", took)
	}
	if !strings.Contains(err.Error(), l.Addr().String()) || !strings.Contains(err.Error(), "2 attempts") {
		t.Errorf("error %q does not name the endpoint and the attempts", err)
	}
}
