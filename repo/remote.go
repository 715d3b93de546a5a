package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/store"
)

// BatchStater is implemented by stores that can check many objects at
// once (S3: parallel HEADs) cheaper than one Stat at a time.
type BatchStater interface {
	HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error)
}

// PushOptions configures Push.
type PushOptions struct {
	Remote   string // default "origin"
	Verify   Verify
	Progress progress.Counter
	// OnlyChunks uploads and verifies chunks but does not push Git refs
	// (the pre-push hook: git pushes the refs itself).
	OnlyChunks bool
	// Commits, when set, are the tips to push instead of HEAD, and Except
	// the commits the remote already has (from the pre-push hook's stdin).
	Tips, Except []string
}

// PushResult reports a push.
type PushResult struct {
	Remote         string `json:"remote"`
	Branch         string `json:"branch"`
	Commits        int    `json:"commits"`
	Chunks         int    `json:"chunks"`
	ChunksUploaded int    `json:"chunks_uploaded"`
	BytesUploaded  int64  `json:"bytes_uploaded"`
	GitPushed      bool   `json:"git_pushed"`
}

// Push makes sure the configured store holds every chunk and layout that
// the commits being pushed reference (uploading and verifying what only the
// embedded store has, from commit --offline), and only then pushes the
// branch. The Git remote never advances before its chunks are verified.
func (r *Repo) Push(ctx context.Context, opt PushOptions) (*PushResult, error) {
	if opt.Remote == "" {
		opt.Remote = "origin"
	}
	res := &PushResult{Remote: opt.Remote, Branch: r.git.branch()}
	tips := opt.Tips
	except := opt.Except
	if len(tips) == 0 {
		head, err := r.git.head()
		if err != nil {
			return nil, err
		}
		if head == nil {
			return nil, ErrNoCommits
		}
		if res.Branch == "HEAD" {
			return nil, errors.New("HEAD is detached: check out a branch to push")
		}
		tips = []string{head.Hash.String()}
		if ref, err := r.git.r.Reference(plumbing.NewRemoteReferenceName(opt.Remote, res.Branch), true); err == nil {
			except = append(except, ref.Hash().String())
		}
	}
	commits, err := r.git.commitsBetween(tips, except)
	if err != nil {
		return nil, err
	}
	res.Commits = len(commits)
	need, err := r.referenced(commits)
	if err != nil {
		return nil, err
	}
	res.Chunks = len(need)
	up, bytes, err := r.ensureStored(ctx, need, opt.Verify, progress.OrNoop(opt.Progress))
	res.ChunksUploaded, res.BytesUploaded = up, bytes
	if err != nil {
		return res, err
	}
	if err := r.registerIn(ctx, r.Store, "chunks stored, nothing pushed"); err != nil {
		return res, err
	}
	if opt.OnlyChunks {
		return res, nil
	}
	if os.Getenv("CHUNKVC_FAILPOINT") == "push-before-git" {
		return res, errors.New("failpoint push-before-git: stopping after the chunk upload")
	}
	ref := plumbing.NewBranchReferenceName(res.Branch)
	err = r.git.r.PushContext(ctx, &git.PushOptions{
		RemoteName: opt.Remote,
		RefSpecs:   []gitconfig.RefSpec{gitconfig.RefSpec(ref.String() + ":" + ref.String())},
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return res, fmt.Errorf("git push %s %s: %w", opt.Remote, res.Branch, err)
	}
	res.GitPushed = err == nil
	return res, nil
}

// chunkUse says where a referenced object first appears, for messages.
type chunkUse struct {
	commit, path, key string
	size              int64
}

// referenced collects every chunk and layout id the commits' manifests
// name.
func (r *Repo) referenced(commits []*object.Commit) (map[hashing.ID]chunkUse, error) {
	need := map[hashing.ID]chunkUse{}
	seen := map[plumbing.Hash]bool{}
	for _, c := range commits {
		blobs, err := r.git.manifestBlobs(c)
		if err != nil {
			return nil, err
		}
		for p, h := range blobs {
			if seen[h] {
				continue
			}
			seen[h] = true
			m, _, err := r.git.readManifestBlob(h, p)
			if err != nil {
				return nil, err
			}
			if _, ok := need[m.Layout]; !ok {
				need[m.Layout] = chunkUse{c.Hash.String(), p, "(layout)", m.LayoutSize}
			}
			for _, ch := range m.Chunks {
				if _, ok := need[ch.ID]; !ok {
					need[ch.ID] = chunkUse{c.Hash.String(), p, ch.Key, ch.Size}
				}
			}
		}
	}
	return need, nil
}

// ensureStored checks which ids the configured store lacks (in batches,
// in parallel) and uploads those from the embedded store or alternates.
func (r *Repo) ensureStored(ctx context.Context, need map[hashing.ID]chunkUse, v Verify, prog progress.Counter) (int, int64, error) {
	ids := make([]hashing.ID, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	present, err := hasMany(ctx, r.Store, ids)
	if err != nil {
		return 0, 0, fmt.Errorf("store %s: %w", r.Store, err)
	}
	var missing []hashing.ID
	var total int64
	for _, id := range ids {
		if !present[id] {
			missing = append(missing, id)
			total += need[id].size
		}
	}
	if len(missing) == 0 {
		return 0, 0, nil
	}
	prog.Start("upload chunks", total)
	defer prog.Done()
	up, err := newUpload(ctx, r.Store, v, prog)
	if err != nil {
		return 0, 0, err
	}
	defer up.abort()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(connections(r.Store))
	for _, id := range missing {
		g.Go(func() error {
			data, src, err := r.read.get(gctx, id)
			if err != nil || src == fromRemote {
				u := need[id]
				return fmt.Errorf("chunk %s of %s (commit %.12s, %s) is in no store: %w", u.key, u.path, u.commit, id, errNoChunk)
			}
			if _, err := up.ensure(gctx, id, data, hashing.ID{}); err != nil {
				return err
			}
			prog.Add(int64(len(data)))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, 0, err
	}
	if err := up.finish(ctx); err != nil {
		return 0, 0, err
	}
	return int(up.chunks.Load()), up.bytes.Load(), nil
}

// hasMany asks the store about many ids, batched when it can.
func hasMany(ctx context.Context, s store.Store, ids []hashing.ID) (map[hashing.ID]bool, error) {
	if b, ok := s.(BatchStater); ok {
		return b.HasMany(ctx, ids)
	}
	out := make(map[hashing.ID]bool, len(ids))
	res := make([]bool, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(connections(s))
	for i, id := range ids {
		g.Go(func() error {
			ok, err := store.Has(gctx, s, id)
			res[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, id := range ids {
		out[id] = res[i]
	}
	return out, nil
}

// connections is the store's preferred parallelism.
func connections(s store.Store) int {
	if c, ok := s.(interface{ Connections() int }); ok && c.Connections() > 0 {
		return c.Connections()
	}
	return 8
}

// commitsBetween lists commits reachable from tips but not from except.
func (g *gitRepo) commitsBetween(tips, except []string) ([]*object.Commit, error) {
	stop := map[plumbing.Hash]bool{}
	for _, e := range except {
		h := plumbing.NewHash(e)
		if h.IsZero() {
			continue
		}
		c, err := g.r.CommitObject(h)
		if err != nil {
			continue // the remote has a commit we do not know: nothing to exclude by it
		}
		iter := object.NewCommitPreorderIter(c, stop, nil)
		_ = iter.ForEach(func(c *object.Commit) error { stop[c.Hash] = true; return nil })
	}
	var out []*object.Commit
	seen := map[plumbing.Hash]bool{}
	for _, t := range tips {
		h := plumbing.NewHash(t)
		if h.IsZero() {
			continue
		}
		c, err := g.r.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", t, err)
		}
		iter := object.NewCommitPreorderIter(c, stop, nil)
		err = iter.ForEach(func(c *object.Commit) error {
			if !seen[c.Hash] && !stop[c.Hash] {
				seen[c.Hash] = true
				out = append(out, c)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Clone clones the Git repository at url into dir and, unless lazy,
// materialises every tracked file. The store comes from the committed
// config; a clone of a local repository with an embedded store reads that
// store as an alternate.
func Clone(ctx context.Context, url, dir string, lazy bool, native Adapters, prog progress.Counter) (*Repo, *CheckoutResult, error) {
	if _, err := os.Stat(dir); err == nil {
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			return nil, nil, fmt.Errorf("destination %s exists and is not empty", dir)
		}
	}
	if _, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{URL: url}); err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("git clone %s: %w", url, err)
	}
	r, err := Open(dir, native)
	if err != nil {
		return nil, nil, err
	}
	if r.Config.Store == "" {
		src := url
		if st, err := os.Stat(filepath.Join(src, ".git", "chunkvc", "store")); err == nil && st.IsDir() {
			abs, _ := filepath.Abs(filepath.Join(src, ".git", "chunkvc", "store"))
			if err := r.addAlternate(abs); err != nil {
				return nil, nil, err
			}
			if err := r.setupReadPath(); err != nil {
				return nil, nil, err
			}
		}
	}
	if lazy {
		return r, nil, r.markLazy()
	}
	co, err := r.Checkout(ctx, CheckoutOptions{Progress: prog})
	return r, co, err
}

// FetchResult reports a fetch.
type FetchResult struct {
	Remote        string `json:"remote"`
	Updated       bool   `json:"updated"`
	ChunksFetched int    `json:"chunks_fetched"`
	BytesFetched  int64  `json:"bytes_fetched"`
}

// Fetch runs git fetch for remote.
func (r *Repo) Fetch(ctx context.Context, remote string) (*FetchResult, error) {
	if remote == "" {
		remote = "origin"
	}
	err := r.git.r.FetchContext(ctx, &git.FetchOptions{RemoteName: remote})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("git fetch %s: %w", remote, err)
	}
	return &FetchResult{Remote: remote, Updated: err == nil}, nil
}

// Pull fast-forwards the branch from remote and checks out the files that
// changed, downloading only chunks no working file holds.
func (r *Repo) Pull(ctx context.Context, remote string, prog progress.Counter) (*CheckoutResult, error) {
	if remote == "" {
		remote = "origin"
	}
	wt, err := r.git.r.Worktree()
	if err != nil {
		return nil, err
	}
	err = wt.PullContext(ctx, &git.PullOptions{RemoteName: remote})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("git pull %s (fast-forward only): %w", remote, err)
	}
	return r.Checkout(ctx, CheckoutOptions{Progress: prog})
}

// markLazy records every file of HEAD as deliberately not materialised.
func (r *Repo) markLazy() error {
	head, err := r.git.head()
	if err != nil || head == nil {
		return err
	}
	blobs, err := r.git.manifestBlobs(head)
	if err != nil {
		return err
	}
	cache := r.loadStatCache()
	for p := range blobs {
		if ok, _ := exists(r.abs(p)); !ok {
			cache.put(p, cacheEntry{Lazy: true})
		}
	}
	return cache.save()
}
