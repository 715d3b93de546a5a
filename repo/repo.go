package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/generic"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/chunkread"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/pattern"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
	"github.com/chunkvc/chunkvc/repo/internal/trust"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
	"github.com/chunkvc/chunkvc/store/local"
	"github.com/chunkvc/chunkvc/store/s3"
)

var (
	// ErrNothingToCommit means the commit would not change anything.
	ErrNothingToCommit = errors.New("nothing to commit: tracked files and the git index match HEAD")
	// ErrNotChunkvc means the Git repository has no .chunkvc/config.
	ErrNotChunkvc = errors.New("not a chunkvc repository (run chunkvc init)")
	// ErrLocalChanges means a command refused to overwrite uncommitted work.
	ErrLocalChanges = errors.New("uncommitted changes would be overwritten")
	// ErrIntegrity means stored data did not match what the manifests record.
	ErrIntegrity = chunkread.ErrIntegrity
	// ErrNotTracked means a revision has no manifest for the path asked
	// for (errors read "<path> is not a tracked file in <rev>").
	ErrNotTracked = errors.New("not a tracked file")
)

// Repo is an open chunkvc repository.
type Repo struct {
	Root   string // work tree root, absolute
	Config *Config
	// Store is the chunk store; an untrusted one (see StoreInfo) fails
	// every call with ErrUntrustedStore.
	Store     store.Store
	storeInfo StoreInfo
	git       *gitRepo
	formats   formats.Set
	read      *readpath.Path
	// Overviews regenerates a COG's overview tiles for merges (GDAL's
	// work); nil without GDAL.
	Overviews OverviewRegenerator
}

// Adapters is the format set Open uses; cmd/chunkvc passes the native
// adapters it was built with.
type Adapters []formats.Adapter

// Open finds the repository containing dir.
func Open(dir string, native Adapters) (*Repo, error) {
	g, err := openGit(dir)
	if err != nil {
		return nil, err
	}
	data, err := readConfig(g.Root())
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", g.Root(), ErrNotChunkvc)
	}
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigPath, err)
	}
	r := &Repo{Root: g.Root(), Config: cfg, git: g, formats: formats.Set{Native: native, Generic: generic.Adapter{}}}
	info, err := r.resolveStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	if err := r.useStore(info, false); err != nil {
		return nil, err
	}
	return r, nil
}

// Init makes dir (creating a Git repository there if it is none) a chunkvc
// repository using storeURL ("" = the embedded store, or the store an
// existing .chunkvc/config names). The config file is staged so the next
// commit records it. A storeURL outside the repository is the user's own
// choice, so Init records it as trusted (see TrustStore); a store only
// the existing config names is trusted as Open would.
func Init(dir, storeURL string, native Adapters) (*Repo, error) {
	g, err := openGit(dir)
	if err != nil {
		if mkErr := os.MkdirAll(dir, 0o755); mkErr != nil {
			return nil, mkErr
		}
		if g, err = initGit(dir); err != nil {
			return nil, err
		}
	}
	cfg := &Config{}
	if data, err := readConfig(g.Root()); err == nil {
		if cfg, err = ParseConfig(data); err != nil {
			return nil, fmt.Errorf("%s: %w", ConfigPath, err)
		}
	}
	if storeURL != "" {
		cfg.Store = storeURL
	}
	r := &Repo{Root: g.Root(), Config: cfg, git: g, formats: formats.Set{Native: native, Generic: generic.Adapter{}}}
	info, err := r.resolveStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	if storeURL != "" && !info.Trusted {
		if info, err = trust.Record(r.Root, info); err != nil {
			return nil, err
		}
	}
	if err := r.useStore(info, true); err != nil {
		return nil, err
	}
	if err := r.saveConfig(); err != nil {
		return nil, err
	}
	return r, nil
}

// readConfig reads root's .chunkvc/config, never through a link (its
// bytes are staged again when the config is saved).
func readConfig(root string) ([]byte, error) {
	t := confine.New(root, "")
	defer t.Close()
	return t.ReadFile(ConfigPath, maxTextFile)
}

// maxTextFile bounds the config, .gitignore and .gitattributes as read.
const maxTextFile = 64 << 20

// saveConfig writes .chunkvc/config and .gitignore and stages both.
func (r *Repo) saveConfig() error {
	wt := r.workTree()
	defer wt.Close()
	if err := wt.Mkdir(ManifestDir); err != nil {
		return err
	}
	cfgData := r.Config.Encode()
	if err := wt.WriteFile(ConfigPath, cfgData, true); err != nil {
		return err
	}
	// Never read through a link: what it points at would be staged.
	old, err := wt.ReadFile(".gitignore", maxTextFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ign, err := pattern.GitignoreWith(string(old), r.Config.ignored())
	if err != nil {
		return err
	}
	if err := wt.WriteFile(".gitignore", []byte(ign), true); err != nil {
		return err
	}
	return r.git.Stage(map[string][]byte{ConfigPath: cfgData, ".gitignore": []byte(ign)}, nil)
}

// Track adds patterns to the config (skipping ones already there) and
// returns those added. An argument naming a directory is a dataset: a
// Zarr store is tracked as one (Config.Datasets); a store chunkvc cannot
// read as Zarr is tracked as its files (the pattern "<dir>/**"), the
// reason in notes; any other directory is an error.
func (r *Repo) Track(patterns []string) (added []string, err error) {
	added, _, err = r.TrackWithNotes(patterns)
	return added, err
}

// TrackWithNotes is Track, with a note for each directory tracked as
// plain files rather than as a dataset.
func (r *Repo) TrackWithNotes(patterns []string) (added, notes []string, err error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	for _, p := range patterns {
		p = filepath.ToSlash(p)
		ds, files, note, err := r.datasetArg(p)
		if err != nil {
			return nil, nil, err
		}
		if ds != "" {
			if r.Config.IsDataset(ds) {
				continue
			}
			if err := checkDataset(ds, r.Config.Datasets); err != nil {
				return nil, nil, err
			}
			r.Config.Datasets = append(r.Config.Datasets, ds)
			added = append(added, ds)
			continue
		}
		if note != "" {
			notes = append(notes, note)
			p = files
		}
		if err := pattern.Check(p); err != nil {
			return nil, nil, err
		}
		if !slices.Contains(r.Config.Track, p) {
			r.Config.Track = append(r.Config.Track, p)
			added = append(added, p)
		}
	}
	return added, notes, r.saveConfig()
}

// datasetArg reads a track argument: a Zarr store's directory is the
// dataset ds; one chunkvc cannot read as Zarr is tracked as its files,
// the pattern files, with note saying why. Anything that is not a
// directory is a pattern, as given.
func (r *Repo) datasetArg(arg string) (ds, files, note string, err error) {
	clean := strings.TrimSuffix(arg, "/")
	if strings.ContainsAny(clean, "*?[") || manifest.CheckPath(clean) != nil {
		return "", "", "", nil
	}
	fi, err := os.Lstat(r.abs(clean))
	if err != nil || !fi.IsDir() {
		return "", "", "", nil //nolint:nilerr // not a directory here: a pattern
	}
	dir := r.abs(clean)
	if !zarr.Detect(os.DirFS(dir)) {
		return "", "", "", fmt.Errorf("%s is a directory but not a Zarr store (no .zgroup, .zarray or zarr.json at its root); track its files with a pattern such as %q", clean, clean+"/**")
	}
	st, err := zarr.Walk(os.DirFS(dir), func(*zarr.File) error { return nil })
	if err != nil {
		return "", "", "", fmt.Errorf("zarr store %s: %w", clean, err)
	}
	if st.Unsupported != "" {
		return "", clean + "/**", fmt.Sprintf("%s is tracked as plain files, not as a dataset: %s", clean, st.Unsupported), nil
	}
	return clean, "", "", nil
}

// openStore turns a store URL into a Store; see trust.StorePath for local
// ones. S3 endpoint and credentials come from the usual AWS/MinIO
// environment and profile files; CHUNKVC_S3_TIMEOUT and
// CHUNKVC_S3_RETRY_TIME (Go durations) bound how long an unreachable
// store is tried. Whether the store may be used is decided before
// (resolveStore).
func (r *Repo) openStore(u string, create bool) (store.Store, error) {
	switch {
	case strings.HasPrefix(u, "s3://"):
		opt := s3.Options{CreateBucket: create}
		if d, err := time.ParseDuration(os.Getenv("CHUNKVC_S3_TIMEOUT")); err == nil {
			opt.Timeout = d
		}
		if d, err := time.ParseDuration(os.Getenv("CHUNKVC_S3_RETRY_TIME")); err == nil {
			opt.RetryTime = d
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		st, err := s3.Open(ctx, u, opt)
		if err != nil {
			if create {
				return nil, err // init must reach the store it names
			}
			return brokenStore{url: u, err: err}, nil
		}
		return st, nil
	case azure.IsURL(u):
		st, err := azure.OpenURL(u, create)
		if err != nil && !create {
			return brokenStore{url: u, err: err}, nil
		} else if err != nil {
			return nil, err
		}
		return st, nil
	case strings.HasPrefix(u, "gs://"):
		st, err := openGCS(u, create) // store_gcs.go, store_nogcs.go
		switch {
		case err == nil:
			return st, nil
		case create:
			return nil, err
		}
		return brokenStore{url: u, err: err}, nil
	}
	p, _, err := trust.StorePath(r.Root, u)
	if err != nil {
		return nil, err
	}
	return local.Open(p)
}

func (r *Repo) gitDir() string { return filepath.Join(r.Root, ".git") }

// stateDir is .git/chunkvc, created on demand.
func (r *Repo) stateDir() (string, error) {
	t := r.gitTree()
	defer t.Close()
	return filepath.Join(r.gitDir(), "chunkvc"), t.Mkdir("chunkvc")
}

// Branch names the checked-out branch ("HEAD" when detached).
func (r *Repo) Branch() string { return r.git.Branch() }

// abs maps a slash path relative to the root to an OS path.
func (r *Repo) abs(p string) string { return filepath.Join(r.Root, filepath.FromSlash(p)) }

// Manifests and ReadManifest are manifestBlobs and readManifestBlob for
// the pipeline packages under repo/internal (reach.Manifests), which read
// a commit's manifests through this Git, shards and work-tree copies
// included, without importing repo.
func (g *gitRepo) Manifests(c *gitdb.Commit) (map[string]gitdb.Hash, error) {
	return g.manifestBlobs(c)
}

func (g *gitRepo) ReadManifest(h gitdb.Hash, p string) (*manifest.Manifest, error) {
	m, _, err := g.readManifestBlob(h, p)
	return m, err
}
