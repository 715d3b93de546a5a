package s3

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

// request is one HTTP request a recorder saw.
type request struct{ method, path, rng string }

// recorder records the requests through a transport.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, request{req.Method, req.URL.Path, req.Header.Get("Range")})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// take returns the requests seen since the last call.
func (r *recorder) take() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	reqs := r.reqs
	r.reqs = nil
	return reqs
}

// recordAll makes stores opened from now on record their requests in rec.
func recordAll(t *testing.T) *recorder {
	rec := &recorder{}
	testHookTransport = func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec }
	t.Cleanup(func() { testHookTransport = nil })
	return rec
}

// packLimits sets packMax for the test.
func packLimits(t *testing.T, max int64) {
	old := packMax
	packMax = max
	t.Cleanup(func() { packMax = old })
}

func openAgain(t *testing.T, s *Store) *Store {
	t.Helper()
	s2, err := Open(t.Context(), s.url, s.opt)
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

func randomObjects(seed int64, count, size int) [][]byte {
	rng := rand.New(rand.NewSource(seed))
	objs := make([][]byte, count)
	for i := range objs {
		objs[i] = make([]byte, size)
		rng.Read(objs[i])
	}
	return objs
}

func commit(t *testing.T, s *Store, objs [][]byte) []hashing.ID {
	t.Helper()
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]hashing.ID, len(objs))
	for i, data := range objs {
		ids[i] = hashing.Sum(data)
		if added, err := b.Put(t.Context(), ids[i], data, hashing.ID{}); err != nil || !added {
			t.Fatalf("batch put %d: added %v, %v", i, added, err)
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return ids
}

// keys returns the keys under the store's prefix and sub.
func keys(t *testing.T, s *Store, sub string) []string {
	t.Helper()
	var out []string
	for obj := range s.client.ListObjectsIter(t.Context(), s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + sub, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		out = append(out, obj.Key)
	}
	return out
}

func readAll(t *testing.T, s *Store, id hashing.ID, off, length int64) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), id, off, length)
	if err != nil {
		t.Fatalf("get %s [%d,+%d): %v", id.Short(), off, length, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("get %s [%d,+%d): read: %v", id.Short(), off, length, err)
	}
	return b
}

// TestPackRangedGet: a packed chunk, or part of one, is read with one
// ranged GET of exactly its bytes of the pack, and Stat costs no request.
func TestPackRangedGet(t *testing.T) {
	rec := recordAll(t)
	s, _ := testStore(t, "s3://ranged/p", Options{})
	objs := randomObjects(1, 50, 10<<10)
	ids := commit(t, s, objs)
	r, ok := s.Packs.Lookup(ids[7])
	if !ok {
		t.Fatal("a committed object is not in the pack index")
	}
	e := r.Entry()
	packPath := "/" + s.bucket + "/" + s.packKey(r.P.Name, ".pack")
	for _, c := range []struct{ off, length int64 }{{0, -1}, {100, 1000}, {10<<10 - 1, 1}} {
		rec.take()
		got := readAll(t, s, ids[7], c.off, c.length)
		want := objs[7][c.off:]
		if c.length >= 0 {
			want = want[:c.length]
		}
		if !bytes.Equal(got, want) {
			t.Errorf("get [%d,+%d) of a packed object: %d bytes, not the object's", c.off, c.length, len(got))
		}
		end := int64(len(objs[7]))
		if c.length >= 0 {
			end = c.off + c.length
		}
		wantReq := request{"GET", packPath, fmt.Sprintf("bytes=%d-%d", e.Offset+c.off, e.Offset+end-1)}
		if reqs := rec.take(); len(reqs) != 1 || reqs[0] != wantReq {
			t.Errorf("get [%d,+%d): requests %v, want one %v", c.off, c.length, reqs, wantReq)
		}
	}
	if info, err := s.Stat(t.Context(), ids[3]); err != nil || info.Size != 10<<10 || info.Modified.IsZero() {
		t.Errorf("stat of a packed object: %+v, %v", info, err)
	}
	if got, err := s.Get(t.Context(), ids[3], 10<<10, 1); err == nil || errors.Is(err, store.ErrNotFound) {
		if got != nil {
			got.Close()
		}
		t.Errorf("get past the end of a packed object: %v, want a range error", err)
	}
	if reqs := rec.take(); len(reqs) != 0 {
		t.Errorf("stat and a bad range of packed objects made requests %v", reqs)
	}
}

// TestPackOtherProcess: a second Store sees packs the first committed,
// also after it had loaded the indexes (the miss reloads them).
func TestPackOtherProcess(t *testing.T) {
	s1, _ := testStore(t, "s3://other/p", Options{})
	s2 := openAgain(t, s1)
	a := randomObjects(2, 20, 3000)
	aIDs := commit(t, s1, a)
	for i, id := range aIDs {
		if got := readAll(t, s2, id, 0, -1); !bytes.Equal(got, a[i]) {
			t.Fatalf("second store reads object %d of the first's batch wrong", i)
		}
	}
	if !s2.Packs.Loaded() {
		t.Fatal("the second store has not loaded its indexes")
	}
	b := randomObjects(3, 20, 3000)
	bIDs := commit(t, s1, b)
	if info, err := s2.Stat(t.Context(), bIDs[0]); err != nil || info.Size != 3000 {
		t.Errorf("second store stats a newer pack's object: %+v, %v", info, err)
	}
	if got := readAll(t, s2, bIDs[5], 10, 20); !bytes.Equal(got, b[5][10:30]) {
		t.Error("second store reads a newer pack's object wrong")
	}
	c := randomObjects(4, 5, 3000)
	cIDs := commit(t, s1, c)
	missing := hashing.Sum([]byte("missing"))
	has, err := s2.HasMany(t.Context(), append([]hashing.ID{missing, aIDs[0], bIDs[1]}, cIDs...))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append([]hashing.ID{aIDs[0], bIDs[1]}, cIDs...) {
		if !has[id] {
			t.Errorf("HasMany misses packed object %s", id.Short())
		}
	}
	if has[missing] || len(has) != 3+len(cIDs) {
		t.Errorf("HasMany: %d answers, missing object reported %v", len(has), has[missing])
	}
	_, err = s2.Stat(t.Context(), missing)
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), missing.Short()) {
		t.Errorf("stat of a missing object: %v", err)
	}
}

// TestPackDamagedIndex: a damaged index makes List fail naming it; other
// packs and loose objects stay readable.
func TestPackDamagedIndex(t *testing.T) {
	s1, _ := testStore(t, "s3://damaged/p", Options{})
	a := randomObjects(5, 10, 2000)
	aIDs := commit(t, s1, a)
	b := randomObjects(6, 10, 2000)
	bIDs := commit(t, s1, b)
	loose := []byte("a loose object")
	if err := store.Put(t.Context(), s1, hashing.Sum(loose), loose); err != nil {
		t.Fatal(err)
	}
	r, _ := s1.Packs.Lookup(aIDs[0])
	key := s1.packKey(r.P.Name, ".idx")
	idx, err := s1.getAll(t.Context(), key, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	idx[30] ^= 1
	if err := s1.putBytes(t.Context(), key, idx); err != nil {
		t.Fatal(err)
	}

	s2 := openAgain(t, s1)
	err = s2.List(t.Context(), func(store.Info) error { return nil })
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("list with a damaged index: %v; want an error naming %s", err, key)
	}
	for i, id := range bIDs {
		if got := readAll(t, s2, id, 0, -1); !bytes.Equal(got, b[i]) {
			t.Errorf("object %d of an intact pack: wrong bytes", i)
		}
	}
	if got := readAll(t, s2, hashing.Sum(loose), 0, -1); !bytes.Equal(got, loose) {
		t.Error("loose object: wrong bytes")
	}
	if _, err := s2.Stat(t.Context(), aIDs[1]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat of an object of the damaged pack: %v, want not found", err)
	}
	if err := s2.DeleteMany(t.Context(), bIDs[:1]); err == nil || !strings.Contains(err.Error(), key) {
		t.Errorf("DeleteMany with a damaged index: %v; want a refusal naming %s", err, key)
	}
}

// TestPackDeleteMany: deleting some objects of a pack rewrites it; the
// rest stay readable, for this Store and a fresh one; deleting all leaves
// no key behind.
func TestPackDeleteMany(t *testing.T) {
	s, _ := testStore(t, "s3://deletes/p", Options{})
	objs := randomObjects(7, 12, 5000)
	objs = append(objs, nil) // an empty object
	ids := commit(t, s, objs)
	oldPack := keys(t, s, packDir)
	del := map[int]bool{0: true, 4: true, 5: true, 11: true}
	var gone []hashing.ID
	for i := range del {
		gone = append(gone, ids[i])
	}
	if err := s.DeleteMany(t.Context(), append(gone, hashing.Sum([]byte("never stored")))); err != nil {
		t.Fatal(err)
	}
	newPack := keys(t, s, packDir)
	if len(newPack) != 2 || len(oldPack) != 2 || newPack[0] == oldPack[0] {
		t.Errorf("pack keys before %v, after %v; want a new pack and index in place of the old", oldPack, newPack)
	}
	for _, st := range []*Store{s, openAgain(t, s)} {
		listed := map[hashing.ID]int64{}
		if err := st.List(t.Context(), func(i store.Info) error { listed[i.ID] = i.Size; return nil }); err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			_, err := st.Stat(t.Context(), id)
			if del[i] {
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("stat of deleted object %d: %v", i, err)
				}
				if _, ok := listed[id]; ok {
					t.Errorf("deleted object %d listed", i)
				}
				continue
			}
			if got := readAll(t, st, id, 0, -1); !bytes.Equal(got, objs[i]) {
				t.Errorf("kept object %d: wrong bytes", i)
			}
			if listed[id] != int64(len(objs[i])) {
				t.Errorf("kept object %d listed with size %d", i, listed[id])
			}
		}
		if len(listed) != len(ids)-len(del) {
			t.Errorf("listed %d objects, want %d", len(listed), len(ids)-len(del))
		}
	}
	if err := s.DeleteMany(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	if left := keys(t, s, ""); len(left) != 0 {
		t.Errorf("keys left after deleting every object: %v", left)
	}
}

// TestPackRequests: a batch of 2,000 small objects costs a handful of
// requests, not one per object, with one pack or with several uploaded
// while the Puts go on.
func TestPackRequests(t *testing.T) {
	rec := recordAll(t)
	s, _ := testStore(t, "s3://requests/p", Options{})
	total := 0
	for k, c := range []struct {
		name    string
		packMax int64
	}{{"one pack", packMax}, {"1 MiB packs", 1 << 20}} {
		perPack := int((c.packMax - 8) / (4 << 10))
		packs := (2000 + perPack - 1) / perPack
		total += packs
		t.Run(c.name, func(t *testing.T) {
			packLimits(t, c.packMax)
			objs := randomObjects(int64(10+k), 2000, 4<<10)
			rec.take()
			commit(t, s, objs)
			puts := 0
			reqs := rec.take()
			for _, r := range reqs {
				if r.method == "PUT" {
					puts++
				}
			}
			t.Logf("%s: %d requests, %d PUTs for 2,000 objects", c.name, len(reqs), puts)
			if puts != 2*packs {
				t.Errorf("%d PUTs for 2,000 objects in %d packs, want %d (pack and index each)", puts, packs, 2*packs)
			}
			// Per pack: its PUT, the HEAD that checks it before its index
			// is written, the index PUT, and for one finished before
			// Commit a HEAD that checks it is still there; plus the
			// start-up listings.
			if len(reqs) > 4*packs+4 {
				t.Errorf("%d requests for 2,000 objects in %d packs", len(reqs), packs)
			}
			for i, data := range objs[:5] {
				if got := readAll(t, s, hashing.Sum(data), 0, -1); !bytes.Equal(got, data) {
					t.Errorf("object %d: wrong bytes", i)
				}
			}
		})
	}
	if n := len(keys(t, s, "")); n != 2*total {
		t.Errorf("%d keys under the prefix, want %d", n, 2*total)
	}
}

// TestPackAbort: Abort removes the temp files and any pack object without
// an index (but for an upload it cancelled that lands after all: Sweep's);
// the packs the batch finished, indexed as they were, stay whole and
// readable (another process may already rely on them).
func TestPackAbort(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	packLimits(t, 64<<10)
	s, _ := testStore(t, "s3://abort/p", Options{})
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	objs := randomObjects(8, 100, 4<<10)
	for i, data := range objs {
		if _, err := b.Put(t.Context(), hashing.Sum(data), data, hashing.ID{}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(keys(t, s, packDir)) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("no pack uploaded in the background")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("%d temp files with a name while the batch writes: a killed process would leave them", len(ents))
	}
	if err := b.Abort(); err != nil {
		t.Fatal(err)
	}
	// An upload that Abort cancelled as it ended may still land on the
	// server after Abort removed it: debris that Sweep removes.
	time.Sleep(500 * time.Millisecond)
	d, err := s.Sweep(t.Context(), time.Now().Add(time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	left := keys(t, s, "")
	for _, k := range left {
		name, ok := strings.CutSuffix(k, ".pack")
		if !ok && !strings.HasSuffix(k, ".idx") {
			t.Errorf("key %s left after abort", k)
		}
		if ok && !slices.Contains(left, name+".idx") {
			t.Errorf("pack %s without an index left after abort", k)
		}
	}
	other := openAgain(t, s)
	kept := 0
	for _, data := range objs {
		if _, err := other.Stat(t.Context(), hashing.Sum(data)); err == nil {
			kept++
			if got := readAll(t, other, hashing.Sum(data), 0, -1); !bytes.Equal(got, data) {
				t.Fatal("object of a finished pack unreadable after abort")
			}
		}
	}
	t.Logf("%d keys and %d of %d objects left by the aborted batch; swept %+v", len(left), kept, len(objs), d)
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("%d temp files left after abort", len(ents))
	}
	if err := b.Commit(t.Context()); err == nil {
		t.Error("commit after abort succeeded")
	}
}

// A pack a long batch finished early, then taken for garbage by a gc
// elsewhere (index and pack removed), fails the Commit: no Git commit may
// rely on it.
func TestPackVanishedBeforeCommit(t *testing.T) {
	packLimits(t, 64<<10)
	s, _ := testStore(t, "s3://vanished/p", Options{})
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	objs := randomObjects(9, 100, 4<<10)
	for i, data := range objs {
		if _, err := b.Put(t.Context(), hashing.Sum(data), data, hashing.ID{}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	var idx string
	for deadline := time.Now().Add(10 * time.Second); idx == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no pack indexed in the background")
		}
		for _, k := range keys(t, s, packDir) {
			if strings.HasSuffix(k, ".idx") {
				idx = k
				break
			}
		}
	}
	for _, k := range []string{idx, strings.TrimSuffix(idx, ".idx") + ".pack"} {
		if err := s.client.RemoveObject(t.Context(), s.bucket, k, minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(t.Context()); err == nil {
		t.Fatal("commit succeeded although one of its packs is gone")
	}
	other := openAgain(t, s)
	for _, data := range objs {
		id := hashing.Sum(data)
		if _, err := other.Stat(t.Context(), id); err == nil {
			if _, err := store.ReadAll(t.Context(), other, id); err != nil {
				t.Fatalf("object %s listed but unreadable: %v", id.Short(), err)
			}
		}
	}
}

// failIndexPuts fails every PUT of a pack index before it reaches the
// server, while on.
type failIndexPuts struct {
	next http.RoundTripper
	on   atomic.Bool
	hits atomic.Int64
}

func (f *failIndexPuts) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.on.Load() && req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, ".idx") {
		f.hits.Add(1)
		return nil, errors.New("injected: index upload refused")
	}
	return f.next.RoundTrip(req)
}

// TestPackIndexPutFails: when a pack's index cannot be stored, Commit
// fails, the pack stays where it is (the server may hold the index after
// all, and only gc removes indexless packs, once they are old), its
// objects are not readable through a new handle, and committing them again
// later works.
func TestPackIndexPutFails(t *testing.T) {
	packLimits(t, 64<<10)
	fail := &failIndexPuts{}
	testHookTransport = func(rt http.RoundTripper) http.RoundTripper { fail.next = rt; return fail }
	t.Cleanup(func() { testHookTransport = nil })
	s, _ := testStore(t, "s3://idxfail/p", Options{Retries: 2, RetryTime: 5 * time.Second})
	objs := randomObjects(11, 40, 4<<10)
	fail.on.Store(true)
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, data := range objs {
		if _, err := b.Put(t.Context(), hashing.Sum(data), data, hashing.ID{}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if err := b.Commit(t.Context()); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("commit with every index PUT failing: %v", err)
	}
	if fail.hits.Load() == 0 {
		t.Fatal("no index PUT was attempted")
	}
	fail.on.Store(false)
	var packs, idxs int
	for _, k := range keys(t, s, packDir) {
		switch {
		case strings.HasSuffix(k, ".pack"):
			packs++
		case strings.HasSuffix(k, ".idx"):
			idxs++
		}
	}
	if packs == 0 || idxs != 0 {
		t.Fatalf("after the failed commit: %d packs, %d indexes; want the packs kept, no index", packs, idxs)
	}
	other := openAgain(t, s)
	for _, data := range objs {
		if _, err := other.Stat(t.Context(), hashing.Sum(data)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("object of an unindexed pack: Stat = %v, want ErrNotFound", err)
		}
	}
	ids := commit(t, other, objs)
	third := openAgain(t, s)
	for i, id := range ids {
		if got := readAll(t, third, id, 0, -1); !bytes.Equal(got, objs[i]) {
			t.Fatalf("object %d after the second commit: %d bytes, not the %d put", i, len(got), len(objs[i]))
		}
	}
}

// TestPackZstd: objects that compress are packed zstd-compressed (the pack
// is smaller than their bytes), the others raw; every object, and any
// range of it, reads back exactly through a new handle, Stat and List give
// raw sizes, and a DeleteMany rewrite keeps compressed neighbours readable.
func TestPackZstd(t *testing.T) {
	s, _ := testStore(t, "s3://zstd/p", Options{})
	var objs [][]byte
	for i := range 8 {
		line := fmt.Sprintf("station %d, temperature %d.%d, humidity %d\n", i, 10+i, i*7%10, 40+i)
		objs = append(objs, bytes.Repeat([]byte(line), 2000+300*i)) // compresses
	}
	objs = append(objs, randomObjects(13, 4, 20000)...) // does not
	objs = append(objs, []byte("tiny"))
	ids := commit(t, s, objs)
	var raw int64
	for _, o := range objs {
		raw += int64(len(o))
	}
	var packBytes int64
	for obj := range s.client.ListObjectsIter(t.Context(), s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + packDir, Recursive: true}) {
		if strings.HasSuffix(obj.Key, ".pack") {
			packBytes += obj.Size
		}
	}
	if packBytes == 0 || packBytes > raw/2 {
		t.Fatalf("%d bytes of objects (%d of them random) in %d bytes of packs; want compression", raw, 4*20000, packBytes)
	}
	other := openAgain(t, s)
	if err := other.Packs.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		r, ok := other.Packs.Lookup(id)
		if !ok {
			t.Fatalf("object %d not packed", i)
		}
		wantZstd := i < 8
		if got := r.Entry().Encoding == packidx.Zstd; got != wantZstd {
			t.Errorf("object %d stored %s", i, r.Entry().Encoding)
		}
		if got := readAll(t, other, id, 0, -1); !bytes.Equal(got, objs[i]) {
			t.Fatalf("object %d: %d bytes back, not its %d", i, len(got), len(objs[i]))
		}
		if n := int64(len(objs[i])); n > 10 {
			if got := readAll(t, other, id, n/3, n/4); !bytes.Equal(got, objs[i][n/3:n/3+n/4]) {
				t.Fatalf("object %d, range [%d,+%d): wrong bytes", i, n/3, n/4)
			}
		}
		if info, err := other.Stat(t.Context(), id); err != nil || info.Size != int64(len(objs[i])) {
			t.Fatalf("stat of object %d: %+v, %v", i, info, err)
		}
	}
	if err := other.DeleteMany(t.Context(), []hashing.ID{ids[1], ids[9]}); err != nil {
		t.Fatal(err)
	}
	third := openAgain(t, s)
	for i, id := range ids {
		if i == 1 || i == 9 {
			continue
		}
		if got := readAll(t, third, id, 0, -1); !bytes.Equal(got, objs[i]) {
			t.Fatalf("after DeleteMany, object %d: wrong bytes", i)
		}
	}
}
