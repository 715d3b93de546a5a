package azure_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/internal/faultproxy/faultsuite"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
)

// TestFaults runs the fault suite against Azurite behind a fault proxy,
// staged blocks and HasMany's HEADs included.
func TestFaults(t *testing.T) {
	srv := startAzurite(t)
	p := faultproxy.Start(t, "http://"+srv.Addr, 10)
	t.Setenv("CHUNKVC_AZURE_ENDPOINT", p.URL+"/"+srv.Account)
	isBlock := func(r *http.Request) bool { return r.URL.Query().Get("comp") == "block" }
	isList := func(r *http.Request) bool { return r.URL.Query().Get("comp") == "list" }
	faultsuite.Run(t, faultsuite.Rig{
		Proxy: p,
		Open: func(t *testing.T, prefix string, o faultsuite.Tuning) store.Store {
			t.Helper()
			opt := azure.Options{CreateContainer: true, Retries: o.Retries, RetryTime: o.RetryTime, Timeout: o.Timeout}
			if o.Patient {
				opt.BlockSize = 1 << 20 // so a 3 MiB object is staged
			}
			s := open(t, "az://faults/"+prefix, opt)
			if !strings.HasPrefix(s.Endpoint(), p.URL) {
				t.Fatalf("store talks to %s, not the proxy %s", s.Endpoint(), p.URL)
			}
			return s
		},
		Transient: []faultsuite.Case{
			{Name: "503 on PUT", Size: 200 << 10, Rule: faultproxy.Rule{Method: "PUT", Count: 3, Kind: faultproxy.Error}},
			{Name: "500 on HEAD", Size: 1000, Rule: faultproxy.Rule{Method: "HEAD", Count: 3, Kind: faultproxy.Error, Status: 500}},
			{Name: "500 on GET", Size: 300 << 10, Rule: faultproxy.Rule{Method: "GET", Count: 3, Kind: faultproxy.Error, Status: 500}},
			{Name: "429 on PUT", Size: 1000, Rule: faultproxy.Rule{Method: "PUT", Count: 2, Kind: faultproxy.Error, Status: 429}},
			{Name: "reset before any", Size: 100 << 10, Rule: faultproxy.Rule{Count: 4, Kind: faultproxy.ResetBefore}},
			{Name: "reset after PUT", Size: 100 << 10, Rule: faultproxy.Rule{Method: "PUT", Count: 2, Kind: faultproxy.ResetAfter}},
			{Name: "reset after GET", Size: 100 << 10, Rule: faultproxy.Rule{Method: "GET", Count: 2, Kind: faultproxy.ResetAfter}},
			{Name: "half of all fail", Size: 64 << 10, Rule: faultproxy.Rule{Fraction: 0.5, Count: 6, Kind: faultproxy.Error}},
			{Name: "staged block 503", Size: 3 << 20, Rule: faultproxy.Rule{Method: "PUT", Match: isBlock, Count: 2, Kind: faultproxy.Error}},
			{Name: "staged block reset", Size: 3<<20 + 1, Rule: faultproxy.Rule{Method: "PUT", Match: isBlock, Count: 2, Kind: faultproxy.ResetAfter}},
		},
		List:         faultproxy.Rule{Method: "GET", Match: isList, Count: 2, Kind: faultproxy.Error},
		HasMany:      &faultproxy.Rule{Method: "HEAD", Fraction: 0.3, Count: 5, Kind: faultproxy.Error},
		SaysAttempts: true,
		CutIsEOF:     true,
	})
}
