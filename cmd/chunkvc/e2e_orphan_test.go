package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/miniotest"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/s3"
)

// gcDebris mirrors gc --json with the debris counts.
type gcDebris struct {
	Stores []struct {
		Store       string `json:"store"`
		Deleted     int    `json:"deleted"`
		Debris      int    `json:"debris"`
		DebrisBytes int64  `json:"debris_bytes"`
	} `json:"stores"`
}

// minioObjects maps the keys under prefix in the bucket of a MinIO server's
// data folder to the bytes their folders hold. A single-drive MinIO keeps
// each object as a folder named by its key; an upload not yet complete is
// not there (its parts wait under .minio.sys/multipart).
func minioObjects(t *testing.T, srv *miniotest.Server, bucket, prefix string) map[string]int64 {
	t.Helper()
	root := filepath.Join(srv.Dir, bucket, filepath.FromSlash(prefix))
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != "xl.meta" {
			return nil
		}
		obj := filepath.Dir(p)
		key, _ := filepath.Rel(root, obj)
		var n int64
		filepath.WalkDir(obj, func(q string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				if fi, err := e.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		out[filepath.ToSlash(key)] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// packObjects splits minioObjects' packs into those with an index and those
// without, with the bytes of each set.
func packObjects(objs map[string]int64) (indexed, orphans map[string]int64) {
	indexed, orphans = map[string]int64{}, map[string]int64{}
	for k, n := range objs {
		name, ok := strings.CutSuffix(k, ".pack")
		if !ok || !strings.HasPrefix(k, "packs/") {
			continue
		}
		if _, has := objs[name+".idx"]; has {
			indexed[k] = n
		} else {
			orphans[k] = n
		}
	}
	return indexed, orphans
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// settledTraffic returns the bytes MinIO received once the count stops
// moving: a request cut short by a kill is counted when the server gives
// up on it.
func settledTraffic(t *testing.T, srv *miniotest.Server) int64 {
	t.Helper()
	last := int64(-1)
	for range 50 {
		rx, _, err := srv.Traffic()
		if err != nil {
			t.Fatal(err)
		}
		if rx == last {
			return rx
		}
		last = rx
		time.Sleep(300 * time.Millisecond)
	}
	return last
}

// multipartDebris counts the files MinIO holds for uploads never completed.
func multipartDebris(srv *miniotest.Server) int {
	n := 0
	filepath.WalkDir(filepath.Join(srv.Dir, ".minio.sys", "multipart"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// Issue 25, defect 5, on MinIO: a commit SIGKILLed while it uploads leaves
// no pack data that gc --grace 0s cannot see, and a retried commit does not
// upload again the packs the killed one completed.
func TestKilledCommitToS3LeavesNothingGCCannotSee(t *testing.T) {
	srv := miniotest.Start(t)
	r := newRunner(t)
	r.env = append(r.env, srv.Env()...)
	const bucket, prefix = "chunkvc-test", "killed"
	r.cv("init", "--store", "s3://"+bucket+"/"+prefix)
	r.cv("track", "*.bin")
	v0 := randomBytes(300000, 1)
	r.write("small.bin", v0)
	r.cv("commit", "-q", "-m", "v0")
	base := minioObjects(t, srv, bucket, prefix)
	data := randomBytes(192<<20, 2) // three 64 MiB packs
	r.write("big.bin", data)

	// readyAfter: packs the commit stored since before are there with
	// their index, at least min bytes of them, or (min 0: without indexes
	// as packs complete) two such packs have been there for a second
	// without one.
	var atKill map[string]int64
	readyAfter := func(before map[string]int64, min int64) func() bool {
		var orphansSince time.Time
		return func() bool {
			objs := minioObjects(t, srv, bucket, prefix)
			idx, orphans := packObjects(objs)
			var newIdx int64
			newOrphans := 0
			for k, n := range idx {
				if _, old := before[k]; !old {
					newIdx += n
				}
			}
			for k := range orphans {
				if _, old := before[k]; !old {
					newOrphans++
				}
			}
			if newOrphans < 2 {
				orphansSince = time.Time{}
			} else if orphansSince.IsZero() {
				orphansSince = time.Now()
			}
			if newIdx > 0 && newIdx >= min || min == 0 && !orphansSince.IsZero() && time.Since(orphansSince) > time.Second {
				atKill = objs
				return true
			}
			return false
		}
	}
	start := time.Now()
	if !r.killWhen(t, readyAfter(base, 0), "commit", "-q", "-m", "v1") {
		t.Fatal("the commit finished before it could be killed: the test proves nothing")
	}
	after := minioObjects(t, srv, bucket, prefix)
	_, orphans := packObjects(after)
	for k, n := range after {
		if _, old := base[k]; !old {
			_, was := atKill[k]
			t.Logf("after the kill: %s %d bytes (there at the kill: %v)", k, n, was)
		}
	}
	t.Logf("%v: killed with %d bytes stored (%d before); %d bytes in packs without an index, %d multipart files",
		time.Since(start), sum(atKill), sum(base), sum(orphans), multipartDebris(srv))

	var g gcDebris
	r.jsonOf(&g, "gc", "--grace", "0s")
	left := minioObjects(t, srv, bucket, prefix)
	for k, n := range left {
		if _, old := base[k]; !old && strings.HasPrefix(k, "packs/") {
			t.Errorf("after gc --grace 0s, %s (%d bytes) of the killed commit is still stored", k, n)
		}
	}
	if n := multipartDebris(srv); n != 0 {
		t.Errorf("after gc --grace 0s, MinIO holds %d files of uploads never completed", n)
	}
	t.Logf("%v: gc: %+v", time.Since(start), g.Stores)
	if got := r.cv("cat", "HEAD:small.bin"); got != string(v0) {
		t.Fatal("v0 does not restore after gc")
	}

	// Killed again once a 64 MiB pack of big.bin is indexed (the first
	// pack indexed may be a small one: killed then, the retry has nothing
	// to reuse); the retry reuses the packs the killed commit completed.
	rx0 := settledTraffic(t, srv)
	if !r.killWhen(t, readyAfter(minioObjects(t, srv, bucket, prefix), 32<<20), "commit", "-q", "-m", "v1") {
		t.Fatal("the second commit finished before it could be killed")
	}
	rx1 := settledTraffic(t, srv)
	var c commitResult
	r.jsonOf(&c, "commit", "-q", "-m", "v1")
	rx2 := settledTraffic(t, srv)
	t.Logf("%v: killed commit sent %d bytes to MinIO; the retry %d (commit reports %d uploaded) of a %d-byte file",
		time.Since(start), rx1-rx0, rx2-rx1, c.BytesUploaded, len(data))
	if rx2-rx1 > int64(len(data))-32<<20 {
		t.Errorf("the retry sent %d bytes of a %d-byte file: the packs the killed commit completed were uploaded again",
			rx2-rx1, len(data))
	}
	// Every chunk of the retried commit reads back whole from MinIO (in
	// parallel: a checkout of 192 MiB from loopback MinIO takes minutes).
	var l struct {
		Chunks []struct {
			Size int64  `json:"size"`
			Hash string `json:"hash"`
		} `json:"chunks"`
	}
	r.jsonOf(&l, "ls-chunks", "big.bin")
	var want []store.Sized
	var total int64
	for _, c := range l.Chunks {
		id, err := hashing.ParseID(strings.TrimPrefix(c.Hash, "blake3:"))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, store.Sized{ID: id, Size: c.Size})
		total += c.Size
	}
	srv.Setenv(t)
	st, err := s3.Open(t.Context(), "s3://"+bucket+"/"+prefix, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyMany(t.Context(), st, want, true); err != nil || total != int64(len(data)) {
		t.Fatalf("chunks of the retried commit: %v (%d of %d bytes listed)", err, total, len(data))
	}
	t.Logf("%v: every chunk verified", time.Since(start))
	r.jsonOf(&g, "gc", "--grace", "0s")
	t.Logf("%v: gc", time.Since(start))
	if res := r.run(binary, "fsck", "--remote"); res.code != 0 {
		t.Fatalf("fsck --remote after gc: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if got := r.cv("cat", "HEAD~1:small.bin"); !bytes.Equal([]byte(got), v0) {
		t.Fatal("v0 lost")
	}
}

// tmpPackBytes sums the batch temp packs in a local store's tmp/.
func tmpPackBytes(root string) (files int, n int64) {
	m, _ := filepath.Glob(filepath.Join(root, "tmp", "pack-*.tmp"))
	for _, p := range m {
		if fi, err := os.Stat(p); err == nil {
			files++
			n += fi.Size()
		}
	}
	return files, n
}

// unindexedPacks counts the packs of a local store without an index.
func unindexedPacks(root string) int {
	m, _ := filepath.Glob(filepath.Join(root, "packs", "pack-*.pack"))
	n := 0
	for _, p := range m {
		if _, err := os.Stat(strings.TrimSuffix(p, ".pack") + ".idx"); err != nil {
			n++
		}
	}
	return n
}

// Issue 25, defect 5, on a local store: a commit SIGKILLed while it writes
// its pack leaves a temp pack that gc --grace 0s removes and counts; the
// retried commit lands whole.
func TestKilledCommitToLocalStoreLeavesNothingGCCannotSee(t *testing.T) {
	r := newRunner(t)
	storeDir := filepath.Join(t.TempDir(), "store")
	r.cv("init", "--store", storeDir)
	r.cv("track", "*.bin")
	v0 := randomBytes(300000, 1)
	r.write("small.bin", v0)
	r.cv("commit", "-q", "-m", "v0")
	data := randomBytes(96<<20, 3)
	r.write("big.bin", data)
	var atKill int64
	killed := r.killWhen(t, func() bool {
		_, n := tmpPackBytes(storeDir)
		atKill = n
		return n > 16<<20
	}, "commit", "-q", "-m", "v1")
	if !killed {
		t.Fatal("the commit finished before it could be killed: the test proves nothing")
	}
	files, n := tmpPackBytes(storeDir)
	t.Logf("killed with %d bytes in the temp pack; left %d temp packs, %d bytes, and %d packs without an index",
		atKill, files, n, unindexedPacks(storeDir))
	var g gcDebris
	r.jsonOf(&g, "gc", "--grace", "0s")
	if files, n := tmpPackBytes(storeDir); files != 0 || unindexedPacks(storeDir) != 0 {
		t.Errorf("after gc --grace 0s: %d temp packs (%d bytes) and %d packs without an index left", files, n, unindexedPacks(storeDir))
	}
	if st := g.Stores[0]; st.Debris == 0 || st.DebrisBytes < atKill {
		t.Errorf("gc --grace 0s reported %+v; want the killed commit's temp pack (%d bytes or more) counted", st, atKill)
	}
	r.cv("commit", "-q", "-m", "v1")
	if got := r.cv("cat", "HEAD:big.bin"); got != string(data) {
		t.Fatal("the retried commit does not restore")
	}
	if got := r.cv("cat", "HEAD:small.bin"); got != string(v0) {
		t.Fatal("v0 lost")
	}
}
