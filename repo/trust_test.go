package repo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// trustRepo is a chunkvc repository whose .chunkvc/config names store,
// reopened as a clone would see it.
func trustRepo(t *testing.T, root, storeURL string) *Repo {
	t.Helper()
	if _, err := Init(root, "", nil); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Store: storeURL}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(ConfigPath)), cfg.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Which committed store locations need trust, with symlinks resolved; an
// untrusted one is not even created.
func TestCommittedStoreTrust(t *testing.T) {
	// s3:// needs no trust; an unreachable endpoint fails fast.
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	t.Setenv("CHUNKVC_S3_TIMEOUT", "100ms")
	t.Setenv("CHUNKVC_S3_RETRY_TIME", "100ms")
	cases := []struct {
		store   string // $OUT is the outside directory, $ROOT the work tree
		outside bool
	}{
		{"", false},
		{"s3://bucket/prefix", false},
		{"chunks", false},
		{"sub/../chunks", false},
		{".git/chunkvc/store", false},
		{"$ROOT/abs-inside", false},
		{"$OUT", true},
		{"../../outside", true},
		{"file://$OUT", true},
		{"out-link", true},
		{"out-link/deeper", true},
		{".git/refs", true},
		{"refs-link", true},
		{".git", true},
	}
	for _, c := range cases {
		t.Run(c.store, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "work", "repo")
			outside := filepath.Join(base, "outside")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			// A symlink in the work tree (git checks them out) that
			// leads out of it, and one that leads into .git.
			if err := os.Symlink(outside, filepath.Join(root, "out-link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(".git/refs", filepath.Join(root, "refs-link")); err != nil {
				t.Fatal(err)
			}
			u := strings.NewReplacer("$OUT", outside, "$ROOT", root).Replace(c.store)
			r := trustRepo(t, root, u)
			info := r.StoreInfo()
			if info.Outside != c.outside || info.Trusted == c.outside {
				t.Fatalf("store %q: %+v, want outside=%v", u, info, c.outside)
			}
			if !c.outside {
				return
			}
			if _, err := os.Lstat(outside); !os.IsNotExist(err) {
				t.Fatalf("Open of an untrusted store %q created %s", u, outside)
			}
			ctx := context.Background()
			if err := r.Store.Put(ctx, hashing.ID{}, nil); !errors.Is(err, ErrUntrustedStore) || !strings.Contains(err.Error(), "store trust") {
				t.Fatalf("put into untrusted store: %v", err)
			}
			if _, err := r.Fsck(ctx, FsckOptions{}); !errors.Is(err, ErrUntrustedStore) {
				t.Fatalf("fsck with an untrusted store: %v", err)
			}
		})
	}
}

// chunkvc store trust records the resolved directory; it stays trusted
// across opens, a config naming another directory is untrusted again,
// and chunkvc.store in .git/config wins over the committed line.
func TestTrustStoreRecordsDirectory(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	r := trustRepo(t, root, "../a")
	if r.StoreInfo().Trusted {
		t.Fatal("../a trusted before chunkvc store trust")
	}
	info, err := r.TrustStore()
	if err != nil || !info.Trusted || info.Path != a {
		t.Fatalf("TrustStore: %+v %v", info, err)
	}
	if st, err := os.Stat(a); err != nil || !st.IsDir() {
		t.Fatalf("trusted store not opened: %v", err)
	}
	out, err := exec.Command("git", "config", "--file", filepath.Join(root, ".git", "config"), "--get-all", "chunkvc.trustedStore").Output()
	if err != nil || strings.TrimSpace(string(out)) != a {
		t.Fatalf("git config chunkvc.trustedStore: %q %v", out, err)
	}
	for _, same := range []string{"../a", a, "file://" + a} {
		if !trustRepo(t, root, same).StoreInfo().Trusted {
			t.Fatalf("%s (the trusted directory) untrusted", same)
		}
	}
	if trustRepo(t, root, "../b").StoreInfo().Trusted {
		t.Fatal("../b trusted by the trust of ../a")
	}
	if _, err := os.Lstat(b); !os.IsNotExist(err) {
		t.Fatal("untrusted ../b was created")
	}
	if err := exec.Command("git", "config", "--file", filepath.Join(root, ".git", "config"), "chunkvc.store", b).Run(); err != nil {
		t.Fatal(err)
	}
	info = trustRepo(t, root, "../elsewhere").StoreInfo()
	if info.Source != StoreGitConfig || info.URL != b || !info.Trusted {
		t.Fatalf("chunkvc.store in .git/config: %+v", info)
	}
}

// init --store names the user's own store: trusted without a prompt.
func TestInitStoreIsTrusted(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	r, err := Init(filepath.Join(base, "repo"), shared, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := r.StoreInfo(); !info.Trusted || !info.Outside {
		t.Fatalf("init --store: %+v", info)
	}
	r, err = Open(r.Root, nil)
	if err != nil || !r.StoreInfo().Trusted {
		t.Fatalf("reopened: %+v %v", r.StoreInfo(), err)
	}
	if _, err := Init(filepath.Join(base, "other"), ".git/objects", nil); err == nil {
		t.Fatal("init --store .git/objects accepted")
	}
}
