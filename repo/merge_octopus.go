package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Octopus merges. Git's octopus strategy merges a file both sides changed
// with git merge-one-file, a line merge that never calls a merge driver:
// a manifest would be merged as text, or stop the merge. chunkvc merge
// A B C D instead merges the revisions one after another with a detached
// HEAD (each step a plain chunkvc merge: the driver, then what chunkvc
// settles itself), then replaces that chain by one commit whose tree is
// the last step's and whose parents are the branch's commit and the
// revisions. The branch moves once, at the end, from the commit it was
// read at (git update-ref with the old value): a crash before leaves it
// where it was (HEAD detached at a step), and a conflict puts everything
// back.

// octopusRel marks an octopus merge under way in .git: the branch it
// merges into and that branch's commit, for a merge killed meanwhile.
const octopusRel = "chunkvc/octopus"

// octopusStart is where an octopus merge began.
type octopusStart struct {
	branch string   // refs/heads/NAME; "" when HEAD was detached
	head   string   // HEAD's commit
	todo   []string // the revisions' commits not in HEAD's history, nor in another's
	names  []string // the revision naming each of todo
}

// octopus merges revs into HEAD in one commit (see above).
func (r *Repo) octopus(ctx context.Context, revs []string, message string) (*MergeRun, error) {
	st, err := r.startOctopus(ctx, revs)
	if err != nil {
		return nil, err
	}
	res := &MergeRun{Merged: revs, Files: []string{}}
	switch len(st.todo) {
	case 0:
		res.Commit = st.head // already up to date
		return res, nil
	case 1:
		one, err := r.Merge(ctx, st.names, message)
		if one != nil {
			one.Merged = revs
		}
		return one, err
	}
	cli := r.git.CLI()
	gt := r.gitTree()
	defer gt.Close()
	if err := gt.WriteFile(octopusRel, []byte(st.branch+"\n"+st.head+"\n"), true); err != nil {
		return nil, err
	}
	if _, err := cli.Run(ctx, "checkout", "-q", "--detach"); err != nil {
		return nil, errors.Join(err, gt.Remove(octopusRel))
	}
	for i, c := range st.todo {
		step := fmt.Sprintf("chunkvc merge: step %d of %d of an octopus merge (%s)", i+1, len(st.todo), st.names[i])
		if _, err := r.mergeStep(ctx, c, step, res); err != nil {
			res.Stopped = st.names[i]
			err = r.undoOctopus(ctx, st, res, err)
			if !errors.Is(err, ErrMergeConflict) && !errors.Is(err, errNothingMerged) {
				return res, err // the marker stays: going back failed
			}
			return res, errors.Join(err, gt.Remove(octopusRel))
		}
	}
	if err := r.commitOctopus(ctx, st, message, res); err != nil {
		return res, err
	}
	return res, gt.Remove(octopusRel)
}

// cutOctopus refuses a merge while HEAD is detached at a step of an
// octopus merge that was killed: the branch is where it was (or at the
// merge commit, when only HEAD was left to attach), and the work tree at
// that step. With HEAD attached again the marker is dropped.
func (r *Repo) cutOctopus(ctx context.Context) error {
	gt := r.gitTree()
	defer gt.Close()
	b, err := gt.ReadFile(octopusRel, maxTextFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	branch, head, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if _, err := r.git.CLI().Run(ctx, "symbolic-ref", "-q", "HEAD"); err == nil || branch == "" {
		return gt.Remove(octopusRel)
	}
	name := strings.TrimPrefix(branch, "refs/heads/")
	return fmt.Errorf("merge: an octopus merge into %s (at %.12s) was cut short and left HEAD detached at one of its steps; %s itself was not moved unless the merge commit was made: go back with git checkout -f %s && chunkvc checkout --force, then merge again", name, head, name, name)
}

// startOctopus resolves revs and checks that the work tree is clean: the
// merge goes back to HEAD on a conflict, which local changes would not
// survive.
func (r *Repo) startOctopus(ctx context.Context, revs []string) (*octopusStart, error) {
	cli := r.git.CLI()
	rev := func(args ...string) (string, error) {
		out, err := cli.Run(ctx, args...)
		return strings.TrimSpace(out), err
	}
	st := &octopusStart{}
	var err error
	if st.head, err = rev("rev-parse", "--verify", "HEAD"); err != nil {
		return nil, fmt.Errorf("merge: no commit to merge into: %w", err)
	}
	st.branch, _ = rev("symbolic-ref", "-q", "HEAD")
	if _, err := r.stopped(ctx); !errors.Is(err, ErrNoStoppedMerge) {
		return nil, errors.New("merge: a merge, cherry-pick or rebase is stopped here: finish or abort it first")
	}
	if out, err := rev("status", "--porcelain", "--untracked-files=no"); err != nil || out != "" {
		return nil, fmt.Errorf("merge: an octopus merge needs a clean work tree, and git has local changes (commit or stash them):\n%s%w", out, err)
	}
	changed, err := r.Status(ctx)
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 {
		return nil, fmt.Errorf("merge: an octopus merge needs a clean work tree, and %s is %s (commit it, or chunkvc checkout --force)", changed[0].Path, changed[0].Status)
	}
	commits := make([]string, len(revs))
	for i, name := range revs {
		if commits[i], err = rev("rev-parse", "-q", "--verify", name+"^{commit}"); err != nil || commits[i] == "" {
			return nil, fmt.Errorf("merge: %s is no commit", name)
		}
	}
	contains := func(a, b string) bool { // a's history holds b
		_, err := cli.Run(ctx, "merge-base", "--is-ancestor", b, a)
		return err == nil
	}
	for i, c := range commits {
		merged := contains(st.head, c)
		for j, o := range commits {
			merged = merged || (o != c && contains(o, c)) || (o == c && j < i)
		}
		if !merged {
			st.todo, st.names = append(st.todo, c), append(st.names, revs[i])
		}
	}
	return st, r.octopusOverwrites(ctx, st)
}

// octopusOverwrites refuses an octopus merge that would add a data file
// where the work tree already has something chunkvc does not track here
// (HEAD's patterns did not cover it, so status did not see it): going
// back after a conflict removes the files the merged steps added, and
// must never remove bytes that were never stored.
func (r *Repo) octopusOverwrites(ctx context.Context, st *octopusStart) error {
	wt := r.workTree()
	defer wt.Close()
	for i, c := range st.todo {
		added, err := r.git.CLI().Run(ctx, "diff", "--name-only", "--diff-filter=A", st.head, c, "--", ManifestDir)
		if err != nil {
			return err
		}
		for p := range strings.SplitSeq(strings.TrimSpace(added), "\n") {
			rest, ok := strings.CutPrefix(p, ManifestDir+"/")
			if _, err := wt.Lstat(rest); ok && err == nil {
				return fmt.Errorf("merge: %s adds %s, which is already in the work tree but not tracked here: move it away (or commit it) first", st.names[i], rest)
			}
		}
	}
	return nil
}

// commitOctopus makes the merge commit of st's HEAD and revisions over
// the tree the steps made, moves the branch to it (checking it is still
// at st.head) and attaches HEAD to the branch again; the index and work
// tree already hold that tree.
func (r *Repo) commitOctopus(ctx context.Context, st *octopusStart, message string, res *MergeRun) error {
	cli := r.git.CLI()
	tree, err := cli.Run(ctx, "rev-parse", "--verify", "HEAD^{tree}")
	if err != nil {
		return err
	}
	step, err := cli.Run(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return err
	}
	if message == "" {
		message = r.octopusMessage(ctx, st.names)
	}
	args := []string{"commit-tree", strings.TrimSpace(tree), "-m", message}
	res.Parents = append([]string{st.head}, st.todo...)
	for _, p := range res.Parents {
		args = append(args, "-p", p)
	}
	out, err := cli.Run(ctx, args...)
	if err != nil {
		return err
	}
	commit := strings.TrimSpace(out)
	why := "merge " + strings.Join(st.names, " ") + ": octopus merge by chunkvc"
	// The branch and HEAD move together: an interrupt between the two
	// would leave the branch moved and HEAD detached.
	both := context.WithoutCancel(ctx)
	if st.branch == "" {
		_, err = cli.Run(both, "update-ref", "--no-deref", "-m", why, "HEAD", commit, strings.TrimSpace(step))
	} else if _, err = cli.Run(both, "update-ref", "-m", why, st.branch, commit, st.head); err == nil {
		_, err = cli.Run(both, "symbolic-ref", "-m", why, "HEAD", st.branch)
	}
	r.git.Reload()
	if err != nil {
		return fmt.Errorf("merge: %s moved while merging; HEAD is left detached at the merged tree (commit %.12s holds the merge): %w", st.branch, commit, err)
	}
	_, _ = cli.Run(ctx, "update-ref", "ORIG_HEAD", st.head) // as git merge leaves it
	// The steps' post-merge hooks wrote the data files; a hook that failed
	// says nothing to git, so check the work tree holds the merge.
	if _, err := r.Checkout(ctx, CheckoutOptions{}); err != nil {
		return err
	}
	return r.mergedFiles(ctx, st.head, res)
}

// octopusMessage is git's message for an octopus merge of names:
// "Merge branches 'a', 'b' and 'c'" ("Merge 'a', …" when one is no
// local branch).
func (r *Repo) octopusMessage(ctx context.Context, names []string) string {
	kind := "branches "
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
		if _, err := r.git.CLI().Run(ctx, "show-ref", "-q", "--verify", "refs/heads/"+n); err != nil {
			kind = ""
		}
	}
	last := len(quoted) - 1
	return "Merge " + kind + strings.Join(quoted[:last], ", ") + " and " + quoted[last]
}

// undoOctopus puts the branch, HEAD, the index and the work tree back as
// st found them after step res.Stopped failed with cause, and returns the
// error that says so. Data files the finished steps added are removed.
func (r *Repo) undoOctopus(ctx context.Context, st *octopusStart, res *MergeRun, cause error) error {
	// Going back must not stop halfway because the merge was interrupted
	// (Ctrl-C cancels ctx, and with it every git command run under it).
	ctx = context.WithoutCancel(ctx)
	cli := r.git.CLI()
	added, _ := cli.Run(ctx, "diff", "--name-only", "--diff-filter=A", st.head, "HEAD", "--", ManifestDir)
	var errs []error
	run := func(args ...string) {
		if _, err := cli.Run(ctx, args...); err != nil {
			errs = append(errs, err)
		}
	}
	run("reset", "-q", "--hard") // drops the stopped step's state (MERGE_HEAD…)
	if st.branch != "" {
		run("symbolic-ref", "HEAD", st.branch)
		run("reset", "-q", "--hard")
	} else {
		run("reset", "-q", "--hard", st.head)
	}
	r.git.Reload()
	if _, err := r.Checkout(ctx, CheckoutOptions{Force: true}); err != nil {
		errs = append(errs, err)
	}
	wt := r.workTree()
	defer wt.Close()
	for p := range strings.SplitSeq(strings.TrimSpace(added), "\n") {
		rest, ok := strings.CutPrefix(p, ManifestDir+"/")
		if fi, err := wt.Lstat(rest); ok && err == nil && fi.Mode().IsRegular() { // a dataset's directory stays
			if err := wt.Remove(rest); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		// cause is quoted, not wrapped: this is no plain conflict, the
		// work tree is not as it was.
		return fmt.Errorf("merge %s stopped (%v), and going back to %.12s failed: %w", res.Stopped, cause, st.head, errors.Join(errs...))
	}
	if !errors.Is(cause, ErrMergeConflict) {
		return fmt.Errorf("merge %s: %w (%w: HEAD, the index and the work tree are as they were)", res.Stopped, cause, errNothingMerged)
	}
	var where []string
	for _, c := range res.Conflicts {
		if keys := conflictKeys(c.Lines); len(keys) > 0 {
			where = append(where, c.Path+" ("+strings.Join(keys, ", ")+")")
		} else {
			where = append(where, c.Path)
		}
	}
	return fmt.Errorf("%w: merging %s conflicts in %s; nothing was merged (HEAD, the index and the work tree are as they were): merge %s alone (chunkvc merge %s) to resolve it, then the others",
		ErrMergeConflict, res.Stopped, strings.Join(where, ", "), res.Stopped, res.Stopped)
}

// errNothingMerged is an octopus merge that failed and went back.
var errNothingMerged = errors.New("nothing was merged")

// conflictKeys are the chunk keys conflict lines name ("conflict KEY
// [bbox]: reason"); a whole-file line ("conflict: reason") names none.
func conflictKeys(lines []string) []string {
	var keys []string
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, "conflict ")
		if !ok {
			continue
		}
		if i := strings.IndexAny(rest, " :"); i > 0 {
			keys = append(keys, rest[:i])
		}
	}
	return keys
}
