package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// listing maps every file under dir (slash path from dir) to a digest of
// its bytes: comparing two listings is `diff -r` that also fails on an
// extra or missing file, empty ones included.
func listing(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails unless got holds exactly the files of want, byte for byte.
func sameTree(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	var bad []string
	for p, w := range want {
		switch g, ok := got[p]; {
		case !ok:
			bad = append(bad, "missing "+p)
		case g != w:
			bad = append(bad, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, "extra "+p)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s: %d files wrong: %s", what, len(bad), strings.Join(bad[:min(len(bad), 10)], ", "))
	}
}

// copyTree copies dir to dst with cp -r (the test's work tree, never the
// repository's sources).
func copyTree(t testing.TB, dir, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r %s %s: %v\n%s", dir, dst, err, out)
	}
}

// storeRoots returns the topmost directories under dir (slash paths from
// base) with Zarr metadata at their root: dir itself when it is a store.
func storeRoots(t testing.TB, base, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		for _, meta := range []string{"zarr.json", ".zarray", ".zgroup"} {
			if _, err := os.Stat(filepath.Join(p, meta)); err == nil {
				rel, _ := filepath.Rel(base, p)
				out = append(out, filepath.ToSlash(rel))
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// statCache reads the stat cache file: status rewrites it when it hashes
// a store, and leaves it alone when the stamp alone says clean.
func statCache(t testing.TB, r *runner) []byte {
	t.Helper()
	b, err := os.ReadFile(r.path(".git/chunkvc/statcache"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every store of the shared corpus is committed as a dataset, removed,
// and checked out exactly: same files, same bytes, nothing extra; status
// then says clean without hashing a store.
func TestCheckoutDatasetCorpus(t *testing.T) {
	stores, err := filepath.Glob(filepath.Join(formattest.CorpusDir(t), "zarr", "*.zarr"))
	if err != nil || len(stores) == 0 {
		t.Fatalf("no zarr stores in the corpus (%v)", err)
	}
	r := newRunner(t)
	r.git("init", "-q")
	r.cv("init")
	want := map[string]map[string]string{}
	tracked := 0
	for _, s := range stores {
		name := filepath.Base(s)
		copyTree(t, s, r.path(name))
		want[name] = listing(t, s)
		for _, ds := range storeRoots(t, r.dir, r.path(name)) {
			r.cv("track", ds)
			tracked++
		}
	}
	if tracked < len(stores) {
		t.Fatalf("tracked %d stores of %d corpus directories", tracked, len(stores))
	}
	r.cv("commit", "-q", "-m", "corpus")
	for name := range want {
		if err := os.RemoveAll(r.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	r.cv("checkout")
	for name, w := range want {
		sameTree(t, name, w, listing(t, r.path(name)))
	}
	before := statCache(t, r)
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after checkout: %q", st)
	}
	if !bytes.Equal(before, statCache(t, r)) {
		t.Fatal("status after checkout hashed stores again (it rewrote the stat cache)")
	}
	// A second checkout writes nothing: every store is up to date.
	if out := r.cv("checkout"); strings.Contains(out, "wrote") {
		t.Fatalf("checkout of an up-to-date work tree wrote: %s", out)
	}
}
