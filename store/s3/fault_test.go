package s3_test

import (
	"net/http"
	"testing"

	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/internal/faultproxy/faultsuite"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/s3"
)

// TestFaults runs the fault suite against MinIO behind a fault proxy.
func TestFaults(t *testing.T) {
	srv := startMinio(t)
	p := faultproxy.Start(t, srv.Endpoint, 10)
	t.Setenv("AWS_ENDPOINT_URL_S3", p.URL)
	isPart := func(r *http.Request) bool { return r.URL.Query().Has("partNumber") }
	faultsuite.Run(t, faultsuite.Rig{
		Proxy: p,
		Open: func(t *testing.T, prefix string, o faultsuite.Tuning) store.Store {
			t.Helper()
			opt := s3.Options{CreateBucket: true, Retries: o.Retries, RetryTime: o.RetryTime, Timeout: o.Timeout}
			if o.Patient {
				opt.PartSize = 5 << 20 // so an 11 MiB object is a multipart upload
			}
			s := open(t, "s3://faults/"+prefix, opt)
			if s.Endpoint() != p.URL {
				t.Fatalf("store talks to %s, not the proxy %s", s.Endpoint(), p.URL)
			}
			return s
		},
		Transient: []faultsuite.Case{
			{Name: "503 on PUT", Size: 200 << 10, Rule: faultproxy.Rule{Method: "PUT", Count: 3, Kind: faultproxy.Error}},
			{Name: "500 on HEAD", Size: 1000, Rule: faultproxy.Rule{Method: "HEAD", Count: 3, Kind: faultproxy.Error, Status: 500}},
			{Name: "500 on GET", Size: 300 << 10, Rule: faultproxy.Rule{Method: "GET", Count: 3, Kind: faultproxy.Error, Status: 500}},
			{Name: "reset before any", Size: 100 << 10, Rule: faultproxy.Rule{Count: 4, Kind: faultproxy.ResetBefore}},
			{Name: "reset after PUT", Size: 100 << 10, Rule: faultproxy.Rule{Method: "PUT", Count: 2, Kind: faultproxy.ResetAfter}},
			{Name: "reset after GET", Size: 100 << 10, Rule: faultproxy.Rule{Method: "GET", Count: 2, Kind: faultproxy.ResetAfter}},
			{Name: "half of all fail", Size: 64 << 10, Rule: faultproxy.Rule{Fraction: 0.5, Count: 6, Kind: faultproxy.Error}},
			{Name: "multipart part 503", Size: 11 << 20, Rule: faultproxy.Rule{Method: "PUT", Match: isPart, Count: 2, Kind: faultproxy.Error}},
		},
		List: faultproxy.Rule{Method: "GET", Path: "/faults", Match: func(r *http.Request) bool {
			return r.URL.Query().Has("list-type")
		}, Count: 2, Kind: faultproxy.Error},
		SaysAttempts: true,
		CutIsEOF:     true,
	})
}
