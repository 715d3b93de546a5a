package repo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// ConflictedPath is one path git left conflicted, with chunkvc's conflict
// lines for a data file's manifest ("conflict z0/r0/c0 [bbox]: reason").
type ConflictedPath struct {
	Path  string   `json:"path"`
	Lines []string `json:"conflicts,omitempty"`
}

// MergeRun reports chunkvc merge.
type MergeRun struct {
	Commit    string           `json:"commit,omitempty"` // the merge commit; "" when stopped
	Merged    []string         `json:"merged"`           // the revisions asked for
	Files     []string         `json:"files"`            // data files the merge changed
	Conflicts []ConflictedPath `json:"conflicts,omitempty"`
	// Resolved are the files chunkvc merged after git stopped on them
	// (split manifests, datasets), or could not.
	Resolved []*MergeResult `json:"resolved,omitempty"`
	// Parents are the merge commit's parents: HEAD before, then each
	// revision merged (one already in HEAD's history, or in another's,
	// is left out).
	Parents []string `json:"parents,omitempty"`
	// Stopped is the revision an octopus merge stopped on (a conflict),
	// after which everything went back to HEAD as it was.
	Stopped string `json:"stopped_at,omitempty"`
}

// Merge merges revs into the current branch with git merge, chunkvc's
// merge driver and post-merge hook installed first (installMergeDriver),
// so data files merge chunk by chunk and files only the other side
// changed are checked out. Several revs make one octopus merge commit
// (octopus). It holds no chunkvc lock: the driver and the hook run
// chunkvc themselves. On conflicts it returns the result with
// ErrMergeConflict and, for one rev, leaves the merge for the user to
// resolve or abort.
func (r *Repo) Merge(ctx context.Context, revs []string, message string) (*MergeRun, error) {
	if len(revs) == 0 {
		return nil, errors.New("merge: name a revision to merge")
	}
	if err := r.cutOctopus(ctx); err != nil {
		return nil, err
	}
	if err := r.installMergeDriver(ctx); err != nil {
		return nil, err
	}
	if len(revs) > 1 {
		return r.octopus(ctx, revs, message)
	}
	res := &MergeRun{Merged: revs, Files: []string{}}
	before, err := r.git.CLI().Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	started, err := r.mergeStep(ctx, revs[0], message, res)
	switch {
	case err != nil && !started:
		return nil, err
	case err != nil:
		return res, err
	}
	return res, r.mergedFiles(ctx, strings.TrimSpace(before), res)
}

// mergeStep runs git merge of rev and, when git stopped on conflicts,
// settles what chunkvc merges itself and commits (finish), adding what
// it settled to res. started is false when git stopped before merging
// anything (an unknown revision, local changes in the way); a merge left
// with conflicts returns an error wrapping ErrMergeConflict.
func (r *Repo) mergeStep(ctx context.Context, rev, message string, res *MergeRun) (started bool, err error) {
	args := []string{"merge", "--no-edit"}
	if message != "" {
		args = append(args, "-m", message)
	}
	_, mergeErr := r.git.CLI().Run(ctx, append(args, "--", rev)...)
	r.git.Reload()
	if mergeErr == nil {
		return true, nil
	}
	if paths, err := r.unmerged(ctx); err != nil || len(paths) == 0 {
		return false, mergeErr
	}
	return true, r.finish(ctx, res)
}

// MergeContinue settles what a stopped git merge, cherry-pick or rebase
// left to chunkvc (split manifests and datasets both sides changed) and,
// for a merge with nothing left conflicted, makes the merge commit.
func (r *Repo) MergeContinue(ctx context.Context) (*MergeRun, error) {
	op, err := r.stopped(ctx)
	if err != nil {
		return nil, err
	}
	res := &MergeRun{Merged: []string{op.theirs}, Files: []string{}}
	if err := r.finish(ctx, res); err != nil || op.kind != "merge" {
		return res, err
	}
	return res, r.mergedFiles(ctx, op.ours, res)
}

// finish settles the whole-file merges of a stopped operation and, when
// no path is left conflicted, commits a merge (git commit --no-edit,
// whose message git prepared) and checks out what it changed, as the
// post-merge hook does after a merge git finished itself.
func (r *Repo) finish(ctx context.Context, res *MergeRun) error {
	op, err := r.stopped(ctx)
	if err != nil {
		return err
	}
	resolved, err := r.settleWhole(ctx, op)
	res.Resolved = append(res.Resolved, resolved...)
	if err != nil {
		return err
	}
	left, err := r.unmerged(ctx)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		for _, p := range left {
			res.Conflicts = append(res.Conflicts, r.conflictOf(p))
		}
		return fmt.Errorf("%w: stopped with %d conflicted paths (resolve them and commit, or git merge --abort)", ErrMergeConflict, len(res.Conflicts))
	}
	if op.kind != "merge" {
		return nil // git cherry-pick|rebase --continue commits
	}
	if _, err := r.git.CLI().Run(ctx, "commit", "--no-edit"); err != nil {
		return err
	}
	r.git.Reload()
	_, err = r.Checkout(ctx, CheckoutOptions{})
	return err
}

// mergedFiles fills res's commit and the data files it changed since
// before.
func (r *Repo) mergedFiles(ctx context.Context, before string, res *MergeRun) error {
	cli := r.git.CLI()
	after, err := cli.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	res.Commit = strings.TrimSpace(after)
	out, err := cli.Run(ctx, "diff", "--name-only", before, res.Commit, "--", ManifestDir)
	if err != nil {
		return err
	}
	for p := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if rest, ok := strings.CutPrefix(p, ManifestDir+"/"); ok {
			res.Files = append(res.Files, rest)
		}
	}
	sort.Strings(res.Files)
	return nil
}

// conflictOf reads the conflict lines the merge driver wrote into the
// manifest at path p (none for other files).
func (r *Repo) conflictOf(p string) ConflictedPath {
	c := ConflictedPath{Path: p}
	rest, ok := strings.CutPrefix(p, ManifestDir+"/")
	if !ok {
		return c
	}
	c.Path = rest
	wt := r.workTree()
	defer wt.Close()
	b, err := wt.ReadFile(p, maxTextFile)
	if err != nil {
		return c
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "conflict ") || strings.HasPrefix(l, "conflict:") {
			c.Lines = append(c.Lines, l)
		}
	}
	return c
}

// installMergeDriver makes git merge use chunkvc's driver for manifests
// without touching the work tree (whose changes would stop the merge):
// the attribute goes to .git/info/attributes, the driver to .git/config,
// and the post-merge hook is written. chunkvc install does the same
// through .gitattributes, for plain git merge in every clone.
func (r *Repo) installMergeDriver(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		exe = "chunkvc"
	}
	if err := r.setMergeDriver(ctx, exe); err != nil {
		return err
	}
	gt := r.gitTree()
	defer gt.Close()
	old, err := gt.ReadFile("info/attributes", maxTextFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if text := string(old); !hasLine(text, MergeAttribute) {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if err := gt.WriteFile("info/attributes", []byte(text+MergeAttribute+"\n"), false); err != nil {
			return err
		}
	}
	return r.installPostMerge(exe)
}
