package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
	"github.com/chunkvc/chunkvc/store"
)

// PushOptions configures Push.
type PushOptions struct {
	Remote   string // default "origin"
	Verify   Verify
	Progress progress.Counter
	// OnlyChunks uploads and verifies chunks but does not push Git refs
	// (the pre-push hook: git pushes the refs itself).
	OnlyChunks bool
	// Tips, when set, are the commits to push instead of HEAD, and Except
	// the commits the remote already has (from the pre-push hook's stdin).
	Tips, Except []string
	// Policy is how the policies of .chunkvc/config judge the pushed
	// commits (AllowReencode: push --allow-reencode).
	Policy PolicyOptions
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
	// Stages are the push's steps: scan (the commits to push and the
	// chunks they reference; items: chunks), upload (what the store
	// lacked, uploaded and verified; items and bytes_out: chunks and
	// bytes uploaded) and git (git push).
	Stages []Stage `json:"stages,omitempty"`
}

// Push makes sure the configured store holds every chunk and layout that
// the commits being pushed reference (uploading and verifying what only the
// embedded store has, from commit --offline), and only then pushes the
// branch. The Git remote never advances before its chunks are verified.
func (r *Repo) Push(ctx context.Context, opt PushOptions) (*PushResult, error) {
	if opt.Remote == "" {
		opt.Remote = "origin"
	}
	res := &PushResult{Remote: opt.Remote, Branch: r.git.Branch()}
	if opt.OnlyChunks && gitdb.PushVerified(opt.Tips) {
		return res, nil // chunkvc push checked them before it ran git push
	}
	clock := startStages()
	clock.watch(r.Store)
	tips := opt.Tips
	except := opt.Except
	if len(tips) == 0 {
		head, err := r.git.Head()
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
		if h, ok, err := r.git.Refs().Read("refs/remotes/" + opt.Remote + "/" + res.Branch); err == nil && ok {
			except = append(except, h.String())
		}
	}
	commits, err := r.git.CommitsBetween(hashesOf(tips), hashesOf(except))
	if err != nil {
		return nil, err
	}
	res.Commits = len(commits)
	if err := r.checkPushed(commits, opt.Policy); err != nil {
		return nil, err
	}
	need, mayLack, err := r.pushSet(ctx, commits)
	if err != nil {
		return nil, err
	}
	res.Chunks = len(need)
	clock.lap("scan", int64(len(need)), 0, 0)
	up, bytes, err := r.ensureStored(ctx, need, mayLack, opt.Verify, progress.OrNoop(opt.Progress), clock)
	res.ChunksUploaded, res.BytesUploaded = up, bytes
	if err != nil {
		return res, err
	}
	clock.lap("upload", int64(up), 0, bytes)
	res.Stages = clock.stages
	if err := r.registerIn(ctx, r.Store, "chunks stored, nothing pushed"); err != nil {
		return res, err
	}
	if opt.OnlyChunks {
		return res, nil
	}
	if os.Getenv("CHUNKVC_FAILPOINT") == "push-before-git" {
		return res, errors.New("failpoint push-before-git: stopping after the chunk upload")
	}
	pushed, err := r.git.Push(ctx, opt.Remote, res.Branch, tips[0])
	if err != nil {
		return res, err
	}
	res.GitPushed = pushed
	clock.lap("git", int64(res.Commits), 0, 0)
	res.Stages = clock.stages
	return res, nil
}

// ensureStored checks which ids the configured store lacks (in batches,
// in parallel) and uploads those from the embedded store or alternates;
// an id of mayLack that no store has is passed over (see pushSet).
func (r *Repo) ensureStored(ctx context.Context, need reach.Set, mayLack reach.Set, v Verify, prog progress.Counter, clock *stageClock) (int, int64, error) {
	ids := make([]hashing.ID, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	present, err := store.HasMany(ctx, r.Store, ids)
	if err != nil {
		return 0, 0, fmt.Errorf("store %s: %w", r.Store, err)
	}
	var missing []hashing.ID
	var total int64
	for _, id := range ids {
		if !present[id] {
			missing = append(missing, id)
			total += need[id].Size
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
	clock.up = up
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(store.Connections(r.Store))
	for _, id := range missing {
		g.Go(func() error {
			data, src, err := r.read.Get(gctx, id)
			if (err != nil || src == readpath.FromRemote) && mayLack.Has(id) {
				return nil // gone with an expired commit, on purpose
			}
			if err != nil || src == readpath.FromRemote {
				u := need[id]
				return fmt.Errorf("chunk %s of %s (commit %.12s, %s) is in no store: %w", u.Key, u.Path, u.Commit, id, errNoChunk)
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

// hashesOf reads commit names given as hex (gitdb.HashOf).
func hashesOf(hs []string) []gitdb.Hash {
	out := make([]gitdb.Hash, len(hs))
	for i, h := range hs {
		out[i] = gitdb.HashOf(h)
	}
	return out
}

// CloneOptions configures Clone.
type CloneOptions struct {
	URL, Dir string
	Lazy     bool   // manifests only; no chunk is downloaded
	Branch   string // the branch to check out; "" = the remote's HEAD
	// TrustStore trusts the store the clone's .chunkvc/config names (see
	// TrustStore) before any chunk is read. Without it, a clone whose store
	// is an untrusted local directory gets its manifests only, its files
	// marked as not checked out, and an error wrapping ErrUntrustedStore
	// that says what to run.
	TrustStore bool
	Native     Adapters
	Progress   progress.Counter
}

// CloneResult reports a clone.
type CloneResult struct {
	Branch string `json:"branch"`
	// BranchChosen says the remote's HEAD named no branch it has (a bare
	// repository whose HEAD names master when only main was pushed), so
	// chunkvc chose Branch: the only one, or main, or master.
	BranchChosen bool            `json:"branch_chosen,omitempty"`
	Checkout     *CheckoutResult `json:"checkout"`
}

var (
	// ErrNoBranch means a clone could not tell which branch to check out.
	ErrNoBranch = gitdb.ErrNoBranch
	// ErrPushRejected means the Git remote refused the branch (it has
	// commits this clone lacks): pull, then push again.
	ErrPushRejected = gitdb.ErrPushRejected
)

// Clone clones the Git repository at opt.URL into opt.Dir with git and,
// unless lazy, materialises every tracked file. The store comes from the
// committed config; a clone of a local repository with an embedded store
// reads that store as an alternate.
func Clone(ctx context.Context, opt CloneOptions) (*Repo, *CloneResult, error) {
	if _, err := os.Stat(opt.Dir); err == nil {
		if ents, _ := os.ReadDir(opt.Dir); len(ents) > 0 {
			return nil, nil, fmt.Errorf("destination %s exists and is not empty", opt.Dir)
		}
	}
	branch, chosen, err := gitdb.Clone(ctx, opt.URL, opt.Dir, opt.Branch)
	if err != nil {
		return nil, nil, err
	}
	res := &CloneResult{Branch: branch, BranchChosen: chosen}
	r, err := Open(opt.Dir, opt.Native)
	if err != nil {
		return nil, res, err
	}
	if r.Config.Store == "" {
		src := opt.URL
		if st, err := os.Stat(filepath.Join(src, ".git", "chunkvc", "store")); err == nil && st.IsDir() {
			abs, _ := filepath.Abs(filepath.Join(src, ".git", "chunkvc", "store"))
			if err := r.addAlternate(abs); err != nil {
				return nil, res, err
			}
			if err := r.setupReadPath(); err != nil {
				return nil, res, err
			}
		}
	}
	if opt.TrustStore {
		if _, err := r.TrustStore(); err != nil {
			return r, res, err
		}
	}
	if opt.Lazy || !r.storeInfo.Trusted {
		if err := r.markLazy(); err != nil || opt.Lazy {
			return r, res, err
		}
		return r, res, fmt.Errorf("cloned into %s without its files; once the store is trusted, run `chunkvc checkout` there: %w", r.Root, r.untrustedError(r.storeInfo))
	}
	res.Checkout, err = r.Checkout(ctx, CheckoutOptions{Progress: opt.Progress})
	return r, res, err
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
	updated, err := r.git.Fetch(ctx, remote)
	if err != nil {
		return nil, err
	}
	return &FetchResult{Remote: remote, Updated: updated}, nil
}

// Pull fast-forwards the branch from remote and checks out the files that
// changed, downloading only chunks no working file holds. Its stages are
// git (fetch, and the merge when both sides committed), then the
// checkout's plan and write.
func (r *Repo) Pull(ctx context.Context, remote string, prog progress.Counter) (*CheckoutResult, error) {
	if remote == "" {
		remote = "origin"
	}
	head, err := r.git.Head()
	if err != nil {
		return nil, err
	}
	clock := startStages()
	clock.watch(r.Store)
	fresh := false
	if head != nil {
		if fresh, err = r.setPullBase(head.Hash); err != nil {
			return nil, err
		}
	}
	var merged *MergeRun
	if err := r.git.Pull(ctx, remote); err != nil {
		var dv *gitdb.DivergedError
		if errors.As(err, &dv) {
			// Both sides committed: merge, data chunk by chunk.
			merged, err = r.Merge(ctx, []string{dv.Upstream}, "")
		}
		if err != nil {
			if fresh {
				_ = r.clearPullBase() // HEAD did not move
			}
			if merged != nil {
				return &CheckoutResult{Merged: merged}, err
			}
			return nil, err
		}
	}
	if os.Getenv("CHUNKVC_FAILPOINT") == "pull-after-merge" {
		return nil, errors.New("failpoint pull-after-merge: stopping after git moved HEAD")
	}
	if err := r.reloadConfig(); err != nil {
		return nil, err
	}
	clock.lap("git", 0, 0, 0) // fetch, and merge
	co, err := r.Checkout(ctx, CheckoutOptions{Progress: prog})
	if co != nil {
		co.Merged = merged
		co.Stages = append(clock.stages, co.Stages...)
	}
	return co, err
}

// reloadConfig reads .chunkvc/config again after git changed the work
// tree (a pull): tracked patterns and, through the trust check, the store
// the new config names, so a pulled store = line is refused at once.
func (r *Repo) reloadConfig() error {
	data, err := os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(ConfigPath)))
	if err != nil {
		return fmt.Errorf("%s: %w", ConfigPath, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return fmt.Errorf("%s: %w", ConfigPath, err)
	}
	if cfg.Store == r.Config.Store {
		r.Config = cfg
		return nil
	}
	info, err := r.resolveStore(cfg.Store)
	if err != nil {
		return err
	}
	r.Config = cfg
	return r.useStore(info, false)
}

// markLazy records every file of HEAD as deliberately not materialised.
func (r *Repo) markLazy() error {
	head, err := r.git.Head()
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
			cache.Put(p, statcache.Entry{Lazy: true})
		}
	}
	return cache.Save()
}
