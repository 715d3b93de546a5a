package repo

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// ResolveOptions says how to settle one conflicted data file of a
// stopped merge, cherry-pick or rebase.
type ResolveOptions struct {
	Path   string
	Theirs bool     // the side taken: theirs, else ours
	Keys   []string // take that side for these conflicted keys only; none: the whole file
}

// Resolve settles a conflicted data file. Whole: the file becomes that
// side's version (its manifest, root and shards, from that side's commit,
// and its bytes in the work tree). By key: the merge is made again with
// the named conflicts settled for that side, as chunkvc merge makes it
// (a COG's tiles spliced, a dataset's files written), and fails naming
// the conflicts left. Either way the manifest files are added to git's
// index: the path is no longer conflicted.
func (r *Repo) Resolve(ctx context.Context, opt ResolveOptions) (*MergeResult, error) {
	op, err := r.stopped(ctx)
	if err != nil {
		return nil, err
	}
	p := strings.TrimSuffix(opt.Path, "/")
	if err := manifest.CheckPath(p); err != nil {
		return nil, err
	}
	snaps, err := r.sides(op)
	if err != nil {
		return nil, err
	}
	if len(opt.Keys) == 0 {
		side, rev := MergedOurs, op.ours
		if opt.Theirs {
			side, rev = MergedTheirs, op.theirs
		}
		return &MergeResult{Path: p, Outcome: side}, r.takeWhole(ctx, rev, p)
	}
	side := merge3.Ours
	if opt.Theirs {
		side = merge3.Theirs
	}
	keys := map[string]bool{}
	for _, k := range opt.Keys {
		keys[k] = true
	}
	res, err := r.mergeWhole(ctx, snaps, p, func(k string) merge3.Side {
		if keys[k] {
			return side
		}
		return merge3.Same
	}, true)
	if err == nil && res != nil && res.Outcome == MergedConflict {
		err = fmt.Errorf("%s: %w (%d left)", p, ErrMergeConflict, len(res.Conflicts))
	}
	return res, err
}

// takeWhole makes p the version of commit rev: its manifest files in the
// work tree and git's index, its bytes in the work tree.
func (r *Repo) takeWhole(ctx context.Context, rev, p string) error {
	cli := r.git.CLI()
	root, shards := manifestPath(p), path.Join(manifest.ShardDir, p)
	if _, err := cli.Run(ctx, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", shards); err != nil {
		return err
	}
	if err := os.RemoveAll(r.abs(shards)); err != nil {
		return err
	}
	if _, err := cli.Run(ctx, "cat-file", "-e", rev+":"+root); err != nil {
		// That side deleted the file: so does the merge.
		if _, err := cli.Run(ctx, "rm", "-q", "-f", "--ignore-unmatch", "--", root); err != nil {
			return err
		}
		return os.RemoveAll(r.abs(p))
	}
	paths := []string{root}
	if out, err := cli.Run(ctx, "ls-tree", "--name-only", rev, "--", shards); err == nil && strings.TrimSpace(out) != "" {
		paths = append(paths, shards)
	}
	if _, err := cli.Run(ctx, append([]string{"checkout", rev, "--"}, paths...)...); err != nil {
		return err
	}
	r.git.Reload()
	_, err := r.Checkout(ctx, CheckoutOptions{Rev: rev, Paths: []string{p}})
	return err
}
