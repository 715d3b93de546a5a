package gc

import (
	"context"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store/mem"
)

// Records come back oldest first, each once however many stores hold
// it, and a record's cut covers the commits before it that no kept ref
// names.
func TestRecordsFindTheExpiry(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	commit := func(hex string, d int) *gitdb.Commit {
		return &gitdb.Commit{Hash: gitdb.HashOf(hex), Committer: gitdb.Ident{When: day(d)}}
	}
	tip := "bb00000000000000000000000000000000000000"
	old, kept, young := commit("aa00000000000000000000000000000000000000", 1), commit(tip, 2), commit("cc00000000000000000000000000000000000000", 20)
	first := &Record{Date: day(25), Window: "20d", Cut: day(5), Kept: map[string]string{"refs/heads/main": tip}}
	second := &Record{Date: day(28), Window: "2d", Cut: day(26), Kept: map[string]string{}}
	for _, rec := range []*Record{second, first} {
		name, err := PutRecord(ctx, s, rec)
		if err != nil || name == "" {
			t.Fatalf("put: %q, %v", name, err)
		}
	}
	recs, err := ReadRecords(ctx, s, s) // one store twice: each record once
	if err != nil || len(recs) != 2 || recs[0].Window != "20d" {
		t.Fatalf("read: %d records, %v", len(recs), err)
	}
	// The first record's cut covers old only (kept is its kept tip);
	// the second's covers all three.
	for _, c := range []struct {
		c             *gitdb.Commit
		first, second bool
	}{{old, true, true}, {kept, false, true}, {young, false, true}} {
		if recs[0].Expires(c.c) != c.first || recs[1].Expires(c.c) != c.second {
			t.Errorf("commit %s: covered by the first %v, by the second %v; want %v, %v",
				c.c.Hash, recs[0].Expires(c.c), recs[1].Expires(c.c), c.first, c.second)
		}
	}
}
