package gitdb

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// gitIndexRepo makes a repository with git whose index holds what an index
// can: folders whose names sort around "/" (a, a-b, a.txt, a0), an
// executable, a symbolic link, a gitlink, a path added with intent and one
// marked skip-worktree.
func gitIndexRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q", "-b", "main")
	for name, data := range map[string]string{
		"a.txt": "one\n", "a/b": "two\n", "a/c/d": "three\n", "a-b": "four\n", "a0": "five\n",
		"deep/x/y/z.bin": "six\n", "run.sh": "#!/bin/sh\n", "later.txt": "later\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, dir, nil, "add", "a.txt", "a", "a-b", "a0", "deep", "run.sh", "link")
	blob := strings.TrimSpace(string(gitCLI(t, dir, nil, "hash-object", "a.txt")))
	gitCLI(t, dir, nil, "update-index", "--add", "--cacheinfo", "160000,"+blob+",sub")
	return dir
}

// goGitIndex reads dir's index with go-git.
func goGitIndex(t *testing.T, dir string) *index.Index {
	t.Helper()
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := g.r.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// TestSetIndexIsGits: the index chunkvc writes is go-git's encoding, and
// git reads every field of every entry back as it wrote them, in each
// version git writes (2; 3 once a path is added with intent or marked
// skip-worktree; 4 when asked).
func TestSetIndexIsGits(t *testing.T) {
	dir := gitIndexRepo(t)
	steps := []struct {
		name string
		git  []string
	}{
		{"version 2", nil},
		{"intent to add", []string{"add", "-N", "later.txt"}},
		{"skip-worktree", []string{"update-index", "--skip-worktree", "a0"}},
		{"version 4", []string{"update-index", "--index-version", "4"}},
	}
	for _, s := range steps {
		if s.git != nil {
			gitCLI(t, dir, nil, s.git...)
		}
		before := gitCLI(t, dir, nil, "ls-files", "--stage", "--debug", "-t")
		idx := goGitIndex(t, dir)
		var want bytes.Buffer
		if err := index.NewEncoder(&want).Encode(goGitIndex(t, dir)); err != nil {
			t.Fatal(err)
		}
		got, err := encodeIndex(idx)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%s (version %d): encodeIndex differs from go-git's encoder (%d bytes, want %d)", s.name, idx.Version, len(got), want.Len())
		}
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.setIndex(goGitIndex(t, dir)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if after := gitCLI(t, dir, nil, "ls-files", "--stage", "--debug", "-t"); !bytes.Equal(after, before) {
			t.Fatalf("%s: git reads the index back otherwise:\n%s\nwant\n%s", s.name, after, before)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: index.lock left behind: %v", s.name, err)
		}
	}
}

// TestSetIndexHonoursGitsLock: while a git command holds index.lock the
// index is not written, and the lock is not taken away from it.
func TestSetIndexHonoursGitsLock(t *testing.T) {
	dir := gitIndexRepo(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, ".git", "index")
	before, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".lock", []byte("git's"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := goGitIndex(t, dir)
	idx.Entries = idx.Entries[:1]
	err = g.setIndex(idx)
	if !errors.Is(err, ErrGitLocked) || !strings.Contains(err.Error(), "index.lock") {
		t.Fatalf("setIndex with index.lock held = %v, want an error naming it", err)
	}
	if after, _ := os.ReadFile(name); !bytes.Equal(after, before) {
		t.Fatal("the index was written while git held its lock")
	}
	if lock, _ := os.ReadFile(name + ".lock"); string(lock) != "git's" {
		t.Fatalf("index.lock now holds %q", lock)
	}
}

// TestIndexReadIsGoGits: the index chunkvc decodes itself is the one
// go-git's decoder makes, entry for entry, in versions 2 and 3 and with a
// name too long for its length field; an index with extensions (git's
// cache tree) or of version 4 is go-git's to read, and still reads.
func TestIndexReadIsGoGits(t *testing.T) {
	dir := gitIndexRepo(t)
	long := strings.Repeat("d/", 2100) + "f"
	blob := strings.TrimSpace(string(gitCLI(t, dir, nil, "hash-object", "a.txt")))
	gitCLI(t, dir, nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+long)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range [][]string{nil, {"add", "-N", "later.txt"}, {"write-tree"}, {"update-index", "--index-version", "4"}} {
		if step != nil {
			gitCLI(t, dir, nil, step...)
		}
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		want := goGitIndex(t, dir)
		got, err := g.index()
		if err != nil {
			t.Fatalf("after git %v: %v", step, err)
		}
		if !sameEntries(got.Entries, want.Entries) || got.Version != want.Version {
			t.Fatalf("after git %v: index read otherwise than go-git reads it", step)
		}
		if _, ok := decodeIndex(data); ok != (step == nil || step[0] == "add") {
			t.Fatalf("after git %v: decodeIndex ok = %v", step, ok)
		}
		if step == nil { // written by chunkvc: decoded here
			if err := g.setIndex(want); err != nil {
				t.Fatal(err)
			}
			data, _ = os.ReadFile(filepath.Join(dir, ".git", "index"))
			if idx, ok := decodeIndex(data); !ok || !sameEntries(idx.Entries, want.Entries) {
				t.Fatal("the index setIndex wrote does not decode to its entries")
			}
		}
	}
	var found bool
	for _, e := range goGitIndex(t, dir).Entries {
		found = found || e.Name == long
	}
	if !found {
		t.Fatal("the long name was lost")
	}
}

func sameEntries(a, b []*index.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := *a[i], *b[i]
		if !x.CreatedAt.Equal(y.CreatedAt) || !x.ModifiedAt.Equal(y.ModifiedAt) {
			return false
		}
		x.CreatedAt, x.ModifiedAt, y.CreatedAt, y.ModifiedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// FuzzDecodeIndex: whatever the bytes, an index decodeIndex accepts is
// the one go-git's decoder reads from them.
func FuzzDecodeIndex(f *testing.F) {
	seed := &index.Index{Version: 2}
	for i, name := range []string{"a", "a/b", strings.Repeat("x", 5000), "c"} {
		e := seed.Add(name)
		e.Size, e.Mode, e.Hash[0] = uint32(i), 0o100644, byte(i)
		e.ModifiedAt = time.Unix(int64(1e9+i), int64(i))
	}
	seed.Entries[3].IntentToAdd = true
	for _, v := range []uint32{2, 3} {
		seed.Version = v
		b, err := encodeIndex(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > sha1.Size { // else mutations would only ever break the checksum
			sum := sha1.Sum(b[:len(b)-sha1.Size])
			copy(b[len(b)-sha1.Size:], sum[:])
		}
		got, ok := decodeIndex(b)
		if !ok {
			return
		}
		want := &index.Index{}
		if err := index.NewDecoder(bytes.NewReader(b)).Decode(want); err != nil {
			t.Fatalf("decodeIndex accepted what go-git refuses: %v", err)
		}
		if got.Version != want.Version || !sameEntries(got.Entries, want.Entries) {
			t.Fatal("decodeIndex and go-git disagree")
		}
	})
}

// manifestIndex is an index of n manifests, as make bench's large tree
// has them.
func manifestIndex(n int) *index.Index {
	idx := &index.Index{Version: 2}
	for i := range n {
		e := idx.Add(fmt.Sprintf(".chunkvc/manifests/d%03d/f%05d.csv", i/500, i))
		e.Size, e.Mode, e.Hash[0], e.Inode = uint32(i), 0o100644, byte(i), uint32(i)
		e.ModifiedAt = time.Unix(int64(1.7e9+i), int64(i))
		e.CreatedAt = e.ModifiedAt
	}
	return idx
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestIndexNotCopiedWhole: writing the index does not build it whole in
// memory, nor does reading it read the file into memory (on Linux, where
// it is mapped): fresh memory is a page fault per 4 KiB.
func TestIndexNotCopiedWhole(t *testing.T) {
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx := manifestIndex(20000)
	data, err := encodeIndex(idx)
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	if n := allocated(func() { werr = g.setIndex(idx) }); werr != nil || n > uint64(len(data)/4) {
		t.Fatalf("setIndex of a %d-byte index allocated %d bytes (error %v)", len(data), n, werr)
	}
	if runtime.GOOS != "linux" {
		return
	}
	decoded := allocated(func() { decodeIndex(data) })
	var got *index.Index
	read := allocated(func() { got, err = g.index() })
	if err != nil || !sameEntries(got.Entries, idx.Entries) {
		t.Fatalf("the index read back differs (error %v)", err)
	}
	if read > decoded+uint64(len(data)/4) {
		t.Fatalf("reading a %d-byte index allocated %d bytes, decoding it %d", len(data), read, decoded)
	}
}

// BenchmarkDecodeIndex: an index of 20,000 manifests, as a commit of ten
// of make bench's large tree reads it.
func BenchmarkDecodeIndex(b *testing.B) {
	data, err := encodeIndex(manifestIndex(20000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, ok := decodeIndex(data); !ok {
			b.Fatal("not decoded")
		}
	}
}

// TestCommitTreesInReusedBodies: the trees of a commit of 20,000 files
// in 40 folders are made in buffers reused from folder to folder, not
// each grown anew (fresh memory is a page fault per 4 KiB).
func TestCommitTreesInReusedBodies(t *testing.T) {
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx := manifestIndex(20000)
	bodies := 0 // the trees' bodies: mode, name, NUL and hash per entry
	for _, e := range idx.Entries {
		bodies += len(path.Base(e.Name)) + 28
	}
	sig := Ident{Name: "t", Email: "t@t", When: time.Unix(1700000000, 0)}
	if _, _, err := g.commitIndex(idx, "first", sig); err != nil {
		t.Fatal(err)
	}
	// Again: the same trees, made and found there (ErrNothingToCommit).
	n := allocated(func() { _, _, err = g.commitIndex(idx, "again", sig) })
	if !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("the same index committed again: %v", err)
	}
	// Grown anew, the bodies took 3.7 MB here; reused, 0.45 MB is
	// allocated (160 kB of it the entries' list, cloned).
	if n > uint64(bodies) {
		t.Fatalf("making trees of %d bytes allocated %d bytes", bodies, n)
	}
}
