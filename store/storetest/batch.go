package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// Footprint returns the bytes a store keeps at rest, all files included.
type Footprint func(t *testing.T, s store.Store) int64

// RunBatch runs the suite for stores that implement store.Batcher,
// store.BulkRemover and store.Sweeper (on top of Run, which they pass as
// well). open is as
// for Run. footprint, when not nil, lets the suite check sizes at rest:
// that an object put twice is stored once, that an object put with a like
// hint differing by a small edit costs a small fraction of its size, that
// delta chains are bounded (at least one whole copy every 16 versions),
// that Abort leaves nothing and that deleting every object frees all space.
func RunBatch(t *testing.T, open func(t *testing.T) store.Store, footprint Footprint) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Store, Footprint)
	}{
		{"BatchRoundTrip", testBatchRoundTrip},
		{"BatchAbort", testBatchAbort},
		{"BatchDuplicates", testBatchDuplicates},
		{"BatchConcurrent", testBatchConcurrent},
		{"BatchDelta", testBatchDelta},
		{"BatchChainDepth", testBatchChainDepth},
		{"BatchDeleteMany", testBatchDeleteMany},
		{"SweepKeepsObjects", testSweepKeepsObjects},
		{"SweepAbandonedBatch", testSweepAbandonedBatch},
		{"SweepSparesYoung", testSweepSparesYoung},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t), footprint) })
	}
}

// item is one object of a batch, with its like hint.
type item struct {
	data []byte
	like hashing.ID
}

// batchPut puts items through one batch and commits it.
func batchPut(t *testing.T, s store.Store, items ...item) {
	t.Helper()
	b := startBatch(t, s)
	for _, it := range items {
		if _, err := b.Put(t.Context(), hashing.Sum(it.data), it.data, it.like); err != nil {
			t.Fatalf("batch put %d bytes: %v", len(it.data), err)
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func startBatch(t *testing.T, s store.Store) store.Batch {
	t.Helper()
	bs, ok := s.(store.Batcher)
	if !ok {
		t.Fatalf("%T does not implement store.Batcher", s)
	}
	b, err := bs.Batch(t.Context())
	if err != nil {
		t.Fatalf("start batch: %v", err)
	}
	return b
}

func deleteMany(t *testing.T, s store.Store, ids ...hashing.ID) {
	t.Helper()
	br, ok := s.(store.BulkRemover)
	if !ok {
		t.Fatalf("%T does not implement store.BulkRemover", s)
	}
	if err := br.DeleteMany(t.Context(), ids); err != nil {
		t.Fatalf("delete %d objects: %v", len(ids), err)
	}
}

// wantObject fails unless the store holds exactly data.
func wantObject(t *testing.T, s store.Store, what string, data []byte) {
	t.Helper()
	id := hashing.Sum(data)
	got, err := store.ReadAll(t.Context(), s, id)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("%s: ReadAll %s (%d bytes): %d bytes, %v", what, id.Short(), len(data), len(got), err)
		return
	}
	if info, err := s.Stat(t.Context(), id); err != nil || info.Size != int64(len(data)) {
		t.Errorf("%s: stat %s: %+v, %v; want size %d", what, id.Short(), info, err, len(data))
	}
}

// edit returns a copy of data with n bytes from off replaced.
func edit(data []byte, off, n int, seed byte) []byte {
	out := bytes.Clone(data)
	for i := off; i < off+n && i < len(out); i++ {
		out[i] = byte(i)*7 + seed
	}
	return out
}

// text returns n bytes of compressible text.
func text(seed, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "row %d of table %d: value=%d flag=%v\n", i, seed, i*i%977, i%3 == 0)
	}
	return b.Bytes()[:n]
}

func testBatchRoundTrip(t *testing.T, s store.Store, _ Footprint) {
	var objs [][]byte
	for _, n := range []int{0, 1, 100, 4093, 40 << 10, 17 << 20} {
		data, _ := object(int64(n)+7, n)
		objs = append(objs, data)
	}
	objs = append(objs, text(1, 40<<10), text(2, 1<<20), make([]byte, 300<<10))
	b := startBatch(t, s)
	want := map[hashing.ID]int64{}
	var kept [][]byte
	for _, data := range objs {
		id := hashing.Sum(data)
		kept = append(kept, bytes.Clone(data))
		want[id] = int64(len(data))
		if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil {
			t.Fatalf("batch put %d bytes: %v", len(data), err)
		}
		for i := range data { // the store must not keep the caller's buffer
			data[i] ^= 0xff
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, data := range kept {
		wantObject(t, s, "after commit", data)
	}
	wantListing(t, s, want)

	// Ranges of a compressed object.
	data := kept[len(kept)-2]
	id := hashing.Sum(data)
	for _, r := range [][2]int64{{0, -1}, {1000, 500}, {1 << 19, -1}, {1<<20 - 1, 1}, {1 << 20, 0}} {
		want := data[r[0]:]
		if r[1] >= 0 {
			want = want[:r[1]]
		}
		if got, err := get(t, s, id, r[0], r[1]); err != nil || !bytes.Equal(got, want) {
			t.Errorf("get(off %d, length %d) of a batched 1 MiB object: %d bytes, %v; want %d bytes",
				r[0], r[1], len(got), err, len(want))
		}
	}
	for _, r := range [][2]int64{{1<<20 + 1, -1}, {0, 1<<20 + 1}, {-1, 5}} {
		got, err := get(t, s, id, r[0], r[1])
		if err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("get(off %d, length %d) of a batched 1 MiB object: %d bytes, %v; want a range error",
				r[0], r[1], len(got), err)
		}
	}
}

func testBatchAbort(t *testing.T, s store.Store, footprint Footprint) {
	a, aID := object(10, 5000)
	put(t, s, a)
	var before int64
	if footprint != nil {
		before = footprint(t, s)
	}
	b := startBatch(t, s)
	var ids []hashing.ID
	for i := 0; i < 5; i++ {
		data, id := object(int64(20+i), 30000)
		ids = append(ids, id)
		if _, err := b.Put(t.Context(), id, data, aID); err != nil {
			t.Fatalf("batch put: %v", err)
		}
	}
	if err := b.Abort(); err != nil {
		t.Fatalf("abort: %v", err)
	}
	for _, id := range ids {
		_, err := s.Stat(t.Context(), id)
		wantNotFound(t, "stat after abort", id, err)
	}
	wantListing(t, s, map[hashing.ID]int64{aID: 5000})
	if footprint != nil {
		if after := footprint(t, s); after != before {
			t.Errorf("footprint %d bytes after an aborted batch, %d before", after, before)
		}
	}
	// The store still takes batches.
	c, _ := object(30, 3000)
	batchPut(t, s, item{data: c})
	wantObject(t, s, "batch after an aborted one", c)
}

func testBatchDuplicates(t *testing.T, s store.Store, footprint Footprint) {
	a, aID := object(40, 64<<10)
	b, bID := object(41, 64<<10)
	c, cID := object(42, 64<<10)
	put(t, s, a)
	batchPut(t, s, item{data: b})
	var before int64
	if footprint != nil {
		before = footprint(t, s)
	}
	bt := startBatch(t, s)
	for i, data := range [][]byte{a, b, c, bytes.Clone(c), b} {
		added, err := bt.Put(t.Context(), hashing.Sum(data), data, hashing.ID{})
		if err != nil {
			t.Fatalf("batch put %d: %v", i, err)
		}
		if want := i == 2; added != want { // only the first c is new
			t.Errorf("batch put %d (of a, b, c, c, b; a and b stored before): added = %v, want %v", i, added, want)
		}
	}
	if err := bt.Commit(t.Context()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, data := range [][]byte{a, b, c} {
		wantObject(t, s, "after a batch of duplicates", data)
	}
	wantListing(t, s, map[hashing.ID]int64{aID: 64 << 10, bID: 64 << 10, cID: 64 << 10})
	if footprint != nil {
		if grew := footprint(t, s) - before; grew < 64<<10 || grew > 64<<10+8<<10 {
			t.Errorf("a batch of one new 64 KiB object and duplicates grew the store by %d bytes", grew)
		}
	}
}

func testBatchConcurrent(t *testing.T, s store.Store, _ Footprint) {
	const workers, own, shared = 8, 25, 6
	b := startBatch(t, s)
	want := map[hashing.ID]int64{}
	var all [][]byte
	for i := 0; i < shared; i++ {
		data, id := object(int64(500+i), 10000+i)
		all = append(all, data)
		want[id] = int64(len(data))
	}
	mine := make([][][]byte, workers)
	for w := range mine {
		for i := 0; i < own; i++ {
			data, id := object(int64(1000+w*own+i), 1000+w*2000+i*37)
			if i%3 == 0 {
				data = text(w*own+i, len(data))
				id = hashing.Sum(data)
			}
			mine[w] = append(mine[w], data)
			all = append(all, data)
			want[id] = int64(len(data))
		}
	}
	g, ctx := errgroup.WithContext(t.Context())
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			for i, data := range append(mine[w], all[:shared]...) {
				var like hashing.ID
				if i > 0 {
					like = hashing.Sum(all[i%shared])
				}
				if _, err := b.Put(ctx, hashing.Sum(data), data, like); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		_ = b.Abort()
		t.Fatalf("concurrent batch puts: %v", err)
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, data := range all {
		wantObject(t, s, "after concurrent puts", data)
	}
	wantListing(t, s, want)
}

func testBatchDelta(t *testing.T, s store.Store, footprint Footprint) {
	for _, n := range []int{40 << 10, 1 << 20} {
		v1, v1ID := object(int64(n), n)
		batchPut(t, s, item{data: v1})
		var before int64
		if footprint != nil {
			before = footprint(t, s)
		}
		v2 := edit(v1, n/3, 64, 1)
		batchPut(t, s, item{data: v2, like: v1ID})
		wantObject(t, s, fmt.Sprintf("%d-byte delta", n), v2)
		wantObject(t, s, fmt.Sprintf("%d-byte delta's base", n), v1)
		if got, err := get(t, s, hashing.Sum(v2), int64(n/3-10), 100); err != nil || !bytes.Equal(got, v2[n/3-10:n/3+90]) {
			t.Errorf("get a range of a %d-byte delta: %d bytes, %v", n, len(got), err)
		}
		if footprint != nil {
			grew := footprint(t, s) - before
			t.Logf("a %d-byte object with a 64-byte edit, put like its previous version, grew the store by %d bytes", n, grew)
			if grew > int64(n/16) {
				t.Errorf("a %d-byte object with a 64-byte edit, put like its previous version, grew the store by %d bytes, want < %d",
					n, grew, n/16)
			}
		}
	}
	// Hints that cannot be used: a missing object, the object itself, a
	// loose object, an unrelated one.
	base, baseID := object(60, 20000)
	put(t, s, base)
	missing := hashing.Sum([]byte("never stored"))
	items := []item{
		{edit(base, 100, 10, 2), missing},
		{edit(base, 200, 10, 3), baseID},
		{edit(base, 300, 10, 4), hashing.Sum(base)},
		{text(5, 30000), baseID},
	}
	items = append(items, item{edit(base, 400, 10, 5), hashing.Sum(items[1].data)})
	self := edit(base, 500, 10, 6)
	items = append(items, item{self, hashing.Sum(self)})
	batchPut(t, s, items...)
	for _, it := range items {
		wantObject(t, s, "with a like hint", it.data)
	}
}

func testBatchChainDepth(t *testing.T, s store.Store, footprint Footprint) {
	const versions, size = 34, 64 << 10
	v, id := object(70, size)
	vs := [][]byte{v}
	batchPut(t, s, item{data: v})
	var before int64
	if footprint != nil {
		before = footprint(t, s)
	}
	for i := 1; i < versions; i++ {
		next := edit(v, (i*997)%(size-100), 50, byte(i))
		batchPut(t, s, item{data: next, like: id})
		v, id = next, hashing.Sum(next)
		vs = append(vs, v)
	}
	for i, v := range vs {
		wantObject(t, s, fmt.Sprintf("version %d of a delta chain", i), v)
	}
	if footprint != nil {
		grew := footprint(t, s) - before
		t.Logf("%d versions of a %d-byte object, each put like the one before: %d bytes after the first", versions, size, grew)
		if grew < 2*size || grew > 8*size {
			t.Errorf("%d versions of a %d-byte object, each put like the one before, grew the store by %d bytes; "+
				"want between 2 and 8 whole copies (chains bounded, deltas used)", versions-1, size, grew)
		}
	}
}

func testBatchDeleteMany(t *testing.T, s store.Store, footprint Footprint) {
	ctx := t.Context()
	b, bID := object(80, 64<<10)
	o1, o1ID := object(81, 30000)
	o2, o2ID := object(82, 30001)
	l, lID := object(83, 50000)
	put(t, s, l)
	batchPut(t, s, item{data: b}, item{data: o1}, item{data: o2})
	d1 := edit(b, 1000, 40, 1)
	d2 := edit(d1, 2000, 40, 2)
	e := edit(l, 3000, 40, 3)
	o3, o3ID := object(84, 20000)
	batchPut(t, s, item{data: d1, like: bID}, item{data: o3})
	batchPut(t, s, item{data: d2, like: hashing.Sum(d1)}, item{data: e, like: lID})
	d1ID, d2ID, eID := hashing.Sum(d1), hashing.Sum(d2), hashing.Sum(e)
	sizes := map[hashing.ID]int64{bID: 64 << 10, o1ID: 30000, o2ID: 30001, lID: 50000,
		d1ID: 64 << 10, d2ID: 64 << 10, eID: 50000, o3ID: 20000}
	want := func(ids ...hashing.ID) map[hashing.ID]int64 {
		m := map[hashing.ID]int64{}
		for _, id := range ids {
			m[id] = sizes[id]
		}
		return m
	}
	wantListing(t, s, want(bID, o1ID, o2ID, lID, d1ID, d2ID, eID, o3ID))

	// Bases, packed and loose, and a missing object.
	deleteMany(t, s, bID, lID, hashing.Sum([]byte("never stored")))
	for _, id := range []hashing.ID{bID, lID} {
		_, err := s.Stat(ctx, id)
		wantNotFound(t, "stat after DeleteMany", id, err)
		_, err = get(t, s, id, 0, -1)
		wantNotFound(t, "get after DeleteMany", id, err)
	}
	for _, data := range [][]byte{d1, d2, e, o1, o2, o3} {
		wantObject(t, s, "after deleting bases", data)
	}
	wantListing(t, s, want(o1ID, o2ID, d1ID, d2ID, eID, o3ID))

	// The middle of a chain, and some objects of a pack.
	deleteMany(t, s, d1ID, o1ID)
	for _, data := range [][]byte{d2, o2, e, o3} {
		wantObject(t, s, "after deleting some objects of a pack", data)
	}
	wantListing(t, s, want(o2ID, d2ID, eID, o3ID))

	// Put back a deleted object.
	batchPut(t, s, item{data: b}, item{data: edit(d2, 5, 5, 9), like: d2ID})
	wantObject(t, s, "put again after DeleteMany", b)
	sizes[hashing.Sum(edit(d2, 5, 5, 9))] = 64 << 10
	wantListing(t, s, want(o2ID, d2ID, eID, o3ID, bID, hashing.Sum(edit(d2, 5, 5, 9))))

	// Everything, the last object with Delete.
	deleteMany(t, s, d2ID, eID, o3ID, bID, hashing.Sum(edit(d2, 5, 5, 9)))
	wantObject(t, s, "the last object", o2)
	if err := s.Delete(ctx, o2ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantListing(t, s, want())
	deleteMany(t, s)
	if footprint != nil {
		if n := footprint(t, s); n != 0 {
			t.Errorf("%d bytes left after deleting every object", n)
		}
	}
}
