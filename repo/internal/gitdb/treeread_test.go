package gitdb

import (
	"bytes"
	"compress/zlib"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// goGitBlobs is what go-git's recursive walker lists as files under dir
// of commit c: the reference listFiles must agree with.
func goGitBlobs(t *testing.T, g *Repo, c *Commit, dir string) map[string]Hash {
	t.Helper()
	tree, err := object.GetTree(g.r.Storer, plumbing.Hash(c.TreeHash))
	if err != nil {
		t.Fatal(err)
	}
	if tree, err = tree.Tree(dir); err != nil {
		t.Fatal(err)
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	out := map[string]Hash{}
	for {
		name, e, err := w.Next()
		if err != nil {
			return out
		}
		if e.Mode.IsFile() {
			out[name] = Hash(e.Hash)
		}
	}
}

// ManifestBlobs, which parses tree objects itself, lists what go-git's
// walker lists, from loose trees and, after git gc, packed ones; a
// damaged loose tree is an error, not a shorter listing.
func TestManifestBlobsIsGoGitsWalk(t *testing.T) {
	dir, hs := history(t)
	for _, packed := range []bool{false, true} {
		if packed {
			git(t, dir, "gc", "-q")
		}
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"c2", "merge", "odd"} {
			c, err := g.ReadCommit(hs[name])
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.ManifestBlobs(c, "m")
			if err != nil {
				t.Fatal(err)
			}
			want := goGitBlobs(t, g, c, "m")
			if len(got) != len(want) || len(want) < 2 {
				t.Fatalf("packed %v, %s: ManifestBlobs = %v, go-git walks %v", packed, name, got, want)
			}
			for p, h := range want {
				if got[p] != h {
					t.Errorf("packed %v, %s: %s is %s, go-git says %s", packed, name, p, got[p], h)
				}
			}
		}
	}
	// A loose tree cut short.
	dir, hs = history(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := ParseHash(git(t, dir, "rev-parse", hs["c2"].String()+":m/sub"))
	if err != nil {
		t.Fatal(err)
	}
	objects, _ := g.objectsDir()
	p := looseObject(objects, sub)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("tree 40\x00100644 b\x00short"))
	zw.Close()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := g.ReadCommit(hs["c2"])
	if err != nil {
		t.Fatal(err)
	}
	if m, err := g.ManifestBlobs(c, "m"); err == nil {
		t.Errorf("a damaged tree listed as %v, no error", m)
	}
	if _, err := os.Stat(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseTree: parseTree never panics, and whatever it accepts whole,
// go-git's tree decoder reads as the same entries, files and folders
// alike.
func FuzzParseTree(f *testing.F) {
	h := bytes.Repeat([]byte{0xab}, 20)
	f.Add(append([]byte("100644 a\x00"), h...))
	f.Add(append(append([]byte("40000 d\x00"), h...), append([]byte("120000 l\x00"), h...)...))
	f.Add([]byte("100644 a\x00short"))
	f.Add([]byte("9 x\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		type entry struct {
			mode uint32
			name string
			h    Hash
		}
		var got []entry
		err := parseTree(b, func(mode uint32, name []byte, h Hash) bool {
			got = append(got, entry{mode, string(name), h})
			return true
		})
		if err != nil {
			return
		}
		obj := &plumbing.MemoryObject{}
		obj.SetType(plumbing.TreeObject)
		obj.Write(b)
		var tree object.Tree
		if err := tree.Decode(obj); err != nil {
			return // go-git is stricter about some modes
		}
		if len(tree.Entries) != len(got) {
			t.Fatalf("parseTree: %d entries, go-git %d", len(got), len(tree.Entries))
		}
		for i, e := range tree.Entries {
			k := kindOf(got[i].mode)
			if got[i].name != e.Name || got[i].h != Hash(e.Hash) || (k == kindFile) != e.Mode.IsFile() || (k == kindTree) != (e.Mode == filemode.Dir) {
				t.Fatalf("entry %d: %+v, go-git %+v", i, got[i], e)
			}
		}
	})
}
