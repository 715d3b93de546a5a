package azure_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
)

func isBatch(r *http.Request) bool { return r.URL.Query().Get("comp") == "batch" }

// putLoose puts n loose objects and returns their IDs.
func putLoose(t *testing.T, s store.Store, seed int64, n int) []hashing.ID {
	t.Helper()
	var ids []hashing.ID
	for i := range n {
		data, id := object(seed+int64(i), 100+i)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// proxied opens a store at url on Azurite behind a fault proxy.
func proxied(t *testing.T, url string) (*faultproxy.Proxy, *azure.Store) {
	t.Helper()
	srv := startAzurite(t)
	p := faultproxy.Start(t, "http://"+srv.Addr, 1)
	t.Setenv("CHUNKVC_AZURE_ENDPOINT", p.URL+"/"+srv.Account)
	return p, open(t, url, azure.Options{CreateContainer: true})
}

// checkGone checks that s holds none of ids and lists nothing.
func checkGone(t *testing.T, s store.Store, ids []hashing.ID) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.Stat(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("stat %s after DeleteMany: %v, want not found", id.Short(), err)
		}
	}
	n := 0
	if err := s.List(t.Context(), func(store.Info) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("list after DeleteMany: %d objects, %v", n, err)
	}
}

// TestDeleteBatches: DeleteMany of 300 loose objects (and 5 missing ones)
// is two blob batch requests on Azurite, which takes them, not a DELETE
// per blob; a batch answered 503 once is retried.
func TestDeleteBatches(t *testing.T) {
	p, s := proxied(t, "az://deletes/batched")
	ids := putLoose(t, s, 1, 300)
	_, missing := object(9999, 10)
	batches := p.Add(faultproxy.Rule{Method: "POST", Match: isBatch, Count: 1, Kind: faultproxy.Error})
	deletes := p.Add(faultproxy.Rule{Method: "DELETE", Count: 1, Kind: faultproxy.Error})
	if err := s.DeleteMany(t.Context(), append(ids, missing, missing, missing, missing, missing)); err != nil {
		t.Fatal(err)
	}
	p.Clear()
	checkGone(t, s, ids)
	if batches.Matched() != 3 || deletes.Matched() != 0 {
		t.Errorf("DeleteMany of 305 blobs: %d batch requests (want 2 and a retry), %d DELETEs (want 0)",
			batches.Matched(), deletes.Matched())
	}
}

// TestDeleteNoBatches: a service that answers blob batches 501 gets one
// DELETE per blob, and is asked for a batch only once.
func TestDeleteNoBatches(t *testing.T) {
	p, s := proxied(t, "az://deletes/unbatched")
	ids := putLoose(t, s, 1, 20)
	batches := p.Add(faultproxy.Rule{Method: "POST", Match: isBatch, Kind: faultproxy.Error, Status: http.StatusNotImplemented, Code: "NotImplemented"})
	deletes := p.Add(faultproxy.Rule{Method: "DELETE", Count: 1, Kind: faultproxy.Error})
	for _, part := range [][]hashing.ID{ids[:10], ids[10:]} {
		if err := s.DeleteMany(t.Context(), part); err != nil {
			t.Fatal(err)
		}
	}
	p.Clear()
	checkGone(t, s, ids)
	if batches.Matched() != 1 || deletes.Matched() != 21 {
		t.Errorf("two DeleteMany of 10 blobs without batches: %d batch requests (want 1), %d DELETEs (want 20 and a retry)",
			batches.Matched(), deletes.Matched())
	}
}
