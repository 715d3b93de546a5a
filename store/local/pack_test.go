package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/local"
	"github.com/chunkvc/chunkvc/store/storetest"
)

// footprint is the size of every file under the store's root.
func footprint(t *testing.T, s store.Store) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(s.(interface{ Root() string }).Root(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		n += fi.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBatchConformance(t *testing.T) {
	storetest.RunBatch(t, func(t *testing.T) store.Store { return open(t) }, footprint)
}

// packed describes where an object sits in a pack.
type packed struct {
	packidx.Entry
	pack, index string
}

// packsOf decodes every index of the store.
func packsOf(t *testing.T, s *local.Store) map[hashing.ID]packed {
	t.Helper()
	idxs, err := filepath.Glob(filepath.Join(s.Root(), local.PackDir, "pack-*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[hashing.ID]packed{}
	for _, p := range idxs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := packidx.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, e := range ix.Entries {
			out[e.ID] = packed{e, strings.TrimSuffix(p, ".idx") + ".pack", p}
		}
	}
	return out
}

// batch puts objects through one batch, each with the like hint that
// follows it (or none).
func batch(t *testing.T, s store.Store, objs ...[]byte) []hashing.ID {
	t.Helper()
	b, err := s.(store.Batcher).Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []hashing.ID
	for _, data := range objs {
		id := hashing.Sum(data)
		ids = append(ids, id)
		if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	return ids
}

func batchLike(t *testing.T, s store.Store, data []byte, like hashing.ID) hashing.ID {
	t.Helper()
	b, err := s.(store.Batcher).Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	id := hashing.Sum(data)
	if _, err := b.Put(t.Context(), id, data, like); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	return id
}

func reopen(t *testing.T, s *local.Store) *local.Store {
	t.Helper()
	s2, err := local.Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

func text(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "feature %d: name=road-%d lanes=%d\n", i, i%311, i%4)
	}
	return b.Bytes()[:n]
}

func rewritable(t *testing.T, p string) {
	t.Helper()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEncodings(t *testing.T) {
	s := open(t)
	random, _ := object(1, 40<<10)
	txt := text(40 << 10)
	tiny := []byte("tiny")
	ids := batch(t, s, random, txt, tiny)
	v2 := bytes.Clone(random)
	copy(v2[20000:], "a small edit")
	d := batchLike(t, s, v2, ids[0])
	big, _ := object(2, 1<<20)
	bigID := batch(t, s, big)[0]
	big2 := bytes.Clone(big)
	copy(big2[700000:], "another small edit")
	d2 := batchLike(t, s, big2, bigID)
	got := packsOf(t, s)
	for _, c := range []struct {
		what string
		id   hashing.ID
		enc  packidx.Encoding
	}{
		{"random bytes", ids[0], packidx.Raw},
		{"text", ids[1], packidx.Zstd},
		{"a tiny object", ids[2], packidx.Raw},
		{"a 40 KiB edit", d, packidx.Delta},
		{"a 1 MiB edit", d2, packidx.Delta},
	} {
		if e := got[c.id]; e.Encoding != c.enc {
			t.Errorf("%s stored as %v, want %v", c.what, e.Encoding, c.enc)
		}
	}
	if e := got[ids[1]]; e.Stored > e.Size/3 {
		t.Errorf("40 KiB of text stored in %d bytes", e.Stored)
	}
	for _, id := range []hashing.ID{d, d2} {
		e := got[id]
		t.Logf("delta of a %d-byte object with a small edit: %d bytes", e.Size, e.Stored)
		if e.Stored > 1024 || e.Depth != 1 {
			t.Errorf("delta of a %d-byte object with a small edit: %d bytes, depth %d; want < 1 KiB, depth 1", e.Size, e.Stored, e.Depth)
		}
	}
	for _, data := range [][]byte{random, txt, tiny, v2, big, big2} {
		if b, err := store.ReadAll(t.Context(), s, hashing.Sum(data)); err != nil || !bytes.Equal(b, data) {
			t.Errorf("ReadAll: %d bytes, %v", len(b), err)
		}
	}
}

func TestDeltaDepthBound(t *testing.T) {
	s := open(t)
	v, _ := object(3, 30000)
	id := batch(t, s, v)[0]
	for i := 0; i < 2*local.MaxDepth+3; i++ {
		v = bytes.Clone(v)
		v[i*100] ^= 0xff
		id = batchLike(t, s, v, id)
	}
	deepest := 0
	for _, e := range packsOf(t, s) {
		deepest = max(deepest, int(e.Depth))
	}
	if deepest != local.MaxDepth {
		t.Errorf("deepest delta chain %d, want %d", deepest, local.MaxDepth)
	}
	if b, err := store.ReadAll(t.Context(), s, id); err != nil || !bytes.Equal(b, v) {
		t.Errorf("ReadAll the last version: %d bytes, %v", len(b), err)
	}
}

func TestBatchRollsOver(t *testing.T) {
	local.SetPackLimits(t, 100<<10, 64<<10)
	s := open(t)
	var objs [][]byte
	for i := 0; i < 10; i++ {
		data, _ := object(int64(100+i), 30000)
		objs = append(objs, data)
	}
	big, bigID := object(99, 70<<10)
	batch(t, s, append(objs, big)...)
	got := packsOf(t, s)
	packs := map[string]bool{}
	for _, e := range got {
		packs[e.pack] = true
	}
	if len(packs) < 3 {
		t.Errorf("10 objects of 30000 bytes in %d packs of at most 100 KiB", len(packs))
	}
	if _, ok := got[bigID]; ok {
		t.Errorf("an object above the pack limit was packed")
	}
	if _, err := os.Stat(objPath(s, bigID)); err != nil {
		t.Errorf("an object above the pack limit is not loose: %v", err)
	}
	for _, data := range append(objs, big) {
		if b, err := store.ReadAll(t.Context(), s, hashing.Sum(data)); err != nil || !bytes.Equal(b, data) {
			t.Errorf("ReadAll: %d bytes, %v", len(b), err)
		}
	}
}

func TestNoTempFilesAfterBatches(t *testing.T) {
	s := open(t)
	a, _ := object(5, 1000)
	batch(t, s, a)
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c, cID := object(6, 1000)
	if _, err := b.Put(t.Context(), cID, c, hashing.ID{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(t.Context()); err == nil {
		t.Error("commit after abort: no error")
	}
	left, _ := filepath.Glob(filepath.Join(s.Root(), local.TmpDir, "*"))
	puts, _ := filepath.Glob(filepath.Join(s.Root(), local.PackDir, ".*"))
	if len(left)+len(puts) != 0 {
		t.Errorf("temp files after a commit and an abort: %v %v", left, puts)
	}
	ents, _ := os.ReadDir(filepath.Join(s.Root(), local.PackDir))
	if len(ents) != 2 {
		t.Errorf("packs folder holds %d files, want one pack and its index", len(ents))
	}
	for _, e := range ents {
		wantReadOnly(t, filepath.Join(s.Root(), local.PackDir, e.Name()))
	}
}

func TestPutOfPackedObjectWritesNothing(t *testing.T) {
	s := open(t)
	a, aID := object(7, 5000)
	batch(t, s, a)
	put(t, s, a)
	if _, err := os.Stat(objPath(s, aID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Put of a packed object wrote a loose file: %v", err)
	}
	// And a batch skips loose objects.
	l, lID := object(8, 5000)
	put(t, s, l)
	batch(t, s, l)
	if _, ok := packsOf(t, s)[lID]; ok {
		t.Error("a batch packed an object the store holds loose")
	}
}

func TestDamagedIndex(t *testing.T) {
	for _, d := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"a flipped bit", func(b []byte) []byte { b[30] ^= 1; return b }},
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func(b []byte) []byte { return nil }},
	} {
		t.Run(d.name, func(t *testing.T) { testDamagedIndex(t, d.damage) })
	}
}

func testDamagedIndex(t *testing.T, damage func([]byte) []byte) {
	s := open(t)
	a := batch(t, s, text(3000), []byte("a2"))
	bData, _ := object(9, 20000)
	b := batch(t, s, bData)
	damaged := packsOf(t, s)[a[0]].index
	rewritable(t, damaged)
	raw, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(damaged, damage(raw), 0o444); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s)
	calls := 0
	err = s2.List(t.Context(), func(store.Info) error { calls++; return nil })
	if err == nil || !strings.Contains(err.Error(), damaged) {
		t.Errorf("List with a damaged index: %v, want an error naming %s", err, damaged)
	}
	if calls != 0 {
		t.Errorf("List with a damaged index reported %d objects first", calls)
	}
	if got, err := store.ReadAll(t.Context(), s2, b[0]); err != nil || !bytes.Equal(got, bData) {
		t.Errorf("object of another pack: %d bytes, %v", len(got), err)
	}
	// Not found, and it may be in the damaged pack: a damaged store.
	if _, err := s2.Stat(t.Context(), a[0]); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), damaged) {
		t.Errorf("stat of an object of the damaged pack: %v, want ErrNotFound and ErrCorrupt naming %s", err, damaged)
	}
	if _, err := s2.Get(t.Context(), a[0], 0, -1); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("get of an object of the damaged pack: %v, want ErrNotFound and ErrCorrupt", err)
	}
	if err := s2.DeleteMany(t.Context(), b); err == nil || !strings.Contains(err.Error(), damaged) {
		t.Errorf("DeleteMany with a damaged index: %v, want an error naming %s", err, damaged)
	}
	if got, err := store.ReadAll(t.Context(), s2, b[0]); err != nil || !bytes.Equal(got, bData) {
		t.Errorf("object after a refused DeleteMany: %d bytes, %v", len(got), err)
	}
}

// A pack whose index is gone cannot be read: an object missing from such
// a store is reported as possibly in it (ErrCorrupt besides ErrNotFound),
// until the index is back.
func TestPackWithoutIndex(t *testing.T) {
	s := open(t)
	a := batch(t, s, text(3000), []byte("a2"))
	idx := packsOf(t, s)[a[0]].index
	raw, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(t.Context(), hashing.Sum([]byte("never stored"))); !errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("stat of a missing object of a sound store: %v, want ErrNotFound alone", err)
	}
	if err := os.Remove(idx); err != nil {
		t.Fatal(err)
	}
	pack := strings.TrimSuffix(idx, ".idx") + ".pack"
	_, err = reopen(t, s).Stat(t.Context(), a[0])
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), pack+" has no index") {
		t.Errorf("stat of an object of a pack without index: %v, want ErrNotFound and ErrCorrupt naming %s", err, pack)
	}
	if err := os.WriteFile(idx, raw, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := reopen(t, s).Stat(t.Context(), hashing.Sum([]byte("never stored"))); errors.Is(err, store.ErrCorrupt) {
		t.Errorf("stat once the index is back: %v", err)
	}
}

func TestDamagedPack(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(b []byte, e packidx.Entry) []byte
	}{
		{"truncated", func(b []byte, e packidx.Entry) []byte { return b[:len(b)/2] }},
		{"extended", func(b []byte, e packidx.Entry) []byte { return append(b, 0) }},
		{"flipped", func(b []byte, e packidx.Entry) []byte { b[e.Offset+e.Stored/2] ^= 0x40; return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			random, _ := object(10, 50000)
			txt := text(200000)
			ids := batch(t, s, random, txt)
			edited := bytes.Clone(txt)
			copy(edited[1000:], "edited")
			d := batchLike(t, s, edited, ids[1])
			// In the second pack, a delta on the first: damage the first.
			e := packsOf(t, s)[ids[1]]
			rewritable(t, e.pack)
			b, err := os.ReadFile(e.pack)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e.pack, c.damage(b, e.Entry), 0o444); err != nil {
				t.Fatal(err)
			}
			for _, st := range []*local.Store{s, reopen(t, s)} {
				for _, id := range []hashing.ID{ids[1], d} {
					got, err := store.ReadAll(t.Context(), st, id)
					if err == nil || got != nil {
						t.Errorf("ReadAll of a compressed object in a damaged pack: %d bytes, %v", len(got), err)
					} else if !errors.Is(err, store.ErrCorrupt) {
						t.Errorf("ReadAll of a compressed object in a damaged pack: %v, want ErrCorrupt", err)
					}
				}
				if c.name != "flipped" {
					if _, err := store.ReadAll(t.Context(), st, ids[0]); err == nil {
						t.Error("ReadAll of a raw object in a truncated pack: no error")
					}
				}
			}
		})
	}
}

func TestSecondStoreSeesPacks(t *testing.T) {
	s := open(t)
	s2 := reopen(t, s)
	for i := 0; i < 30; i++ {
		data, id := object(int64(200+i), 1000+i)
		if _, err := s2.Stat(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("stat before the commit: %v", err)
		}
		batch(t, s, data)
		if info, err := s2.Stat(t.Context(), id); err != nil || info.Size != int64(len(data)) {
			t.Fatalf("commit %d: the other store's stat right after: %+v, %v", i, info, err)
		}
	}
	n := 0
	if err := s2.List(t.Context(), func(store.Info) error { n++; return nil }); err != nil || n != 30 {
		t.Errorf("the other store lists %d objects, %v; want 30", n, err)
	}
}

func TestPackVanishes(t *testing.T) {
	s := open(t)
	a, _ := object(11, 40000)
	txt := text(40000)
	c, cID := object(12, 40000)
	ids := batch(t, s, a, txt, c)
	s2 := reopen(t, s)
	for _, id := range ids {
		if _, err := s2.Stat(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	// A reader with the pack open keeps reading it.
	rc, err := s2.Get(t.Context(), ids[0], 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	before := packsOf(t, s)[ids[0]].pack
	if err := s.DeleteMany(t.Context(), []hashing.ID{cID}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(before); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the pack was not rewritten: %v", err)
	}
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, a) {
		t.Errorf("reading on from a rewritten pack: %d bytes, %v", len(got), err)
	}
	for _, data := range [][]byte{a, txt} {
		if got, err := store.ReadAll(t.Context(), s2, hashing.Sum(data)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("the other store reads an object of a rewritten pack: %d bytes, %v", len(got), err)
		}
	}
	if _, err := s2.Stat(t.Context(), cID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the other store stats a deleted object: %v", err)
	}
	n := 0
	if err := s2.List(t.Context(), func(store.Info) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("the other store lists %d objects, %v; want 2", n, err)
	}
	if err := s2.Touch(t.Context(), ids[1]); err != nil {
		t.Errorf("touch: %v", err)
	}
}

// TestBatchTouchesHeld: a batch's Put of an object the store holds, packed
// or loose, refreshes its age (a commit's reused chunks are spared by a gc
// that runs meanwhile) and does not add it.
func TestBatchTouchesHeld(t *testing.T) {
	s := open(t)
	a, aID := object(15, 4000)
	batch(t, s, a)
	l, lID := object(16, 3000)
	if err := store.Put(t.Context(), s, lID, l); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{packsOf(t, s)[aID].pack, objPath(s, lID)} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		id   hashing.ID
		data []byte
	}{{aID, a}, {lID, l}} {
		if info, err := s.Stat(t.Context(), o.id); err != nil || info.Modified.After(old.Add(time.Minute)) {
			t.Fatalf("stat of %s before the batch: %+v, %v", o.id.Short(), info, err)
		}
		if added, err := b.Put(t.Context(), o.id, o.data, hashing.ID{}); err != nil || added {
			t.Fatalf("batch Put of a held object: added %v, %v", added, err)
		}
		if info, err := s.Stat(t.Context(), o.id); err != nil || time.Since(info.Modified) > time.Minute {
			t.Errorf("stat of %s after a batch put it again: %+v, %v; want modified now", o.id.Short(), info, err)
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestTouchPacked(t *testing.T) {
	s := open(t)
	a, aID := object(13, 4000)
	batch(t, s, a)
	p := packsOf(t, s)[aID].pack
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(t.Context(), aID); err != nil || info.Modified.After(old.Add(time.Minute)) {
		t.Fatalf("stat of an object in an old pack: %+v, %v", info, err)
	}
	if err := s.Touch(t.Context(), aID); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(t.Context(), aID); err != nil || time.Since(info.Modified) > time.Minute {
		t.Errorf("stat after touch: %+v, %v; want modified now", info, err)
	}
	// A rewrite keeps the pack's age.
	b, _ := object(14, 4000)
	ids := batch(t, s, b, []byte("other"))
	p = packsOf(t, s)[ids[0]].pack
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMany(t.Context(), ids[1:]); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(t.Context(), ids[0]); err != nil || info.Modified.After(old.Add(time.Minute)) {
		t.Errorf("stat after the pack was rewritten: %+v, %v; want the old time", info, err)
	}
}

// TestSweepDebris: Sweep removes, and a dry run counts, the temp files and
// index-less packs a crash leaves that changed before its cutoff, and
// leaves younger ones, other files, packs and named objects alone. A pack
// renamed in after the cutoff is young even with an old modification time
// (a rewrite keeps its pack's time; its index comes just after).
func TestSweepDebris(t *testing.T) {
	s := open(t)
	a, _ := object(15, 4000)
	batch(t, s, a)
	loose, _ := object(16, 3000)
	if err := store.Put(t.Context(), s, hashing.Sum(loose), loose); err != nil {
		t.Fatal(err)
	}
	if err := s.PutNamed(t.Context(), "repos/x.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	mk := func(p string, age time.Time) string {
		if err := os.WriteFile(p, []byte("debris"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loc, err := s.Locate(hashing.Sum(loose))
	if err != nil {
		t.Fatal(err)
	}
	fan := filepath.Dir(loc.Path)
	gone := []string{
		mk(filepath.Join(s.Root(), local.TmpDir, "pack-1.tmp"), old),
		mk(filepath.Join(s.Root(), local.PackDir, ".put-1"), old),
		mk(filepath.Join(s.Root(), local.PackDir, "pack-"+strings.Repeat("ab", 32)+".pack"), old),
		mk(filepath.Join(fan, ".put-2"), old),
		mk(filepath.Join(s.Root(), local.NamedDir, "repos", ".put-3"), old),
	}
	time.Sleep(20 * time.Millisecond)
	cutoff := time.Now()
	time.Sleep(20 * time.Millisecond)
	kept := []string{
		mk(filepath.Join(s.Root(), local.TmpDir, "pack-2.tmp"), time.Now()),
		mk(filepath.Join(s.Root(), local.PackDir, "pack-"+strings.Repeat("cd", 32)+".pack"), old),
		mk(filepath.Join(s.Root(), local.PackDir, "notes.txt"), old),
	}
	want := store.Debris{Files: len(gone), Bytes: int64(len(gone) * len("debris"))}
	if d, err := s.Sweep(t.Context(), cutoff, true); err != nil || d != want {
		t.Fatalf("dry run: %+v, %v; want %+v", d, err, want)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("dry run removed %s: %v", p, err)
		}
	}
	if d, err := s.Sweep(t.Context(), cutoff, false); err != nil || d != want {
		t.Fatalf("sweep: %+v, %v; want %+v", d, err, want)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("debris %s not removed: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	for _, data := range [][]byte{a, loose} {
		if b, err := store.ReadAll(t.Context(), s, hashing.Sum(data)); err != nil || !bytes.Equal(b, data) {
			t.Errorf("object after a sweep: %v", err)
		}
	}
	if b, err := s.GetNamed(t.Context(), "repos/x.json"); err != nil || string(b) != "{}" {
		t.Errorf("named object after a sweep: %q, %v", b, err)
	}
}

// TestCoarseTimestamps: on a filesystem with coarse timestamps, a pack
// published just after another store read the packs folder may leave the
// folder's modification time as that store saw it. Resetting the time by
// hand plays that filesystem.
func TestCoarseTimestamps(t *testing.T) {
	for _, c := range []struct {
		name string
		at   func() time.Time
	}{
		{"fine", func() time.Time { return time.Now().Add(-10 * time.Millisecond) }},
		{"whole seconds", func() time.Time {
			for time.Since(time.Now().Truncate(time.Second)) > 500*time.Millisecond {
				time.Sleep(10 * time.Millisecond)
			}
			return time.Now().Truncate(time.Second)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			s2 := reopen(t, s)
			dir := filepath.Join(s.Root(), local.PackDir)
			a, aID := object(300, 100)
			b, bID := object(301, 100)
			batch(t, s, a)
			mod := c.at()
			if err := os.Chtimes(dir, mod, mod); err != nil {
				t.Fatal(err)
			}
			if _, err := s2.Stat(t.Context(), aID); err != nil {
				t.Fatalf("the other store's stat of the first pack's object: %v", err)
			}
			batch(t, s, b)
			if err := os.Chtimes(dir, mod, mod); err != nil { // the folder's time did not move
				t.Fatal(err)
			}
			if _, err := s2.Stat(t.Context(), bID); err != nil {
				t.Fatalf("the other store's stat of the second pack's object: %v", err)
			}
		})
	}
}

// TestConcurrentUse reads, batches and deletes at once on one store (run
// it with -race); kept objects must stay readable throughout.
func TestConcurrentUse(t *testing.T) {
	local.SetPackLimits(t, 200<<10, 16<<20)
	s := open(t)
	var keep, drop [][]byte
	for i := 0; i < 40; i++ {
		data, _ := object(int64(400+i), 20000+i)
		if i%2 == 0 {
			keep = append(keep, data)
		} else {
			drop = append(drop, data)
		}
	}
	batch(t, s, append(append([][]byte{}, keep...), drop...)...)
	// Deltas of kept objects on dropped ones.
	for i, d := range drop[:10] {
		v := bytes.Clone(d)
		v[i] ^= 0xff
		batchLike(t, s, v, hashing.Sum(d))
		keep = append(keep, v)
	}
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	for r := 0; r < 3; r++ {
		g.Go(func() error {
			for i := 0; gctx.Err() == nil; i++ {
				data := keep[(i*7+r)%len(keep)]
				got, err := store.ReadAll(gctx, s, hashing.Sum(data))
				if gctx.Err() != nil {
					return nil
				}
				if err != nil || !bytes.Equal(got, data) {
					return fmt.Errorf("read a kept object while deleting others: %d bytes, %w", len(got), err)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		for i := 0; gctx.Err() == nil; i++ {
			data, id := object(int64(1000+i), 5000)
			b, err := s.Batch(gctx)
			if err != nil && gctx.Err() != nil {
				return nil // the deletes are done: cancelled on purpose
			}
			if err != nil {
				return err
			}
			if _, err := b.Put(gctx, id, data, hashing.Sum(keep[i%len(keep)])); err != nil {
				_ = b.Abort()
				if gctx.Err() != nil {
					return nil // the deletes are done: cancelled on purpose
				}
				return err
			}
			if err := b.Commit(gctx); err != nil && gctx.Err() == nil {
				return err
			}
		}
		return nil
	})
	for _, d := range drop {
		if err := s.DeleteMany(t.Context(), []hashing.ID{hashing.Sum(d)}); err != nil {
			t.Error(err)
		}
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Error(err)
	}
	for _, data := range keep {
		if got, err := store.ReadAll(t.Context(), s, hashing.Sum(data)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("kept object after the deletes: %d bytes, %v", len(got), err)
		}
	}
}

// Many goroutines missing at once on a fresh Store: the one that loads the
// packs folder must not leave the others answering "not found" (they
// waited for the load, then saw an up-to-date folder and gave up).
func TestConcurrentFirstLookups(t *testing.T) {
	s := open(t)
	var objs [][]byte
	for i := 0; i < 64; i++ {
		data, _ := object(int64(900+i), 500+i)
		objs = append(objs, data)
	}
	ids := batch(t, s, objs...)
	old := time.Now().Add(-time.Minute) // a folder not changed lately: no re-read on every miss
	if err := os.Chtimes(filepath.Join(s.Root(), local.PackDir), old, old); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		s2 := reopen(t, s)
		var wg sync.WaitGroup
		var missing atomic.Int64
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s2.Stat(t.Context(), id); err != nil {
					missing.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := missing.Load(); n > 0 {
			t.Fatalf("round %d: %d of %d packed objects reported missing by a fresh store", round, n, len(ids))
		}
	}
}

// A rewrite that keeps every entry as it was (the only delta whose base
// goes is unreadable already, so it is kept as is) makes the same index,
// hence a pack of the same name: DeleteMany must not then remove it as the
// "old" pack, with every healthy object in it.
func TestRewriteToSameNameKeepsPack(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	x := text(20000)
	xID := hashing.Sum(x)
	if err := store.Put(ctx, s, xID, x); err != nil {
		t.Fatal(err)
	}
	y := bytes.Clone(x)
	copy(y[5000:], "CHANGED CHANGED")
	z := text(30000)[10000:]
	yID, zID := hashing.Sum(y), hashing.Sum(z)
	// In ID order, as a rewrite would write them: the rewrite of this pack
	// then reproduces its index byte for byte.
	items := []struct {
		id, like hashing.ID
		data     []byte
	}{{yID, xID, y}, {zID, hashing.ID{}, z}}
	if zID.String() < yID.String() {
		items[0], items[1] = items[1], items[0]
	}
	b, err := s.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, err := b.Put(ctx, it.id, it.data, it.like); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if loc, err := s.Locate(yID); err != nil || loc.Encoding != "delta" {
		t.Fatalf("y is not a delta against x: %+v, %v", loc, err)
	}
	// Bit rot in x: y, its delta, becomes unreadable.
	xl, err := s.Locate(xID)
	if err != nil {
		t.Fatal(err)
	}
	rewritable(t, xl.Path)
	if err := os.WriteFile(xl.Path, make([]byte, len(x)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMany(ctx, []hashing.ID{xID}); err != nil {
		t.Fatalf("delete x: %v", err)
	}
	for _, st := range []*local.Store{s, reopen(t, s)} {
		if _, err := store.ReadAll(ctx, st, zID); err != nil {
			t.Fatalf("healthy object z lost by DeleteMany of x: %v", err)
		}
	}
}

// Another process publishes a delta against an object while a DeleteMany
// of that object is under way (after it read the packs): DeleteMany must
// remove nothing, and a later one must re-encode the delta first.
func TestDeleteManyRacesNewDelta(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	other := reopen(t, s)
	x := text(40000)
	xID := batch(t, s, x)[0]
	y := bytes.Clone(x)
	copy(y[1000:], "an edit made by another clone")
	yID := hashing.Sum(y)
	local.SetHookBeforeRecheck(t, func() { batchLike(t, other, y, xID) })
	if err := s.DeleteMany(ctx, []hashing.ID{xID}); !errors.Is(err, local.ErrChanged) {
		t.Fatalf("DeleteMany while a delta against its object appeared: %v, want ErrChanged", err)
	}
	if loc, err := other.Locate(yID); err != nil || loc.Encoding != "delta" {
		t.Fatalf("y is not the delta the test needs: %+v, %v", loc, err)
	}
	for _, id := range []hashing.ID{xID, yID} {
		if _, err := store.ReadAll(ctx, reopen(t, s), id); err != nil {
			t.Fatalf("object %s unreadable after the refused DeleteMany: %v", id.Short(), err)
		}
	}
	local.SetHookBeforeRecheck(t, nil)
	if err := s.DeleteMany(ctx, []hashing.ID{xID}); err != nil {
		t.Fatalf("second DeleteMany: %v", err)
	}
	if got, err := store.ReadAll(ctx, reopen(t, s), yID); err != nil || !bytes.Equal(got, y) {
		t.Fatalf("y after its base was deleted: %v", err)
	}
	if _, err := s.Stat(ctx, xID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("x still there after the second DeleteMany: %v", err)
	}
}

// Repack folds many small packs, deltas among them, into one: every
// object reads back, from this Store and a fresh one, and is listed once.
func TestRepackMergesSmallPacks(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	base := text(30000)
	prev := batch(t, s, base)[0]
	want := map[hashing.ID][]byte{prev: base}
	for i := 0; i < 40; i++ {
		v := bytes.Clone(base)
		copy(v[100*i:], fmt.Sprintf("version %d", i))
		id := batchLike(t, s, v, prev) // a delta against the previous version, in another pack
		want[id] = v
		prev = id
		other, _ := object(int64(5000+i), 3000)
		want[batch(t, s, other)[0]] = other
	}
	packFiles := func() int {
		idxs, err := filepath.Glob(filepath.Join(s.Root(), local.PackDir, "pack-*.idx"))
		if err != nil {
			t.Fatal(err)
		}
		return len(idxs)
	}
	before := packFiles()
	n, err := s.Repack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := packFiles()
	t.Logf("repack merged %d packs: %d → %d", n, before, after)
	if n < 32 || after > before-n+1 {
		t.Fatalf("repack merged %d packs, %d → %d", n, before, after)
	}
	for _, st := range []*local.Store{s, reopen(t, s)} {
		for id, data := range want {
			if got, err := store.ReadAll(ctx, st, id); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("object %s after repack: %v", id.Short(), err)
			}
		}
		listed := 0
		if err := st.List(ctx, func(store.Info) error { listed++; return nil }); err != nil || listed != len(want) {
			t.Fatalf("listed %d objects after repack, %v; want %d", listed, err, len(want))
		}
	}
	if n, err := s.Repack(ctx); err != nil || n != 0 {
		t.Errorf("second repack merged %d packs, %v; want none", n, err)
	}
}

// TestConfirmChecksPackLength: Confirm looks at each pack once, and a pack
// cut short is corrupt, not confirmed; a pack gone is not found.
func TestConfirmChecksPackLength(t *testing.T) {
	s := open(t)
	var want []store.Sized
	var objs [][]byte
	for i := range 5 {
		data, _ := object(int64(700+i), 5000)
		objs = append(objs, data)
	}
	for _, id := range batch(t, s, objs...) {
		want = append(want, store.Sized{ID: id, Size: 5000})
	}
	if err := s.Confirm(t.Context(), want); err != nil {
		t.Fatalf("Confirm of a fresh batch: %v", err)
	}
	var pack string
	for _, e := range packsOf(t, s) {
		pack = e.pack
	}
	if err := os.Chmod(pack, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(pack)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(pack, fi.Size()-1); err != nil {
		t.Fatal(err)
	}
	if err := s.Confirm(t.Context(), want); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Confirm with the pack cut by a byte: %v, want ErrCorrupt", err)
	}
	if err := os.Remove(pack); err != nil {
		t.Fatal(err)
	}
	if err := s.Confirm(t.Context(), want); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Confirm with the pack removed: %v, want ErrNotFound", err)
	}
}

// TestBatchPrefixCollision: two IDs that share their first 8 bytes are
// told apart (the batch finds packed objects by those 8 bytes, then checks
// the whole ID). The IDs are made up: Put trusts its caller's ID, and the
// batch is aborted.
func TestBatchPrefixCollision(t *testing.T) {
	s := open(t)
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	var a, c hashing.ID
	for i := range a {
		a[i], c[i] = byte(i+1), byte(i+1)
	}
	c[31] ^= 0xff
	data := bytes.Repeat([]byte("x"), 3000)
	for _, step := range []struct {
		id    hashing.ID
		added bool
	}{{a, true}, {c, true}, {a, false}, {c, false}} {
		added, err := b.Put(t.Context(), step.id, data, hashing.ID{})
		if err != nil || added != step.added {
			t.Errorf("Put %s…%x: added %v, %v; want %v", step.id.Short(), step.id[31], added, err, step.added)
		}
	}
}
