package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/local"
)

type gcResult struct {
	Stores []struct {
		Objects, Kept, Young, Deleted int
	} `json:"stores"`
}

func storeObjects(t *testing.T, r *runner) int {
	t.Helper()
	n := 0
	if err := openStore(t, r.path(".git/chunkvc/store")).List(context.Background(), func(store.Info) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func openStore(t *testing.T, root string) *local.Store {
	t.Helper()
	s, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// damageObject flips a byte in the stored bytes of object hash in the local
// store at root, wherever it is kept (loose file or pack).
func damageObject(t *testing.T, root, hash string) {
	t.Helper()
	id, err := hashing.ParseID(hash)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := openStore(t, root).Locate(id)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(loc.Path, 0o644)
	f, err := os.OpenFile(loc.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	at := loc.Off + loc.Len/2
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// loseObject deletes object hash from the local store at root, reporting
// whether it was there.
func loseObject(t *testing.T, root, hash string) bool {
	t.Helper()
	id, err := hashing.ParseID(hash)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, root)
	if _, err := s.Locate(id); err != nil {
		return false
	}
	if err := s.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return true
}

// gc deletes exactly the chunks no ref or recent reflog entry needs.
func TestGCDeletesOnlyGarbage(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	v1 := randomBytes(800000, 1)
	r.write("a.bin", v1)
	r.cv("commit", "-m", "v1")
	r.write("a.bin", randomBytes(800000, 2))
	r.cv("commit", "-m", "v2 (to be thrown away)")
	r.git("reset", "-q", "--hard", "HEAD~1")
	r.cv("checkout", "--force")
	before := storeObjects(t, r)

	var g gcResult
	r.jsonOf(&g, "gc", "--grace", "1h")
	if g.Stores[0].Deleted != 0 || storeObjects(t, r) != before {
		t.Fatalf("gc within the grace period deleted something: %+v", g)
	}
	r.jsonOf(&g, "gc", "--grace", "0s", "--dry-run")
	if g.Stores[0].Deleted == 0 || storeObjects(t, r) != before {
		t.Fatalf("dry run: %+v, objects %d → %d", g, before, storeObjects(t, r))
	}
	r.jsonOf(&g, "gc", "--grace", "0s")
	after := storeObjects(t, r)
	if g.Stores[0].Deleted == 0 || after != before-g.Stores[0].Deleted {
		t.Fatalf("gc: %+v, objects %d → %d", g, before, after)
	}
	if res := r.run(binary, "fsck", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck after gc: %s", res.stdout)
	}
	os.Remove(r.path("a.bin"))
	r.cv("checkout")
	if !bytes.Equal(r.read("a.bin"), v1) {
		t.Fatal("v1 lost by gc")
	}
}

// gc running while commits happen loses nothing: the lock serialises them
// within a repository, and every commit restores exactly.
func TestGCConcurrentWithCommits(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(300000, 0))
	r.cv("commit", "-m", "v0")
	versions := map[string][]byte{}
	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	var gcErr error
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cmd := exec.Command(binary, "gc", "--grace", "0s", "--json")
			cmd.Dir, cmd.Env = r.dir, r.env
			if out, err := cmd.CombinedOutput(); err != nil {
				gcErr = fmt.Errorf("gc: %v\n%s", err, out)
				return
			}
		}
	}()
	for i := 1; i <= 6; i++ {
		data := randomBytes(300000, int64(i))
		r.write("a.bin", data)
		var c commitResult
		r.jsonOf(&c, "commit", "-m", fmt.Sprintf("v%d", i))
		versions[c.Commit] = data
	}
	close(stop)
	wg.Wait()
	if gcErr != nil {
		t.Fatal(gcErr)
	}
	if res := r.run(binary, "fsck", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck: %s", res.stdout)
	}
	for c, want := range versions {
		if got := r.cv("cat", c+":a.bin"); got != string(want) {
			t.Fatalf("commit %.8s does not restore its bytes", c)
		}
	}
	var g gcResult
	if err := json.Unmarshal([]byte(r.cv("gc", "--grace", "0s", "--json")), &g); err != nil {
		t.Fatal(err)
	}
}

// fsck --repair replaces a corrupt chunk of the configured store with the
// intact copy the embedded store still holds.
func TestFsckRepairFromAnotherStore(t *testing.T) {
	r := newRunner(t)
	shared := t.TempDir()
	r.cv("init", "--store", shared)
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(400000, 1))
	r.cv("commit", "--offline", "-m", "v1")
	bare := t.TempDir()
	r.git("init", "-q", "--bare", bare)
	r.git("remote", "add", "origin", bare)
	r.cv("push")
	var ls lsChunks
	r.jsonOf(&ls, "ls-chunks", "a.bin")
	damageObject(t, shared, ls.Chunks[0].Hash)
	if res := r.run(binary, "fsck", "--verify=full", "--remote"); res.code != exitIntegrity {
		t.Fatalf("corrupt remote chunk not found: exit %d", res.code)
	}
	var out struct {
		OK       bool `json:"ok"`
		Repaired int  `json:"repaired"`
	}
	res := r.run(binary, "fsck", "--verify=full", "--remote", "--repair", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || res.code != 0 || !out.OK || out.Repaired != 1 {
		t.Fatalf("repair: exit %d %+v %v\n%s", res.code, out, err, res.stderr)
	}
	if res := r.run(binary, "fsck", "--verify=full", "--remote"); res.code != 0 {
		t.Fatalf("after repair: exit %d", res.code)
	}
}
