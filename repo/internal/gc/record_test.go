package gc

import (
	"context"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store/mem"
)

// A record says which commits its gc expired: those before the cut that
// no kept ref names; the first gc that expired a commit is the one named.
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
	for _, c := range []struct {
		c    *gitdb.Commit
		want string
	}{{old, "20d"}, {kept, "2d"}, {young, "2d"}} {
		got := FindRecord(recs, c.c)
		if got == nil || got.Window != c.want {
			t.Errorf("commit %s: record %+v, want window %s", c.c.Hash, got, c.want)
		}
	}
	if FindRecord(recs[:1], young) != nil || FindRecord(recs[:1], kept) != nil {
		t.Error("the first gc expired a commit it kept or one within its window")
	}
}
