package s3_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/miniotest"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/s3"
	"github.com/chunkvc/chunkvc/store/storetest"
)

// startMinio starts a server and points this process's S3 environment at it.
func startMinio(t testing.TB) *miniotest.Server {
	t.Helper()
	srv := miniotest.Start(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_PROFILE", "chunkvc-test-no-such-profile")
	return srv
}

func open(t testing.TB, url string, opt s3.Options) *s3.Store {
	t.Helper()
	s, err := s3.Open(t.Context(), url, opt)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return s
}

func object(seed int64, n int) ([]byte, hashing.ID) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b, hashing.Sum(b)
}

func TestConformance(t *testing.T) {
	startMinio(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		// A fresh prefix per store; every other one at a bucket's root.
		i := n.Add(1)
		url := fmt.Sprintf("s3://conformance/run/%d", i)
		if i%2 == 0 {
			url = fmt.Sprintf("s3://conformance-root-%d", i)
		}
		return open(t, url, s3.Options{CreateBucket: true})
	})
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url, bucket, prefix string
		ok                  bool
	}{
		{"s3://bucket", "bucket", "", true},
		{"s3://bucket/", "bucket", "", true},
		{"s3://bucket/data", "bucket", "data", true},
		{"s3://bucket/data/chunks/", "bucket", "data/chunks", true},
		{"s3://my.bucket-1/a", "my.bucket-1", "a", true},
		{"s3://", "", "", false},
		{"s3:///prefix", "", "", false},
		{"s3://Bucket/x", "", "", false},
		{"s3://b/x", "", "", false}, // too short a bucket name
		{"s3://bucket//x", "", "", false},
		{"s3://bucket/a/../b", "", "", false},
		{"s3://bucket/./b", "", "", false},
		{"s3://bucket/x?versionId=1", "", "", false},
		{"https://bucket/x", "", "", false},
		{"/local/path", "", "", false},
	} {
		b, p, err := s3.ParseURL(c.url)
		if (err == nil) != c.ok || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q, ok=%v", c.url, b, p, err, c.bucket, c.prefix, c.ok)
		}
	}
}

func TestOpen(t *testing.T) {
	srv := startMinio(t)
	ctx := t.Context()

	_, err := s3.Open(ctx, "s3://missing-bucket/x", s3.Options{})
	if err == nil || !strings.Contains(err.Error(), "missing-bucket") || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("open of a missing bucket: %v; want an error saying it does not exist", err)
	}
	s := open(t, "s3://new-bucket/some/prefix/", s3.Options{CreateBucket: true, Connections: 5})
	if got, want := s.String(), "s3://new-bucket/some/prefix"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if s.Connections() != 5 || s.Endpoint() != srv.Endpoint {
		t.Errorf("Connections() = %d, Endpoint() = %q; want 5, %q", s.Connections(), s.Endpoint(), srv.Endpoint)
	}
	if d := open(t, "s3://new-bucket", s3.Options{}); d.Connections() != s3.DefaultConnections {
		t.Errorf("default Connections() = %d, want %d", d.Connections(), s3.DefaultConnections)
	}
	// Opening again (bucket exists) works with or without CreateBucket.
	open(t, "s3://new-bucket/other", s3.Options{CreateBucket: true})

	// Wrong credentials: a clear, permanent failure that shows no secret.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-key")
	start := time.Now()
	_, err = s3.Open(ctx, "s3://new-bucket", s3.Options{})
	if err == nil {
		t.Fatal("open with a wrong secret key succeeded")
	}
	if strings.Contains(err.Error(), "wrong-secret-key") || strings.Contains(err.Error(), srv.SecretKey) {
		t.Errorf("error shows a secret: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("open with wrong credentials took %v: an auth failure must not be retried", d)
	}
	t.Logf("wrong secret: %v", err)

	// A bad endpoint variable is refused, naming the variable.
	t.Setenv("AWS_ENDPOINT_URL_S3", "ftp://127.0.0.1:1")
	if _, err := s3.Open(ctx, "s3://new-bucket", s3.Options{}); err == nil || !strings.Contains(err.Error(), "AWS_ENDPOINT_URL_S3") {
		t.Errorf("open with an ftp endpoint: %v; want an error naming AWS_ENDPOINT_URL_S3", err)
	}
	// AWS_ENDPOINT_URL is the fallback.
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	open(t, "s3://new-bucket", s3.Options{})
}

// TestLargeObject puts a 40 MiB object (a multipart upload), reads it
// whole and in ranges across part boundaries, and checks that the server
// received about 40 MiB.
func TestLargeObject(t *testing.T) {
	srv := startMinio(t)
	s := open(t, "s3://large/p", s3.Options{CreateBucket: true, PartSize: 16 << 20})
	data, id := object(40, 40<<20)
	rx0, _, err := srv.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	rx1, _, err := srv.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(data))
	if got := rx1 - rx0; got < n || got > n+n/50 {
		t.Errorf("server received %d bytes for a %d-byte put; want [n, 1.02n]", got, n)
	}
	t.Logf("put of %d bytes: server received %d (%.3f%% overhead)", n, rx1-rx0, 100*float64(rx1-rx0-n)/float64(n))

	got, err := store.ReadAll(t.Context(), s, id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll of 40 MiB: %d bytes, %v", len(got), err)
	}
	_, tx0, _ := srv.Traffic()
	for _, r := range [][2]int64{{16<<20 - 10, 20}, {n - 1, 1}, {n - 5, -1}, {3, 32 << 20}} {
		rc, err := s.Get(t.Context(), id, r[0], r[1])
		if err != nil {
			t.Fatalf("get [%d,+%d): %v", r[0], r[1], err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		want := data[r[0]:]
		if r[1] >= 0 {
			want = want[:r[1]]
		}
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("get [%d,+%d): %d bytes, %v; want %d bytes of the object", r[0], r[1], len(b), err, len(want))
		}
	}
	_, tx1, _ := srv.Traffic()
	if want := int64(20 + 1 + 5 + 32<<20); tx1-tx0 < want || tx1-tx0 > want+want/50 {
		t.Errorf("server sent %d bytes for %d bytes of ranges", tx1-tx0, want)
	}
	// Putting it again sends nothing but a HEAD.
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	if rx2, _, _ := srv.Traffic(); rx2-rx1 > 4096 {
		t.Errorf("second put of an existing object: server received %d bytes", rx2-rx1)
	}
}

// TestServerStopped checks that with the server down calls fail within a
// bounded time, naming the endpoint, and succeed once it is back.
func TestServerStopped(t *testing.T) {
	srv := startMinio(t)
	opt := s3.Options{CreateBucket: true, Retries: 3, RetryTime: 5 * time.Second, Timeout: 3 * time.Second}
	s := open(t, "s3://stopped/x", opt)
	present, presentID := object(1, 1000)
	if err := store.Put(t.Context(), s, presentID, present); err != nil {
		t.Fatal(err)
	}
	data, id := object(2, 100<<10)
	srv.Stop()

	const bound = 10 * time.Second
	start := time.Now()
	err := store.Put(t.Context(), s, id, data)
	took := time.Since(start)
	if err == nil {
		t.Fatal("put with the server stopped succeeded")
	}
	t.Logf("put with the server stopped failed after %v: %v", took.Round(time.Millisecond), err)
	if took > bound {
		t.Errorf("put took %v to fail, want < %v", took, bound)
	}
	for _, want := range []string{srv.Endpoint, id.Short(), "attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for name, fn := range map[string]func() error{
		"stat": func() error { _, err := s.Stat(t.Context(), presentID); return err },
		"get":  func() error { _, err := s.Get(t.Context(), presentID, 0, -1); return err },
		"has": func() error {
			_, err := s.HasMany(t.Context(), []hashing.ID{presentID, id})
			return err
		},
		"list": func() error { return s.List(t.Context(), func(store.Info) error { return nil }) },
	} {
		start := time.Now()
		err := fn()
		if err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s with the server stopped: %v; want a failure that is not ErrNotFound", name, err)
		}
		if took := time.Since(start); took > bound {
			t.Errorf("%s took %v to fail, want < %v", name, took, bound)
		}
	}

	srv.Restart()
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
	for _, want := range []hashing.ID{presentID, id} {
		if _, err := store.ReadAll(t.Context(), s, want); err != nil {
			t.Errorf("read after restart: %v", err)
		}
	}
}

// inflight counts concurrent HTTP requests through a transport.
type inflight struct {
	next     http.RoundTripper
	now, max atomic.Int64
}

func (c *inflight) RoundTrip(req *http.Request) (*http.Response, error) {
	n := c.now.Add(1)
	for m := c.max.Load(); n > m && !c.max.CompareAndSwap(m, n); m = c.max.Load() {
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		c.now.Add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, done: func() { c.now.Add(-1) }}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *countedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

func TestConnectionLimit(t *testing.T) {
	startMinio(t)
	var counter *inflight
	s3.SetTestTransport(func(rt http.RoundTripper) http.RoundTripper {
		counter = &inflight{next: rt}
		return counter
	})
	t.Cleanup(func() { s3.SetTestTransport(nil) })
	const limit = 3
	s := open(t, "s3://limit/x", s3.Options{CreateBucket: true, Connections: limit})
	counter.max.Store(0)

	var ids []hashing.ID
	g, ctx := errgroup.WithContext(t.Context())
	for i := range 40 {
		data, id := object(int64(i), 64<<10)
		ids = append(ids, id)
		g.Go(func() error { return store.Put(ctx, s, id, data) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// Readers hold a slot until closed: with all slots held, the next Get waits.
	var open []io.ReadCloser
	for _, id := range ids[:limit] {
		rc, err := s.Get(t.Context(), id, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, rc)
	}
	got := make(chan error, 1)
	go func() {
		rc, err := s.Get(t.Context(), ids[limit], 0, -1)
		if err == nil {
			rc.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Errorf("get with all %d slots held returned at once (%v)", limit, err)
	case <-time.After(200 * time.Millisecond):
	}
	open[0].Close()
	if err := <-got; err != nil {
		t.Error(err)
	}
	for _, rc := range open[1:] {
		rc.Close()
	}
	has, err := s.HasMany(t.Context(), append(ids, hashing.Sum([]byte("absent"))))
	if err != nil || len(has) != len(ids)+1 {
		t.Fatalf("HasMany: %d answers, %v", len(has), err)
	}
	if m := counter.max.Load(); m > limit || m < 2 {
		t.Errorf("at most %d requests were in flight, want 2..%d", m, limit)
	}
}

func TestHasMany(t *testing.T) {
	startMinio(t)
	s := open(t, "s3://hasmany/x", s3.Options{CreateBucket: true, Connections: 8})
	want := map[hashing.ID]bool{}
	var ids []hashing.ID
	for i := range 60 {
		data, id := object(int64(i), 100+i)
		if i%3 == 0 {
			if err := store.Put(t.Context(), s, id, data); err != nil {
				t.Fatal(err)
			}
		}
		want[id] = i%3 == 0
		ids = append(ids, id)
	}
	got, err := s.HasMany(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("HasMany: %d answers for %d ids", len(got), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("HasMany[%s] = %v, want %v", id.Short(), got[id], w)
		}
	}
	if got, err := s.HasMany(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("HasMany(nil) = %v, %v", got, err)
	}
	// StatMany stops at fn's error; sizes are reported.
	stop, calls := errors.New("stop"), 0
	err = s.StatMany(t.Context(), ids, func(id hashing.ID, info store.Info, err error) error {
		calls++
		if err == nil && info.Size != int64(100+indexOf(ids, id)) {
			t.Errorf("StatMany size of %s = %d", id.Short(), info.Size)
		}
		if calls == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 5 {
		t.Errorf("StatMany with fn failing at call 5: %d calls, %v", calls, err)
	}
}

func indexOf(ids []hashing.ID, id hashing.ID) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// BenchmarkPut measures upload throughput of new objects to loopback MinIO
// with the default number of connections.
func BenchmarkPut(b *testing.B) {
	startMinio(b)
	for _, size := range []int{256 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s := open(b, fmt.Sprintf("s3://bench/%d", size), s3.Options{CreateBucket: true})
			base := make([]byte, size)
			rand.New(rand.NewSource(int64(size))).Read(base)
			var seq atomic.Int64
			b.SetBytes(int64(size))
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((s.Connections() + procs - 1) / procs) // about Connections() writers
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				data := bytes.Clone(base)
				for pb.Next() {
					// A new object each time, under an ID that costs no hashing
					// (Put trusts its caller; store.Put would verify).
					tag := fmt.Appendf(nil, "%016d", seq.Add(1))
					copy(data, tag)
					if err := s.Put(b.Context(), hashing.Sum(tag), data); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func TestBatchConformance(t *testing.T) {
	startMinio(t)
	var n atomic.Int64
	// Packed objects are stored raw: no footprint, whose checks expect deltas.
	storetest.RunBatch(t, func(t *testing.T) store.Store {
		return open(t, fmt.Sprintf("s3://batch/run/%d", n.Add(1)), s3.Options{CreateBucket: true})
	}, nil)
}

// BenchmarkS3BatchPut compares putting new 40 KiB objects through a batch
// (packed, committed at the end) with putting them one by one, on
// loopback MinIO with the default number of connections. ns/op is per
// object.
func BenchmarkS3BatchPut(b *testing.B) {
	startMinio(b)
	const size = 40 << 10
	var seq atomic.Int64
	for _, mode := range []string{"batch", "loose"} {
		b.Run(mode, func(b *testing.B) {
			s := open(b, fmt.Sprintf("s3://bench/batch-%s-%d", mode, seq.Add(1)), s3.Options{CreateBucket: true})
			base := make([]byte, size)
			rand.New(rand.NewSource(size)).Read(base)
			var bt store.Batch
			if mode == "batch" {
				var err error
				if bt, err = s.Batch(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(size)
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((s.Connections() + procs - 1) / procs)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				data := bytes.Clone(base)
				for pb.Next() {
					tag := fmt.Appendf(nil, "%016d", seq.Add(1))
					copy(data, tag)
					var err error
					if bt != nil {
						_, err = bt.Put(b.Context(), hashing.Sum(tag), data, hashing.ID{})
					} else {
						err = s.Put(b.Context(), hashing.Sum(tag), data)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			if bt != nil {
				if err := bt.Commit(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
