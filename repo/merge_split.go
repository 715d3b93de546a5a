package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// Merges git's driver cannot make. Git hands the merge driver one file
// at a time: a split manifest's root without its shards, a dataset's
// root without its members. Those conflicts are settled here, once git
// has stopped and the three sides are commits: chunkvc merge does it
// right after git merge, and chunkvc merge --continue after a plain
// git merge, git pull or git cherry-pick stopped on them.

// stoppedOp is a merge or cherry-pick git stopped with conflicts: the
// commits of its three sides (base "" when theirs has no parent).
type stoppedOp struct {
	kind               string // "merge", "cherry-pick", "rebase"
	base, ours, theirs string
}

// ErrNoStoppedMerge is merge --continue with no merge, cherry-pick or
// rebase stopped.
var ErrNoStoppedMerge = errors.New("no merge, cherry-pick or rebase is stopped here")

// stopped finds the operation git stopped in.
func (r *Repo) stopped(ctx context.Context) (*stoppedOp, error) {
	cli := r.git.CLI()
	rev := func(args ...string) (string, error) {
		out, err := cli.Run(ctx, args...)
		return strings.TrimSpace(out), err
	}
	ours, err := rev("rev-parse", "--verify", "HEAD")
	if err != nil {
		return nil, err
	}
	for _, k := range []struct{ ref, kind string }{{"MERGE_HEAD", "merge"}, {"CHERRY_PICK_HEAD", "cherry-pick"}, {"REBASE_HEAD", "rebase"}} {
		theirs, err := rev("rev-parse", "-q", "--verify", k.ref)
		if err != nil || theirs == "" {
			continue
		}
		op := &stoppedOp{kind: k.kind, ours: ours, theirs: theirs}
		if k.kind == "merge" {
			all, _ := r.gitTree().ReadFile("MERGE_HEAD", maxTextFile)
			if strings.Count(strings.TrimSpace(string(all)), "\n") > 0 {
				return nil, errors.New("git's octopus merge stopped, and it merges manifests as text: git merge --abort, then chunkvc merge with the same revisions (one commit, data files merged chunk by chunk)")
			}
			op.base, err = rev("merge-base", ours, theirs)
		} else {
			op.base, _ = rev("rev-parse", "-q", "--verify", theirs+"^")
		}
		return op, err
	}
	return nil, ErrNoStoppedMerge
}

// sides are the snapshots of op's base (nil when theirs has no parent),
// ours and theirs.
func (r *Repo) sides(op *stoppedOp) ([3]*Snapshot, error) {
	var snaps [3]*Snapshot
	for i, rev := range []string{op.base, op.ours, op.theirs} {
		if rev == "" {
			continue
		}
		s, err := r.Snapshot(rev)
		if err != nil {
			return snaps, err
		}
		snaps[i] = s
	}
	return snaps, nil
}

// unmerged lists the paths git left conflicted.
func (r *Repo) unmerged(ctx context.Context) ([]string, error) {
	out, err := r.git.CLI().Run(ctx, "diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return nil, err
	}
	var ps []string
	for p := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// settleWhole merges, chunk by chunk, every data file whose manifest git
// left conflicted and whose versions are split or datasets; the others
// (single manifests the driver has seen) stay as the driver left them.
func (r *Repo) settleWhole(ctx context.Context, op *stoppedOp) ([]*MergeResult, error) {
	paths, err := r.unmerged(ctx)
	if err != nil {
		return nil, err
	}
	snaps, err := r.sides(op)
	if err != nil {
		return nil, err
	}
	isRoot := func(p string) bool {
		for _, s := range snaps[1:] {
			if _, _, ok, _ := s.GitFile(manifestPath(p), manifest.MaxManifest); ok {
				return true
			}
		}
		return false
	}
	owners := map[string]bool{}
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, ManifestDir+"/"); ok {
			owners[rest] = true
		} else if rest, ok := strings.CutPrefix(p, manifest.ShardDir+"/"); ok {
			if o, ok := shardOwner(rest, isRoot); ok {
				owners[o] = true
			}
		}
	}
	var out []*MergeResult
	for _, p := range slices.Sorted(maps.Keys(owners)) {
		res, err := r.mergeWhole(ctx, snaps, p, nil, false)
		if err != nil {
			return out, fmt.Errorf("merge %s: %w", p, err)
		}
		if res != nil {
			out = append(out, res)
		}
	}
	return out, nil
}

// mergeWhole merges the three versions of p when one is split or a
// dataset, or always (else nil): the merged data is written into the
// work tree, its chunks and layout stored, and its manifest (root and
// shards) written and added to git's index, settling the conflict. take
// settles the conflicts a person decided (chunk keys; a dataset's store
// paths).
func (r *Repo) mergeWhole(ctx context.Context, snaps [3]*Snapshot, p string, take func(string) merge3.Side, always bool) (*MergeResult, error) {
	var ms [3]*manifest.Manifest
	whole := false
	for i, s := range snaps {
		if s == nil {
			continue
		}
		text, _, ok, err := s.GitFile(manifestPath(p), manifest.MaxManifest)
		if err != nil || !ok {
			continue // a side without the file: left as git has it
		}
		if ms[i], _, err = s.Manifest(p); err != nil {
			return nil, err
		}
		whole = whole || manifest.IsSplit(text) || IsDataset(ms[i])
	}
	if !whole && !always {
		return nil, nil
	}
	res := &MergeResult{Path: p, Outcome: MergedChunks}
	if ms[1] == nil || ms[2] == nil {
		res.Outcome, res.Conflicts = MergedConflict, []MergeConflict{{Reason: "deleted by one side, changed by the other"}}
		return res, nil
	}
	if ms[0] == nil {
		ms[0] = &manifest.Manifest{Path: p}
	}
	var ch *chunked
	var cs []MergeConflict
	var err error
	switch {
	case IsDataset(ms[1]) && IsDataset(ms[2]):
		ch, cs, err = r.mergeDataset(ctx, ms, take)
	case bothFormat(ms, formats.Parquet):
		ch, cs, err = r.mergeParquet(ctx, res, ms, take)
	case bothFormat(ms, formats.FlatGeobuf):
		ch, cs, err = r.mergeFlatGeobuf(ctx, res, ms, take)
	default:
		var mr merge3.Result
		var regen []string
		mr, cs = mergeChunks(res, ms, take)
		if regen, cs = r.overviewPlan(ms, &mr, cs); len(cs) == 0 {
			cs, err = r.sameSkeleton(ctx, ms[1], ms[2])
		}
		if len(cs) == 0 && err == nil {
			res.Regenerated = len(regen)
			ch, cs, err = r.spliceMerged(ctx, ms, mr, regen)
		}
	}
	if err != nil || len(cs) > 0 {
		res.Outcome, res.Conflicts, res.FromTheirs = MergedConflict, cs, 0
		if err == nil {
			// The root git left says what the driver saw; now say why.
			text, _, _, _ := snaps[1].GitFile(manifestPath(p), manifest.MaxManifest)
			if _, cerr := r.conflict(res, r.abs(manifestPath(p)), text, cs); !errors.Is(cerr, ErrMergeConflict) {
				err = cerr
			}
		}
		return res, err
	}
	return res, r.stageManifest(ctx, ch)
}

// mergeDataset merges a dataset file by file into its directory, which
// must hold our version (dataset.Merge), then chunks and stores it as a
// commit does; the result must hold exactly the chunks a key-by-key
// merge of the three manifests gives.
func (r *Repo) mergeDataset(ctx context.Context, ms [3]*manifest.Manifest, take func(string) merge3.Side) (*chunked, []MergeConflict, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	p := ms[1].Path
	var vs [3]dataset.Version
	for i, m := range ms {
		if i == 0 && m.Layout.IsZero() {
			continue
		}
		if vs[i], err = r.datasetVersion(ctx, m); err != nil {
			return nil, nil, err
		}
	}
	fetch := func(id hashing.ID) ([]byte, error) {
		b, _, err := r.read.Get(ctx, id)
		return b, err
	}
	// As for a file (openOurs): the store must hold ours, or another
	// side's committed version, which ours then replaces.
	cur, err := r.chunkDataset(ctx, p, nil, nil, 0, nil)
	held := -1
	for _, i := range []int{1, 0, 2} {
		if err == nil && held < 0 && !ms[i].Layout.IsZero() && cur.m.Digest == ms[i].Digest {
			held = i
		}
	}
	switch held {
	case -1:
		return nil, []MergeConflict{{Reason: "the store in the work tree is not our committed version (commit or check it out first)"}}, nil
	case 0, 2:
		if _, err := dataset.Update(r.abs(p), vs[held], vs[1], fetch, false); err != nil {
			return nil, nil, fmt.Errorf("write our version of %s: %w", p, err)
		}
	}
	var pick func(string) dataset.Pick
	if take != nil {
		pick = func(p string) dataset.Pick {
			return map[merge3.Side]dataset.Pick{merge3.Ours: dataset.PickOurs, merge3.Theirs: dataset.PickTheirs}[take(p)]
		}
	}
	conflicts, _, err := dataset.Merge(r.abs(p), vs[0], vs[1], vs[2], fetch, pick)
	if err != nil || len(conflicts) > 0 {
		var cs []MergeConflict
		for _, c := range conflicts {
			cs = append(cs, MergeConflict{Key: c.Path, Reason: c.Reason})
		}
		return nil, cs, err
	}
	up, err := newUpload(ctx, r.Store, VerifySize, nil)
	if err != nil {
		return nil, nil, err
	}
	defer up.abort()
	ch, err := r.chunkDataset(ctx, p, func() (*manifest.Manifest, error) { return ms[1], nil }, up, 0, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := errors.Join(ch.named.Wait(), up.finish(ctx)); err != nil {
		return nil, nil, err
	}
	mr := merge3.ChunksTaking(ms[0].Chunks, ms[1].Chunks, ms[2].Chunks, take)
	if len(mr.Conflicts) == 0 && !sameChunks(ch.m.Chunks, mr.Chunks) {
		return nil, nil, fmt.Errorf("%w: the merged store %s does not hold the chunks of the merge", ErrIntegrity, p)
	}
	return ch, nil, nil
}

// sameChunks reports whether got are exactly the merged chunks.
func sameChunks(got []manifest.Chunk, want []merge3.Taken) bool {
	if len(got) != len(want) {
		return false
	}
	for i, c := range want {
		if got[i].Key != c.Key || got[i].ID != c.ID {
			return false
		}
	}
	return true
}

// stageManifest writes ch's manifest into the work tree (its root and
// every shard, removing shards of the version replaced) and adds them to
// git's index.
func (r *Repo) stageManifest(ctx context.Context, ch *chunked) error {
	p := ch.m.Path
	wt := r.workTree()
	defer wt.Close()
	// These are copies of what git add stages and the merge commit keeps,
	// so they are not synced (as a commit writes them), and a shard the
	// merge left as it was is not written at all: a one-tile merge in a
	// 225-shard manifest wrote and synced every shard, 0.4-1.3 s.
	write := func(rel string, data []byte) error {
		if old, err := wt.ReadFile(rel, int64(len(data))+1); err == nil && bytes.Equal(old, data) {
			return nil
		}
		return wt.WriteFile(rel, data, false)
	}
	if err := write(manifestPath(p), ch.encoded); err != nil {
		return err
	}
	dir := path.Join(manifest.ShardDir, p)
	keep := map[string]bool{}
	for _, part := range ch.parts {
		sp := manifest.ShardPath(p, part.Name)
		keep[sp] = true
		if err := write(sp, part.Data); err != nil {
			return err
		}
	}
	var stale []string
	_ = filepath.WalkDir(r.abs(dir), func(q string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if rel, rerr := filepath.Rel(r.Root, q); rerr == nil && !keep[filepath.ToSlash(rel)] {
				stale = append(stale, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err := removeManifests(wt, stale); err != nil {
		return err
	}
	cli := r.git.CLI()
	args := []string{"add", "-A", "--", manifestPath(p)}
	if out, _ := cli.Run(ctx, "ls-files", "--", dir); len(ch.parts) > 0 || strings.TrimSpace(out) != "" {
		args = append(args, dir)
	}
	_, err := cli.Run(ctx, args...)
	return err
}
