package confine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const outsideBytes = "not chunkvc's\n"

func wantUnsafe(t *testing.T, err error, names string) {
	t.Helper()
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), names) {
		t.Fatalf("got %v; want ErrUnsafePath naming %s", err, names)
	}
}

// confineFixture is a base directory and an outside one, with the outside
// holding a file whose bytes must never change.
type confineFixture struct {
	base, outside string
	t             *Tree
}

func newConfineFixture(t *testing.T) *confineFixture {
	t.Helper()
	f := &confineFixture{base: t.TempDir(), outside: t.TempDir()}
	if err := os.WriteFile(filepath.Join(f.outside, "x"), []byte(outsideBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	f.t = New(f.base, "")
	t.Cleanup(f.t.Close)
	return f
}

func (f *confineFixture) link(t *testing.T, target, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(f.base, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(f.base, rel)); err != nil {
		t.Fatal(err)
	}
}

// untouched fails unless the outside directory holds just its file, as it was.
func (f *confineFixture) untouched(t *testing.T) {
	t.Helper()
	ents, _ := os.ReadDir(f.outside)
	b, _ := os.ReadFile(filepath.Join(f.outside, "x"))
	if len(ents) != 1 || string(b) != outsideBytes {
		t.Fatalf("the outside directory changed: %d entries, x holds %q", len(ents), b)
	}
}

// A linked directory on the way is refused for every operation, whether
// it leads outside or elsewhere inside; nothing outside changes.
func TestTreeRefusesLinkedParent(t *testing.T) {
	f := newConfineFixture(t)
	f.link(t, f.outside, "a/out")
	if err := os.MkdirAll(filepath.Join(f.base, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.link(t, "../other", "a/in")
	for _, dir := range []string{"a/out", "a/in"} {
		wantUnsafe(t, f.t.WriteFile(dir+"/x", []byte("manifest"), false), dir+" is a symbolic link")
		wantUnsafe(t, f.t.WriteFile(dir+"/new/x", []byte("manifest"), false), dir+" is a symbolic link")
		wantUnsafe(t, f.t.Mkdir(dir+"/d"), dir)
		wantUnsafe(t, f.t.Check(dir+"/x"), dir)
		wantUnsafe(t, f.t.Remove(dir+"/x"), dir)
		_, err := f.t.ReadFile(dir+"/x", 100)
		wantUnsafe(t, err, dir)
		_, err = f.t.OpenFile(dir+"/x", os.O_RDWR)
		wantUnsafe(t, err, dir)
		_, err = f.t.Create(dir + "/x")
		wantUnsafe(t, err, dir)
		_, err = f.t.CreateExcl(dir + "/y")
		wantUnsafe(t, err, dir)
	}
	f.untouched(t)
	if ents, _ := os.ReadDir(filepath.Join(f.base, "other")); len(ents) != 0 {
		t.Fatal("wrote through an in-tree link")
	}
	// The top of the path too, and a label in the message.
	g := newConfineFixture(t)
	g.link(t, g.outside, "chunkvc")
	tg := New(g.base, ".git")
	defer tg.Close()
	wantUnsafe(t, tg.WriteFile("chunkvc/statcache", []byte("cache"), true), ".git/chunkvc is a symbolic link")
	g.untouched(t)
}

// A link in the file's own place is replaced by the file, never written
// through, and never read or opened.
func TestTreeReplacesLinkedFile(t *testing.T) {
	f := newConfineFixture(t)
	f.link(t, filepath.Join(f.outside, "x"), "d/f")
	if _, err := f.t.ReadFile("d/f", 100); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("read through a link: %v", err)
	}
	if _, err := f.t.OpenFile("d/f", os.O_RDWR); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("opened through a link: %v", err)
	}
	if err := f.t.WriteFile("d/f", []byte("mine"), true); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(f.base, "d/f"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("d/f is not a regular file now: %v", err)
	}
	if b, err := f.t.ReadFile("d/f", 100); err != nil || string(b) != "mine" {
		t.Fatalf("d/f holds %q, %v", b, err)
	}
	// A link to a missing target: not created through either.
	f.link(t, filepath.Join(f.outside, "new"), "d/g")
	if err := f.t.WriteFile("d/g", []byte("mine"), false); err != nil {
		t.Fatal(err)
	}
	// Removing a link removes the link.
	f.link(t, filepath.Join(f.outside, "x"), "d/h")
	if err := f.t.Remove("d/h"); err != nil {
		t.Fatal(err)
	}
	// Exclusive creation fails on a link, even a dangling one.
	f.link(t, filepath.Join(f.outside, "new2"), "d/lock")
	if _, err := f.t.CreateExcl("d/lock"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive create over a dangling link: %v", err)
	}
	f.untouched(t)
	if left, _ := filepath.Glob(filepath.Join(f.base, "d", "*"+tempMark+"*")); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

// Missing directories are made one at a time; a file where a directory
// must be, or a directory where the file must be, is refused; paths that
// are not clean and relative are refused outright.
func TestTreeParents(t *testing.T) {
	f := newConfineFixture(t)
	if err := f.t.WriteFile("x/y/z/f", []byte("deep"), false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(f.base, "x/y/z/f")); err != nil || string(b) != "deep" {
		t.Fatalf("x/y/z/f holds %q, %v", b, err)
	}
	// The open directories follow the paths used, in any order.
	for _, p := range []string{"x/q/f", "x/y/g", "f", "x/y/z/w/f"} {
		if err := f.t.WriteFile(p, []byte(p), false); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(f.base, p)); string(b) != p {
			t.Fatalf("%s holds %q", p, b)
		}
	}
	wantUnsafe(t, f.t.WriteFile("f/g", []byte("x"), false), "f is not a directory")
	wantUnsafe(t, f.t.Check("x/y"), "x/y")
	if err := f.t.WriteFile("x/y", []byte("x"), false); err == nil {
		t.Fatal("wrote a file over a directory")
	}
	if err := f.t.Check("nope/deeper/f"); err != nil {
		t.Fatalf("check of a path whose directories are missing: %v", err)
	}
	if _, err := f.t.ReadFile("nope/f", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read under a missing directory: %v", err)
	}
	for _, bad := range []string{"../x", "/abs", "a/../b", "a//b", "", "a/./b", `a\b`} {
		if err := f.t.WriteFile(bad, []byte("x"), false); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("path %q: %v", bad, err)
		}
	}
	f.untouched(t)
}
