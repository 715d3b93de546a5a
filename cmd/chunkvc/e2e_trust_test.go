package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// storeInfo mirrors chunkvc store --json.
type storeInfo struct {
	URL     string `json:"url"`
	Source  string `json:"source"`
	Path    string `json:"path"`
	Outside bool   `json:"outside"`
	Trusted bool   `json:"trusted"`
}

// dirState lists what is under dir ("<absent>" when it does not exist),
// to show that nothing was written there.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return "<absent>"
	}
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return strings.Join(names, "\n")
}

// refused runs chunkvc and wants exit status 4 with a message naming the
// command that trusts the store of the repository at root.
func (r *runner) refused(root string, args ...string) {
	r.t.Helper()
	res := r.run(binary, args...)
	want := "chunkvc -C " + root + " store trust"
	if res.code != exitRefused || !strings.Contains(res.stderr, want) {
		r.t.Fatalf("chunkvc %s with an untrusted store: exit %d, want %d and %q\n%s%s",
			strings.Join(args, " "), res.code, exitRefused, want, res.stdout, res.stderr)
	}
}

// A store = line that arrives with a clone, naming a directory outside the
// repository (absolute, ../.., file://), is not used, not even created,
// by any command until chunkvc store trust; then commits write there. A
// later merge that names another outside directory is untrusted again.
func TestCommittedOutsideStoreNeedsTrust(t *testing.T) {
	cases := []struct {
		name  string
		store func(outside string) string // the line the origin commits
		mk    bool                        // outside exists (empty) beforehand
	}{
		{"absolute", func(o string) string { return o }, true},
		{"relative", func(string) string { return "../../outside" }, false},
		{"file-url", func(o string) string { return "file://" + o }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newRunner(t)
			bare := filepath.Join(t.TempDir(), "origin.git")
			a.git("init", "-q", "--bare", "-b", "main", bare)
			a.git("init", "-q", "-b", "main")
			a.cv("init")
			a.cv("track", "*.bin")
			a.write("a.bin", randomBytes(300000, 1))
			a.cv("commit", "-m", "v1")

			b := newRunner(t)
			// The victim's clone is b.dir/c, so ../../outside is beside b.dir.
			outside := filepath.Join(filepath.Dir(b.dir), "outside")
			if c.mk {
				if err := os.Mkdir(outside, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cfg := string(a.read(".chunkvc/config")) + "store = " + c.store(outside) + "\n"
			a.write(".chunkvc/config", []byte(cfg))
			a.git("commit", "-q", "-am", "chunks go elsewhere now")
			a.git("remote", "add", "origin", bare)
			a.git("push", "-q", "origin", "main")
			before := dirState(t, outside)

			root := b.path("c")
			res := b.run(binary, "clone", bare, "c")
			if res.code != exitRefused || !strings.Contains(res.stderr, "chunkvc -C "+root+" store trust") || !strings.Contains(res.stderr, "chunkvc checkout") {
				t.Fatalf("clone: exit %d\n%s", res.code, res.stderr)
			}
			// A lazy clone has nothing to check out and succeeds, but says
			// at once that the store is not used yet.
			lazy := b.run(binary, "clone", "--lazy", bare, "lazy")
			if lazy.code != 0 || !strings.Contains(lazy.stderr, "chunkvc -C "+b.path("lazy")+" store trust") {
				t.Fatalf("clone --lazy: exit %d\n%s", lazy.code, lazy.stderr)
			}
			var cl struct {
				Trusted *bool `json:"store_trusted"`
			}
			b.jsonOf(&cl, "clone", "--lazy", bare, "lazy2")
			if cl.Trusted == nil || *cl.Trusted {
				t.Fatalf("clone --lazy --json: store_trusted %v, want false", cl.Trusted)
			}
			b.dir = root
			// What needs no store works; the file not checked out is not
			// a deletion.
			if st := b.cv("status"); st != "" {
				t.Fatalf("status after the refused checkout: %q", st)
			}
			b.cv("log")
			b.cv("ls-chunks", "a.bin")
			var si storeInfo
			b.jsonOf(&si, "store")
			if si.Trusted || !si.Outside || si.Source != "config" || si.Path != outside {
				t.Fatalf("store --json: %+v (outside %s)", si, outside)
			}
			head := b.git("rev-parse", "HEAD")
			b.write("b.bin", randomBytes(200000, 2))
			b.refused(root, "commit", "-m", "mine")
			b.refused(root, "checkout")
			b.refused(root, "fsck")
			b.refused(root, "gc", "--no-fetch", "--grace", "0s")
			b.refused(root, "cat", "HEAD:a.bin")
			b.cv("commit", "--offline", "-m", "mine, offline") // the embedded store is always fine
			b.refused(root, "push")
			if got := dirState(t, outside); got != before {
				t.Fatalf("untrusted store %s changed:\n%s\nwas:\n%s", outside, got, before)
			}
			if a.git("--git-dir", bare, "rev-parse", "main") != head {
				t.Fatal("push moved the remote although the store is untrusted")
			}

			// Trusting it is recorded in .git/config only.
			committed := b.git("show", "HEAD:.chunkvc/config")
			b.cv("store", "trust")
			if got := strings.TrimSpace(b.git("config", "--local", "--get-all", "chunkvc.trustedStore")); got != outside {
				t.Fatalf("chunkvc.trustedStore = %q, want %q", got, outside)
			}
			if string(b.read(".chunkvc/config")) != committed || b.git("status", "--porcelain", ".chunkvc") != "" {
				t.Fatal("store trust changed the committed .chunkvc/config")
			}
			b.jsonOf(&si, "store")
			if !si.Trusted {
				t.Fatalf("store --json after trust: %+v", si)
			}
			b.write("b.bin", randomBytes(200000, 3))
			var cr commitResult
			b.jsonOf(&cr, "commit", "-m", "mine, trusted")
			if cr.ChunksUploaded == 0 || dirState(t, outside) == before {
				t.Fatalf("commit after trust stored nothing in %s: %+v", outside, cr)
			}

			// The origin moves the store again; a merge brings it in.
			other := filepath.Join(t.TempDir(), "elsewhere")
			cfg = strings.Replace(string(a.read(".chunkvc/config")), "store = "+c.store(outside), "store = "+other, 1)
			a.write(".chunkvc/config", []byte(cfg))
			a.git("commit", "-q", "-am", "and elsewhere again")
			a.git("push", "-q", "origin", "main")
			b.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
			b.write("b.bin", randomBytes(200000, 4))
			b.refused(root, "commit", "-m", "after the merge")
			if _, err := os.Lstat(other); !os.IsNotExist(err) {
				t.Fatalf("untrusted store %s was created", other)
			}
		})
	}
}

// clone --trust-store trusts the store before the checkout reads it; init
// --store is the user's own choice and trusted without asking.
func TestTrustedByCloneFlagAndInit(t *testing.T) {
	a := newRunner(t)
	shared := filepath.Join(t.TempDir(), "shared")
	a.cv("init", "--store", shared)
	if got := strings.TrimSpace(a.git("config", "--local", "--get-all", "chunkvc.trustedStore")); got != shared {
		t.Fatalf("init --store: chunkvc.trustedStore = %q, want %q", got, shared)
	}
	if !strings.Contains(string(a.read(".chunkvc/config")), "store = "+shared+"\n") {
		t.Fatal("init --store did not write the store line")
	}
	a.cv("track", "*.bin")
	data := randomBytes(300000, 5)
	a.write("x.bin", data)
	a.cv("commit", "-m", "v1")

	b := newRunner(t)
	var cl struct {
		Trusted *bool `json:"store_trusted"`
	}
	b.jsonOf(&cl, "clone", "--lazy", "--trust-store", a.dir, "lazy")
	if cl.Trusted == nil || !*cl.Trusted {
		t.Fatalf("clone --lazy --trust-store --json: store_trusted %v, want true", cl.Trusted)
	}
	b.cv("clone", "--trust-store", a.dir, "c")
	if string(b.read("c/x.bin")) != string(data) {
		t.Fatal("clone --trust-store differs")
	}
	b.dir = b.path("c")
	var si storeInfo
	b.jsonOf(&si, "store")
	if !si.Trusted || si.Path != shared {
		t.Fatalf("store --json in the clone: %+v", si)
	}
}

// chunkvc pull that brings a new outside store refuses it before its
// checkout reads anything, rather than reading the store the clone had.
func TestPullOfNewOutsideStoreIsRefused(t *testing.T) {
	a := newRunner(t)
	first := filepath.Join(t.TempDir(), "first")
	a.cv("init", "--store", first)
	a.cv("track", "*.bin")
	a.write("a.bin", randomBytes(200000, 1))
	a.cv("commit", "-q", "-m", "v1")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("remote", "add", "origin", bare)
	a.cv("push", "-q")
	b := newRunner(t)
	b.cv("clone", "-q", "--trust-store", bare, "c")
	b.dir = b.path("c")

	other := filepath.Join(t.TempDir(), "other")
	cfg := strings.Replace(string(a.read(".chunkvc/config")), "store = "+first, "store = "+other, 1)
	a.write(".chunkvc/config", []byte(cfg))
	a.cv("store", "trust")
	a.git("add", ".chunkvc/config")
	a.write("a.bin", randomBytes(200000, 2))
	a.cv("commit", "-q", "-m", "move the store, with new data")
	a.cv("push", "-q")
	before := dirState(t, other)
	res := b.run(binary, "pull")
	if res.code != exitRefused || !strings.Contains(res.stderr, "store trust") {
		t.Fatalf("pull of an untrusted store: exit %d\n%s", res.code, res.stderr)
	}
	if dirState(t, other) != before {
		t.Fatalf("the pulled store %s changed", other)
	}
	b.cv("store", "trust")
	b.cv("checkout")
	if !bytes.Equal(b.read("a.bin"), a.read("a.bin")) {
		t.Fatal("after trust, the checkout is not the pushed version")
	}
}
