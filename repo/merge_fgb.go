package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// A FlatGeobuf file both sides changed merges feature by feature
// (flatgeobuf.PlanMerge): features are keyed as the feature-level diff
// keys them (chooseKey: the config's key line, else the one detected key
// column, else by content), each key merged three ways, and the merged
// features written in Hilbert order under a regenerated index, so that
// the file is what GDAL would write for them and its index stays
// derived. Blocks are not the unit: one added feature moves every block
// boundary after it, and the Hilbert order moves features between blocks.

// mergeFlatGeobuf merges a FlatGeobuf file both sides changed into the
// work tree (our file must be there; the base and their version are read
// from the stores as the merge needs them) and stores it, once the
// written file reads back as the merge's records under a derivable index.
// take settles the conflicts a person decided, by feature key.
func (r *Repo) mergeFlatGeobuf(ctx context.Context, res *MergeResult, ms [3]*manifest.Manifest, take func(string) merge3.Side) (*chunked, []MergeConflict, error) {
	a, done, cs, err := r.lockedOurs(ctx, ms)
	if err != nil || len(cs) > 0 {
		return nil, cs, err
	}
	defer done()
	var sides [3]flatgeobuf.MergeSide
	sides[1] = flatgeobuf.MergeSide{R: a, Size: ms[1].Size}
	cr := r.NewChunkReader(0, 0)
	for _, i := range []int{0, 2} {
		if ms[i].Layout.IsZero() {
			continue // no base: every feature is an addition
		}
		src, err := r.openSide(ctx, cr, ms[i], "stored")
		if err != nil {
			return nil, nil, fmt.Errorf("%s version of %s: %w", [3]string{"base", "", "their"}[i], ms[i].Path, err)
		}
		defer src.close()
		sides[i] = flatgeobuf.MergeSide{R: src, Size: ms[i].Size}
	}
	s, err := flatgeobuf.ReadSchema(a, ms[1].Size)
	if err != nil {
		return nil, []MergeConflict{{Reason: "our FlatGeobuf header cannot be read: " + manifest.SanitizeValue(err.Error())}}, nil
	}
	var opt flatgeobuf.MergeOptions
	if k := r.chooseKey(ms[1].Path, "", s.Columns, s.KeyKind); k.Column != nil {
		opt.Key = *k.Column
	}
	if take != nil {
		opt.Take = func(name string) int {
			return map[merge3.Side]int{merge3.Ours: flatgeobuf.TakeOurs, merge3.Theirs: flatgeobuf.TakeTheirs}[take(name)]
		}
	}
	plan, fcs, err := flatgeobuf.PlanMerge(ctx, sides[0], sides[1], sides[2], opt)
	if err != nil && ctx.Err() != nil {
		return nil, nil, err
	}
	if err != nil {
		return nil, []MergeConflict{{Reason: "a side's FlatGeobuf cannot be merged: " + manifest.SanitizeValue(err.Error())}}, nil
	}
	for _, c := range fcs {
		cs = append(cs, MergeConflict{Key: c.Key, BBox: c.BBox, Reason: c.Reason})
	}
	if len(cs) > 0 {
		return nil, cs, nil
	}
	res.FromTheirs = plan.FromTheirs
	return r.writeFlatGeobuf(ctx, ms[1], plan, sides)
}

// lockedOurs takes the repository's lock and opens our working file
// (openOurs) for a merge to read while it writes the merged file; done
// closes it and releases the lock.
func (r *Repo) lockedOurs(ctx context.Context, ms [3]*manifest.Manifest) (*os.File, func(), []MergeConflict, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, nil, nil, err
	}
	a, cs, err := r.openOurs(ctx, ms)
	if err != nil || len(cs) > 0 {
		unlock()
		return nil, nil, cs, err
	}
	return a, func() { a.Close(); unlock() }, nil, nil
}

// writeFlatGeobuf writes the planned file over ours, checks it
// (MergePlan.Check) and stores it; its manifest must be the adapter's,
// with the index derived and the planned feature count.
func (r *Repo) writeFlatGeobuf(ctx context.Context, ours *manifest.Manifest, plan *flatgeobuf.MergePlan, sides [3]flatgeobuf.MergeSide) (*chunked, []MergeConflict, error) {
	wt := r.workTree()
	defer wt.Close()
	f, err := wt.Create(ours.Path)
	if err != nil {
		return nil, nil, err
	}
	n, err := plan.WriteTo(ctx, f.File, sides[1], sides[2])
	if err == nil {
		err = plan.Check(ctx, f.File, n)
	}
	if err != nil {
		f.Abort()
		return nil, nil, fmt.Errorf("merged %s: %w", ours.Path, err)
	}
	if err := errors.Join(f.Sync(), f.Commit(true)); err != nil {
		return nil, nil, err
	}
	ch, err := r.storeMergedCheck(ctx, ours, func(ch *chunked) error {
		m := ch.m
		idx := m.SummaryValue("index")
		if m.Format != formats.FlatGeobuf || m.Fallback != "" || m.SummaryValue("features") != strconv.Itoa(plan.Count()) ||
			idx != "none" && !strings.HasSuffix(idx, " derived") {
			return fmt.Errorf("%w: the merged %s reads as %s (features %q, index %q), not as the merge's FlatGeobuf",
				ErrIntegrity, ours.Path, m.Format, m.SummaryValue("features"), idx)
		}
		return nil
	}, nil)
	return ch, nil, err
}
