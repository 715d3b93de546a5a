package repo

import (
	"context"
	"os"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/diffscan"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Git's diff driver for manifests: `chunkvc install` writes TextconvAttribute
// into .gitattributes and sets TextconvConfigKey to TextconvCommand, so that
// `git diff` and `git log -p` show `chunkvc diff-textconv` listings.
const (
	TextconvDriver    = "chunkvc"
	TextconvAttribute = ".chunkvc/** diff=" + TextconvDriver // manifests, roots and shards
	TextconvConfigKey = "diff." + TextconvDriver + ".textconv"
	TextconvCommand   = "chunkvc diff-textconv"
)

// DiffOptions selects what Diff compares (diffscan.Options).
type DiffOptions = diffscan.Options

// Diff compares two versions of the tracked files (see DiffOptions).
// Working files are chunked and hashed but nothing is stored; a file whose
// stat-cache digest matches the old version's is not read at all.
func (r *Repo) Diff(ctx context.Context, opt DiffOptions) (*diff.Result, error) {
	if err := r.settlePatch(); err != nil {
		return nil, err
	}
	env := diffscan.Env{Git: r.git, Root: r.Root, Tracked: r.trackedFiles, StatCache: r.loadStatCache,
		Stat: r.trackedStat, Peek: r.peekFile, FileAt: r.FileAt}
	return diffscan.Run(ctx, env, opt)
}

// peekFile is chunkFile without the store: it enumerates and hashes working
// file p and returns the manifest a commit would write.
func (r *Repo) peekFile(ctx context.Context, p string, workers int) (*manifest.Manifest, statcache.Stat, int64, error) {
	var ch *chunked
	var err error
	if r.Config.IsDataset(p) {
		ch, err = r.chunkDataset(ctx, p, nil, nil, workers, nil)
	} else {
		ch, err = r.chunkFile(ctx, p, nil, version{}, nil, workers)
	}
	if err != nil {
		return nil, statcache.Stat{}, 0, err
	}
	return ch.m, ch.stat, ch.hashed, nil
}

// trackedStat is the stat cache's Stat of tracked path p, file or
// dataset (statTracked).
func (r *Repo) trackedStat(p string) (statcache.Stat, error) {
	fi, err := os.Lstat(r.abs(p))
	return r.statTracked(p, fileInfo{fi, err})
}

// FileAt returns a local file holding p as of commit ("" = the working
// file itself). Other versions are assembled from the store into a temp
// file that cleanup removes.
func (r *Repo) FileAt(ctx context.Context, commit, p string) (name string, cleanup func(), err error) {
	if commit == "" {
		if err := manifest.CheckPath(p); err != nil {
			return "", nil, err
		}
		return r.abs(p), func() {}, nil
	}
	t := r.gitTree()
	defer t.Close()
	f, err := t.Create("chunkvc/diff")
	if err != nil {
		return "", nil, err
	}
	cleanup = f.Abort
	_, err = r.Cat(ctx, commit, p, f.File)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}
