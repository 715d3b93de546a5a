package trust

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoDir makes a Git work tree under a fresh folder, with a symlink out
// of it and one into .git, and returns it and the outside directory.
func repoDir(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "work", "my repo")
	outside = filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(root, ".git", "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/refs", filepath.Join(root, "refs-link")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// Which committed store locations are outside, and so untrusted, with
// symlinks resolved; nothing is created.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		store   string // $OUT is the outside directory, $ROOT the work tree
		outside bool
		source  string
	}{
		{"", false, StoreDefault},
		{"s3://bucket/prefix", false, StoreConfig},
		{"chunks", false, StoreConfig},
		{"sub/../chunks", false, StoreConfig},
		{".git/chunkvc/store", false, StoreConfig},
		{"$ROOT/abs-inside", false, StoreConfig},
		{"$OUT", true, StoreConfig},
		{"../../outside", true, StoreConfig},
		{"file://$OUT", true, StoreConfig},
		{"out-link", true, StoreConfig},
		{"out-link/deeper", true, StoreConfig},
		{".git/refs", true, StoreConfig},
		{"refs-link", true, StoreConfig},
		{".git", true, StoreConfig},
	} {
		t.Run(c.store, func(t *testing.T) {
			root, outside := repoDir(t)
			u := strings.NewReplacer("$OUT", outside, "$ROOT", root).Replace(c.store)
			info, err := Resolve(root, u)
			if err != nil || info.Outside != c.outside || info.Trusted == c.outside || info.Source != c.source || info.URL != u {
				t.Fatalf("Resolve(%q) = %+v, %v; want outside=%v, source %s", u, info, err, c.outside, c.source)
			}
			if _, err := os.Lstat(outside); !os.IsNotExist(err) {
				t.Fatalf("Resolve(%q) created %s", u, outside)
			}
			if !c.outside {
				return
			}
			err = Refusal(info, root)
			if !errors.Is(err, ErrUntrustedStore) || !strings.Contains(err.Error(), "run `chunkvc -C '"+root+"' store trust`") {
				t.Errorf("Refusal = %v", err)
			}
		})
	}
	if _, err := Resolve(t.TempDir(), "ftp://x"); err == nil {
		t.Error("Resolve of an unknown scheme: no error")
	}
}

// Record trusts the resolved directory, once, and Resolve honours it;
// chunkvc.store in .git/config wins over the committed line and needs no
// trust; a store inside .git is refused.
func TestRecord(t *testing.T) {
	root, outside := repoDir(t)
	info, _ := Resolve(root, "out-link")
	for range 2 {
		got, err := Record(root, info)
		if err != nil || !got.Trusted || got.Path != outside {
			t.Fatalf("Record = %+v, %v", got, err)
		}
	}
	ls, err := readSettings(root)
	if err != nil || len(ls.trusted) != 1 || ls.trusted[0] != outside {
		t.Fatalf("trusted after two records: %q, %v", ls.trusted, err)
	}
	for _, same := range []string{"out-link", outside, "file://" + outside, "../../outside"} {
		if info, err := Resolve(root, same); err != nil || !info.Trusted {
			t.Errorf("Resolve(%q) after Record = %+v, %v", same, info, err)
		}
	}
	if info, _ := Resolve(root, "../../other"); info.Trusted {
		t.Error("another directory trusted by the trust of outside")
	}
	if err := gitConfigAdd(root, "chunkvc.store", "../../elsewhere"); err != nil {
		t.Fatal(err)
	}
	if info, err := Resolve(root, "$committed"); err != nil || info.Source != StoreGitConfig || info.URL != "../../elsewhere" || !info.Trusted {
		t.Errorf("Resolve with chunkvc.store = %+v, %v", info, err)
	}
	root2, _ := repoDir(t)
	in, _ := Resolve(root2, ".git/refs")
	if _, err := Record(root2, in); err == nil || !strings.Contains(err.Error(), "inside .git") {
		t.Errorf("Record of a store inside .git: %v", err)
	}
}

// The cost Open pays on every command (status included) to read
// chunkvc's keys from .git/config, two ways (gitdb's BenchmarkConfig
// compares its parser with a full read of the config).
func BenchmarkReadSettings(b *testing.B) {
	root, _ := repoDir(b)
	b.Run("decoder", func(b *testing.B) {
		for b.Loop() {
			if _, err := readSettings(root); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Resolve", func(b *testing.B) { // all Open adds: the read and the symlink walks
		for b.Loop() {
			if _, err := Resolve(root, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-config-exec", func(b *testing.B) {
		for b.Loop() {
			_ = exec.Command("git", "-C", root, "config", "--get-all", "chunkvc.trustedStore").Run()
		}
	})
}
