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
}

// Merge merges revs into the current branch with git merge (several:
// an octopus merge), chunkvc's merge driver and post-merge hook installed
// first (installMergeDriver), so data files merge chunk by chunk and files only the
// other side changed are checked out. It holds no chunkvc lock: the
// driver and the hook run chunkvc themselves. On conflicts it returns the
// result with ErrMergeConflict and leaves the merge for the user to
// resolve or abort.
func (r *Repo) Merge(ctx context.Context, revs []string, message string) (*MergeRun, error) {
	if len(revs) == 0 {
		return nil, errors.New("merge: name a revision to merge")
	}
	if err := r.installMergeDriver(ctx); err != nil {
		return nil, err
	}
	cli := r.git.CLI()
	before, err := cli.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	args := []string{"merge", "--no-edit"}
	if message != "" {
		args = append(args, "-m", message)
	}
	res := &MergeRun{Merged: revs, Files: []string{}}
	_, mergeErr := cli.Run(ctx, append(append(args, "--"), revs...)...)
	r.git.Reload()
	if mergeErr != nil {
		out, err := cli.Run(ctx, "diff", "--name-only", "--diff-filter=U")
		if err != nil || strings.TrimSpace(out) == "" {
			return nil, mergeErr // it stopped before merging anything
		}
		for p := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			res.Conflicts = append(res.Conflicts, r.conflictOf(p))
		}
		return res, fmt.Errorf("%w: stopped with %d conflicted paths (resolve them and commit, or git merge --abort)", ErrMergeConflict, len(res.Conflicts))
	}
	after, err := cli.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	res.Commit = strings.TrimSpace(after)
	out, err := cli.Run(ctx, "diff", "--name-only", strings.TrimSpace(before), res.Commit, "--", ManifestDir)
	if err != nil {
		return nil, err
	}
	for p := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if rest, ok := strings.CutPrefix(p, ManifestDir+"/"); ok {
			res.Files = append(res.Files, rest)
		}
	}
	sort.Strings(res.Files)
	return res, nil
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
