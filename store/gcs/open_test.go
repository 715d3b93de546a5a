package gcs_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/gcs"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url, bucket, prefix string
		ok                  bool
	}{
		{"gs://bucket", "bucket", "", true},
		{"gs://bucket/", "bucket", "", true},
		{"gs://bucket/data", "bucket", "data", true},
		{"gs://bucket/data/chunks/", "bucket", "data/chunks", true},
		{"gs://my_bucket-1/a", "my_bucket-1", "a", true},
		{"gs://", "", "", false},
		{"gs:///prefix", "", "", false},
		{"gs://Bucket/x", "", "", false},
		{"gs://b/x", "", "", false}, // too short a bucket name
		{"gs://goog-bucket/x", "", "", false},
		{"gs://bucket//x", "", "", false},
		{"gs://bucket/a/../b", "", "", false},
		{"gs://bucket/./b", "", "", false},
		{"gs://bucket/x?generation=1", "", "", false},
		{"s3://bucket/x", "", "", false},
		{"/local/path", "", "", false},
	} {
		b, p, err := gcs.ParseURL(c.url)
		if (err == nil) != c.ok || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q, ok=%v", c.url, b, p, err, c.bucket, c.prefix, c.ok)
		}
	}
}

func TestOpen(t *testing.T) {
	srv := startEmulator(t)
	ctx := t.Context()

	_, err := gcs.Open(ctx, "gs://missing-bucket/x", gcs.Options{})
	if err == nil || !strings.Contains(err.Error(), "missing-bucket") || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("open of a missing bucket: %v; want an error saying it does not exist", err)
	}
	s := open(t, "gs://new-bucket/some/prefix/", gcs.Options{CreateBucket: true, Connections: 5})
	if got, want := s.String(), "gs://new-bucket/some/prefix"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if s.Connections() != 5 || s.Endpoint() != srv.Endpoint {
		t.Errorf("Connections() = %d, Endpoint() = %q; want 5, %q", s.Connections(), s.Endpoint(), srv.Endpoint)
	}
	if d := open(t, "gs://new-bucket", gcs.Options{}); d.Connections() != gcs.DefaultConnections {
		t.Errorf("default Connections() = %d, want %d", d.Connections(), gcs.DefaultConnections)
	}
	// Opening again (bucket exists) works with or without CreateBucket.
	open(t, "gs://new-bucket/other", gcs.Options{CreateBucket: true})

	// A bad emulator variable is refused, naming the variable.
	t.Setenv("STORAGE_EMULATOR_HOST", "ftp://127.0.0.1:1")
	if _, err := gcs.Open(ctx, "gs://new-bucket", gcs.Options{}); err == nil || !strings.Contains(err.Error(), "STORAGE_EMULATOR_HOST") {
		t.Errorf("open with an ftp emulator: %v; want an error naming STORAGE_EMULATOR_HOST", err)
	}
	// A URL works as well as host:port.
	t.Setenv("STORAGE_EMULATOR_HOST", srv.Endpoint)
	open(t, "gs://new-bucket", gcs.Options{})
}

// TestMissingCredentials: without an emulator, a credential file that is
// not there fails Open at once with an error naming the store and what to
// set. (Only a named file is tried: a search of the default chain would
// ask the metadata server, off this machine.)
func TestMissingCredentials(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/no-such-key.json")
	_, err := gcs.Open(t.Context(), "gs://some-bucket/team", gcs.Options{})
	if err == nil {
		t.Fatal("open without credentials succeeded")
	}
	for _, want := range []string{"gs://some-bucket/team", "GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "no-such-key.json"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("no credentials: %v", err)
}

// TestLargeObject puts a 20 MiB object with 5 MiB chunks, which must go as
// a resumable upload of 4 chunks (one request each), and reads it whole and in ranges across
// chunk boundaries.
func TestLargeObject(t *testing.T) {
	startEmulator(t)
	var chunks, uploads atomic.Int64
	gcs.SetTestTransport(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch q := r.URL.Query(); {
			case q.Get("uploadType") == "resumable" && q.Has("upload_id"):
				chunks.Add(1)
			case q.Get("uploadType") == "resumable":
				uploads.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	defer gcs.SetTestTransport(nil)
	s := open(t, "gs://large/p", gcs.Options{CreateBucket: true, ChunkSize: 5 << 20})
	data, id := object(40, 20<<20)
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	// 4 chunks, and a fifth, empty one when the SDK finalizes apart.
	if uploads.Load() != 1 || chunks.Load() < 4 || chunks.Load() > 5 {
		t.Errorf("20 MiB in 5 MiB chunks: %d resumable uploads of %d chunk requests, want 1 of 4 or 5", uploads.Load(), chunks.Load())
	}
	got, err := store.ReadAll(t.Context(), s, id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}
	for _, r := range [][2]int64{{5<<20 - 10, 20}, {0, 1}, {20<<20 - 1, 1}, {7 << 20, -1}} {
		rc, err := s.Get(t.Context(), id, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		want := data[r[0]:]
		if r[1] >= 0 {
			want = want[:r[1]]
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("range %v: %d bytes, %v", r, len(got), err)
		}
	}
	// A small object is one request, not a resumable upload.
	uploads.Store(0)
	small, smallID := object(41, 100<<10)
	if err := store.Put(t.Context(), s, smallID, small); err != nil {
		t.Fatal(err)
	}
	if uploads.Load() != 0 {
		t.Errorf("a 100 KiB object went as %d resumable uploads, want a single request", uploads.Load())
	}
	if _, err := s.Stat(t.Context(), smallID); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
