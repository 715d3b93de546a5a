package gc

import (
	"context"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/mem"
)

// Run deletes what is not live, only past the grace period (a store that
// keeps no times has every object young then), and nothing with DryRun.
func TestRunSweepsWhatIsNotLive(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	var ids []hashing.ID
	for _, b := range []string{"live", "garbage", "more garbage"} {
		id := hashing.Sum([]byte(b))
		if err := store.Put(ctx, s, id, []byte(b)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	live := reach.Set{ids[0]: {}}
	targets := []Target{{Name: "remote", Store: s}}
	run := func(opt Options) StoreResult {
		t.Helper()
		res, err := Run(ctx, opt, live, 0, targets)
		if err != nil {
			t.Fatal(err)
		}
		if res.Referenced != 1 || len(res.Stores) != 1 {
			t.Fatalf("result %+v", res)
		}
		return res.Stores[0]
	}
	has := func(id hashing.ID) bool {
		ok, err := store.Has(ctx, s, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	if st := run(Options{Grace: time.Hour}); st.Kept != 1 || st.Young != 2 || st.Deleted != 0 || !has(ids[1]) {
		t.Fatalf("grace: %+v", st)
	}
	if st := run(Options{DryRun: true}); st.Deleted != 2 || st.BytesDeleted != int64(len("garbage")+len("more garbage")) || !has(ids[1]) || !has(ids[2]) {
		t.Fatalf("dry run: %+v", st)
	}
	if st := run(Options{}); st.Objects != 3 || st.Kept != 1 || st.Deleted != 2 || has(ids[1]) || has(ids[2]) || !has(ids[0]) {
		t.Fatalf("collect: %+v", st)
	}
}

func TestWant(t *testing.T) {
	if !(Options{}).Want("cache") || !(Options{Stores: []string{"local"}}).Want("local") || (Options{Stores: []string{"local"}}).Want("remote") {
		t.Fatal("Want")
	}
}
