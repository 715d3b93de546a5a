package gcs_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/internal/faultproxy/faultsuite"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/gcs"
)

// TestFaults runs the fault suite against the emulator behind a fault
// proxy, resumable upload chunks included: the emulator hands out upload
// URLs on the proxy.
func TestFaults(t *testing.T) {
	srv := startEmulator(t)
	p := faultproxy.Start(t, srv.Endpoint, 10)
	srv.ExternalURL = p.URL
	srv.Restart()
	t.Setenv("STORAGE_EMULATOR_HOST", p.URL)
	isChunk := func(r *http.Request) bool { return r.URL.Query().Has("upload_id") }
	isMedia := func(r *http.Request) bool { return r.URL.Query().Get("alt") == "media" }
	faultsuite.Run(t, faultsuite.Rig{
		Proxy: p,
		Open: func(t *testing.T, prefix string, o faultsuite.Tuning) store.Store {
			t.Helper()
			opt := gcs.Options{CreateBucket: true, Retries: o.Retries, RetryTime: o.RetryTime, Timeout: o.Timeout}
			if o.Patient {
				opt.ChunkSize = 1 << 20 // so a 3 MiB object is a resumable upload
			}
			s := open(t, "gs://faults/"+prefix, opt)
			if s.Endpoint() != p.URL {
				t.Fatalf("store talks to %s, not the proxy %s", s.Endpoint(), p.URL)
			}
			return s
		},
		Transient: []faultsuite.Case{
			{Name: "503 on upload", Size: 200 << 10, Rule: faultproxy.Rule{Method: "POST", Count: 3, Kind: faultproxy.Error}},
			{Name: "500 on metadata", Size: 1000, Rule: faultproxy.Rule{Method: "GET", Match: func(r *http.Request) bool { return !isMedia(r) }, Count: 3, Kind: faultproxy.Error, Status: 500}},
			{Name: "500 on media GET", Size: 300 << 10, Rule: faultproxy.Rule{Method: "GET", Match: isMedia, Count: 3, Kind: faultproxy.Error, Status: 500}},
			{Name: "429", Size: 1000, Rule: faultproxy.Rule{Count: 3, Kind: faultproxy.Error, Status: 429}},
			{Name: "reset before any", Size: 100 << 10, Rule: faultproxy.Rule{Count: 4, Kind: faultproxy.ResetBefore}},
			{Name: "reset after upload", Size: 100 << 10, Rule: faultproxy.Rule{Method: "POST", Count: 2, Kind: faultproxy.ResetAfter}},
			{Name: "reset after GET", Size: 100 << 10, Rule: faultproxy.Rule{Method: "GET", Count: 2, Kind: faultproxy.ResetAfter}},
			{Name: "half of all fail", Size: 64 << 10, Rule: faultproxy.Rule{Fraction: 0.5, Count: 6, Kind: faultproxy.Error}},
			{Name: "resumable chunk 503", Size: 3 << 20, Rule: faultproxy.Rule{Match: isChunk, Count: 2, Kind: faultproxy.Error}},
			{Name: "resumable chunk reset after", Size: 3 << 20, Rule: faultproxy.Rule{Match: isChunk, Count: 2, Kind: faultproxy.ResetAfter}},
		},
		List: faultproxy.Rule{Method: "GET", Path: "/storage/v1/b/faults/o", Match: func(r *http.Request) bool {
			return r.URL.Query().Has("prefix")
		}, Count: 2, Kind: faultproxy.Error},
		Key:       requestKey,
		Media:     isMedia,
		RangeCuts: 4,
	})
}

// requestKey is the object a request addresses: from the path of a
// metadata or media request, from the name parameter of an upload, ""
// for a resumable upload's chunk.
func requestKey(r *http.Request) string {
	if _, k, ok := strings.Cut(r.URL.Path, "/o/"); ok {
		return k
	}
	return r.URL.Query().Get("name")
}
