package trust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store"
)

// ErrUntrustedStore means .chunkvc/config names a local store outside the
// repository that this clone has not been told to trust.
var ErrUntrustedStore = errors.New("untrusted store")

// Where the store location comes from (Info.Source).
const (
	StoreDefault   = "default"    // no store line: the embedded .git/chunkvc/store
	StoreConfig    = "config"     // store = in .chunkvc/config, which is committed
	StoreGitConfig = "git-config" // chunkvc.store in .git/config: this clone's own choice
)

// Keys in .git/config, which is never committed or cloned.
const (
	gitKeyStore   = "store"        // chunkvc.store: this clone's store, wins over .chunkvc/config
	gitKeyTrusted = "trustedStore" // chunkvc.trustedStore: a trusted directory (may repeat)
)

// Info says which store a repository uses, where that came from and
// whether it may be used.
type Info struct {
	URL    string `json:"url"` // as written; "" = the embedded store
	Source string `json:"source"`
	// Path is a local store's directory with symlinks resolved.
	Path string `json:"path,omitempty"`
	// Outside: a local directory neither in the work tree nor the
	// embedded store.
	Outside bool `json:"outside"`
	// Trusted: the store may be used. Only a store outside the repository
	// that .chunkvc/config names can be untrusted; chunkvc store trust
	// records its directory in .git/config.
	Trusted bool `json:"trusted"`

	resolveErr error // why Path could not be resolved
}

// settings is chunkvc's section of .git/config.
type settings struct {
	store   string   // chunkvc.store, "" = not set
	trusted []string // chunkvc.trustedStore values
}

// gitDir is the Git directory of the work tree root.
func gitDir(root string) string { return filepath.Join(root, ".git") }

// readSettings reads .git/config, without following includes, so
// chunkvc's keys belong in that file proper. This runs on every command
// (status included): gitdb.ParseConfig takes about 20 µs, an exec of
// `git config` 4 ms (BenchmarkReadSettings; gitdb's BenchmarkConfig for a
// full read of the config, 30-60 µs). gitdb.Open has parsed the file with
// the same parser already, so this cannot refuse what it took.
func readSettings(root string) (settings, error) {
	var ls settings
	file := filepath.Join(gitDir(root), "config")
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return ls, nil
	}
	if err != nil {
		return ls, err
	}
	cfg, err := gitdb.ParseConfig(data)
	if err != nil {
		return ls, fmt.Errorf("%s: %w", file, err)
	}
	ls.store = cfg.Get("chunkvc", gitKeyStore)
	ls.trusted = cfg.GetAll("chunkvc", gitKeyTrusted)
	return ls, nil
}

// Resolve decides which store the repository with work tree root uses:
// chunkvc.store in .git/config if set, else committed (the store line of
// .chunkvc/config), which is trusted unless it names a local directory
// outside the repository that .git/config does not list.
func Resolve(root, committed string) (Info, error) {
	ls, err := readSettings(root)
	if err != nil {
		return Info{}, err
	}
	info := Info{URL: committed, Source: StoreConfig, Trusted: true}
	switch {
	case ls.store != "":
		info.URL, info.Source = ls.store, StoreGitConfig
	case committed == "":
		info.Source = StoreDefault
	}
	p, isLocal, err := StorePath(root, info.URL)
	if err != nil || !isLocal || info.URL == "" {
		info.Path = p // the embedded store: inside by construction
		return info, err
	}
	info.Path, err = resolvePath(p)
	if err != nil {
		// A symlink loop or an unreadable directory: not known to be
		// inside, and not trustable until it resolves.
		info.Path, info.Outside = p, true
		if info.Source == StoreConfig {
			info.Trusted, info.resolveErr = false, err
		}
		return info, nil
	}
	info.Outside = !insideRepo(root, info.Path)
	if info.Outside && info.Source == StoreConfig {
		info.Trusted = false
		for _, t := range ls.trusted {
			info.Trusted = info.Trusted || filepath.Clean(t) == info.Path
		}
	}
	return info, nil
}

// StorePath is the directory a store URL names; isLocal is false for
// s3:// and az:// URLs. Relative paths are relative to the work tree root.
func StorePath(root, u string) (p string, isLocal bool, err error) {
	switch {
	case u == "":
		return filepath.Join(gitDir(root), "chunkvc", "store"), true, nil
	case strings.HasPrefix(u, "s3://"), strings.HasPrefix(u, "az://"), strings.HasPrefix(u, "azblob://"):
		return "", false, nil
	case strings.HasPrefix(u, "gs://"):
		return "", false, nil
	case strings.HasPrefix(u, "file://"):
		p = strings.TrimPrefix(u, "file://")
	case strings.Contains(u, "://"):
		return "", false, fmt.Errorf("store %s: unknown URL scheme (want a path, file://, s3:// or az://)", u)
	default:
		p = u
	}
	if p == "" {
		return "", false, fmt.Errorf("store %s: empty path", u)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	return filepath.Clean(p), true, nil
}

// insideRepo reports whether the resolved directory p is in the work tree
// (but not in .git, where a store's files could pass for refs or objects)
// or in the embedded store.
func insideRepo(root, p string) bool {
	if within(p, resolvedOr(filepath.Join(gitDir(root), "chunkvc", "store"))) {
		return true
	}
	if within(p, resolvedOr(gitDir(root))) {
		return false
	}
	return within(p, resolvedOr(root))
}

// within reports whether p is dir or below it; both are clean and absolute.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolvePath resolves the symlinks of the absolute, clean path p as the
// system would on the way to creating it: parts that do not exist yet are
// appended as they are, and a symlink whose target does not exist yet
// (which MkdirAll would refuse, but a later mkdir of the target would
// make real) is followed to that target.
func resolvePath(p string) (string, error) {
	for hops := 0; hops < 64; hops++ {
		cur, rest := p, ""
		for {
			if _, err := os.Lstat(cur); err == nil {
				break
			} else if !errors.Is(err, os.ErrNotExist) || filepath.Dir(cur) == cur {
				return "", fmt.Errorf("resolve %s: %w", p, err)
			}
			rest = filepath.Join(filepath.Base(cur), rest)
			cur = filepath.Dir(cur)
		}
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		// cur is a symlink to something that does not exist (yet).
		target, err := os.Readlink(cur)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if !filepath.IsAbs(target) {
			// Relative to the link's real directory, so that a ".." in
			// target climbs from there as the system's would.
			dir, err := filepath.EvalSymlinks(filepath.Dir(cur))
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", p, err)
			}
			target = filepath.Join(dir, target)
		}
		p = filepath.Join(target, rest)
	}
	return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
}

// resolvedOr is p resolved, or p itself when that fails.
func resolvedOr(p string) string {
	if real, err := resolvePath(p); err == nil {
		return real
	}
	return p
}

// Refusal says which store is not used and how to trust it, in the
// repository with work tree root; it wraps ErrUntrustedStore.
func Refusal(info Info, root string) error {
	if info.resolveErr != nil {
		return fmt.Errorf("%w: .chunkvc/config names store = %s, which cannot be resolved: %w", ErrUntrustedStore, info.URL, info.resolveErr)
	}
	where := info.URL
	if info.Path != info.URL {
		where += ", which is " + info.Path
	}
	return fmt.Errorf("%w: .chunkvc/config names store = %s, outside this repository; "+
		"a store location that came with a clone, pull or merge is not used until you trust it: "+
		"run `chunkvc -C %s store trust` (or give this clone its own store with `git config chunkvc.store URL`)",
		ErrUntrustedStore, where, shellQuote(root))
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Record adds info's directory to the trusted ones in the .git/config of
// the repository with work tree root, and returns info trusted. The record
// is the directory (symlinks resolved), so a later .chunkvc/config naming
// another directory is untrusted again. A directory inside .git is
// refused.
func Record(root string, info Info) (Info, error) {
	if info.resolveErr != nil {
		return info, fmt.Errorf("store %s: %w", info.URL, info.resolveErr)
	}
	if within(info.Path, resolvedOr(gitDir(root))) {
		return info, fmt.Errorf("store %s is %s, inside .git, where its files could pass for Git's: use the embedded store (no store line) or a directory outside .git", info.URL, info.Path)
	}
	ls, err := readSettings(root)
	if err != nil {
		return info, err
	}
	if !slices.Contains(ls.trusted, info.Path) {
		if err := gitConfigAdd(root, "chunkvc."+gitKeyTrusted, info.Path); err != nil {
			return info, err
		}
	}
	info.Trusted = true
	return info, nil
}

// gitConfigAdd adds key = value to .git/config with the git CLI, which
// writes the file through config.lock and a rename, so a crash or a
// concurrent git leaves either the old or the new file (the Git
// library's SetConfig rewrites it in place).
func gitConfigAdd(root, key, value string) error {
	file := filepath.Join(gitDir(root), "config")
	cmd := exec.Command("git", "config", "--file", file, "--add", key, value)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git config --add %s %s in %s: %w: %s", key, value, file, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// UntrustedStore stands in for a store that is not trusted: every call
// fails with Err (a Refusal), and nothing touches the store's directory.
type UntrustedStore struct {
	URL string
	Err error
}

var (
	_ store.Store   = UntrustedStore{}
	_ store.Batcher = UntrustedStore{}
)

func (u UntrustedStore) Get(context.Context, hashing.ID, int64, int64) (io.ReadCloser, error) {
	return nil, u.Err
}
func (u UntrustedStore) Put(context.Context, hashing.ID, []byte) error { return u.Err }
func (u UntrustedStore) Stat(context.Context, hashing.ID) (store.Info, error) {
	return store.Info{}, u.Err
}
func (u UntrustedStore) List(context.Context, func(store.Info) error) error { return u.Err }
func (u UntrustedStore) Delete(context.Context, hashing.ID) error           { return u.Err }

// Batch fails too, so a commit stops before it hashes anything.
func (u UntrustedStore) Batch(context.Context) (store.Batch, error) { return nil, u.Err }
func (u UntrustedStore) String() string                             { return u.URL }
