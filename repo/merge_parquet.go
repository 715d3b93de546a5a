package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats/parquet"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// A Parquet file both sides changed merges row group by row group: a row
// group changed on one side only is taken whole from that side (its
// column chunks, statistics and indexes; parquet.MergeRowGroups rebuilds
// the footer), one changed on both sides is a conflict naming its rows
// and columns. Row groups are the unit because a row group's columns
// must agree on its rows: taking one column from each side would make a
// row neither side wrote.

// rgChunks are one side's chunks of each row group (by index), and the
// chunks that belong to no row group.
type rgChunks struct {
	groups map[int][]manifest.Chunk
	other  []manifest.Chunk
}

func byRowGroup(cs []manifest.Chunk) rgChunks {
	out := rgChunks{groups: map[int][]manifest.Chunk{}}
	for _, c := range cs {
		if k, ok := parquet.ParseKey(c.Key); ok && !k.Gap {
			out.groups[k.RowGroup] = append(out.groups[k.RowGroup], c)
		} else {
			out.other = append(out.other, c)
		}
	}
	return out
}

func sameChunkList(a, b []manifest.Chunk) bool {
	return slices.EqualFunc(a, b, func(x, y manifest.Chunk) bool { return x.Key == y.Key && x.ID == y.ID })
}

// rowGroupPlan decides, for each row group of the merge, whether it is
// theirs; the conflicts name the row groups it cannot take from one side.
// rows are each side's row groups' first rows and counts. take (nil:
// none) settles a row group both sides changed, by its conflict key
// ("rg7"), for the side a person chose.
func rowGroupPlan(ms [3]*manifest.Manifest, rows [3][][2]int64, take func(string) merge3.Side) ([]bool, []merge3.Taken, []MergeConflict) {
	var sides [3]rgChunks
	for i, m := range ms {
		sides[i] = byRowGroup(m.Chunks)
	}
	if len(sides[1].other)+len(sides[2].other) > 0 {
		return nil, nil, []MergeConflict{{Reason: "a side's file has bytes outside its column chunks and indexes (gap chunks): not merged row group by row group"}}
	}
	nb, no, nt := len(rows[0]), len(rows[1]), len(rows[2])
	n := no
	switch {
	case nt == nb:
	case no == nb:
		n = nt
	case no != nt:
		return nil, nil, []MergeConflict{{Reason: fmt.Sprintf("both sides added or removed row groups (%d in the base, %d on ours, %d on theirs)", nb, no, nt)}}
	}
	var plan []bool
	var want []merge3.Taken
	var cs []MergeConflict
	for i := range max(nb, no, nt) {
		b, o, t := sides[0].groups[i], sides[1].groups[i], sides[2].groups[i]
		theirs := false
		switch {
		case sameChunkList(o, t), sameChunkList(t, b):
		case sameChunkList(o, b):
			theirs = true
		default:
			side := merge3.Same
			if take != nil {
				side = take(rowGroupKey(i))
			}
			if side == merge3.Same {
				cs = append(cs, rowGroupConflict(i, rows, b, o, t))
				continue
			}
			theirs = side == merge3.Theirs
		}
		if i >= n {
			if (theirs && len(t) > 0) || (!theirs && len(o) > 0) {
				cs = append(cs, MergeConflict{Key: rowGroupKey(i), Reason: fmt.Sprintf("row group %d is deleted by one side, changed by the other", i)})
			}
			continue
		}
		plan = append(plan, theirs)
		src, from := o, merge3.Ours
		if theirs {
			src, from = t, merge3.Theirs
		}
		for _, c := range src {
			want = append(want, merge3.Taken{Chunk: c, From: from})
		}
	}
	sort.Slice(want, func(i, j int) bool { return manifest.NaturalLess(want[i].Key, want[j].Key) })
	return plan, want, cs
}

// rowGroupKey is how conflicts (and resolve --take) name row group i.
func rowGroupKey(i int) string { return "rg" + strconv.Itoa(i) }

// rowGroupConflict names row group i both sides changed: its rows on
// ours (or theirs), the columns each side changed, and its footprint.
func rowGroupConflict(i int, rows [3][][2]int64, b, o, t []manifest.Chunk) MergeConflict {
	c := MergeConflict{Key: rowGroupKey(i)}
	span := ""
	for _, side := range []int{1, 2} {
		if i < len(rows[side]) {
			r := rows[side][i]
			span = fmt.Sprintf(" (rows %d-%d)", r[0], r[0]+r[1]-1)
			break
		}
	}
	for _, ch := range append(slices.Clone(o), t...) {
		c.BBox = geom.UnionPtr(c.BBox, ch.BBox)
	}
	c.Reason = fmt.Sprintf("row group %d%s changed on both sides: ours in %s, theirs in %s", i, span, changedColumns(b, o), changedColumns(b, t))
	return c
}

// changedColumns lists the columns whose chunks side changed against base.
func changedColumns(base, side []manifest.Chunk) string {
	was := map[string]hashing.ID{}
	for _, c := range base {
		was[c.Key] = c.ID
	}
	is := map[string]bool{}
	var cols []string
	add := func(key string) {
		if k, ok := parquet.ParseKey(key); ok && !is[k.Column] {
			is[k.Column] = true
			cols = append(cols, k.Column)
		}
	}
	for _, c := range side {
		if id, ok := was[c.Key]; !ok || id != c.ID {
			add(c.Key)
		}
		delete(was, c.Key)
	}
	for k := range was {
		add(k)
	}
	if len(cols) == 0 {
		return "no column"
	}
	sort.Strings(cols)
	return "columns " + strings.Join(cols, ", ")
}

// mergeParquet merges a Parquet file both sides changed into the work
// tree (our file must be there) and stores it: the row groups
// rowGroupPlan takes, spliced by parquet.MergeRowGroups, and checked to
// hold exactly their chunks. Nothing to take from theirs leaves ours.
func (r *Repo) mergeParquet(ctx context.Context, res *MergeResult, ms [3]*manifest.Manifest, take func(string) merge3.Side) (*chunked, []MergeConflict, error) {
	var sides [3]parquet.MergeSide
	var rows [3][][2]int64
	for i, m := range ms {
		if i == 0 && m.Layout.IsZero() {
			continue
		}
		lay, err := r.layoutFor(ctx, m)
		if err != nil {
			return nil, nil, fmt.Errorf("layout of %s: %w", m.Path, err)
		}
		sides[i] = parquet.MergeSide{R: newSkeletonReader(lay), Size: m.Size}
		if rows[i], err = parquet.RowGroupRows(sides[i].R, m.Size); err != nil {
			return nil, []MergeConflict{{Reason: "a side's Parquet footer cannot be read: " + err.Error()}}, nil
		}
	}
	plan, want, cs := rowGroupPlan(ms, rows, take)
	if len(cs) > 0 {
		return nil, cs, nil
	}
	res.FromTheirs = 0
	for _, c := range want {
		if c.From == merge3.Theirs {
			res.FromTheirs++
		}
	}
	a, done, cs, err := r.lockedOurs(ctx, ms)
	if err != nil || len(cs) > 0 {
		return nil, cs, err
	}
	defer done()
	sides[1].R = a
	gt := r.gitTree()
	defer gt.Close()
	tf, err := gt.Create("chunkvc/merge-theirs")
	if err != nil {
		return nil, nil, err
	}
	defer tf.Abort()
	if _, err := r.assembleFile(ctx, ms[2], tf.File, nil, nil); err != nil {
		return nil, nil, fmt.Errorf("their version of %s: %w", ms[2].Path, err)
	}
	sides[2].R = tf.File
	return r.writeParquet(ctx, ms[1], sides, plan, want)
}

// writeParquet writes the merged file over ours and stores it.
func (r *Repo) writeParquet(ctx context.Context, ours *manifest.Manifest, sides [3]parquet.MergeSide, plan []bool, want []merge3.Taken) (*chunked, []MergeConflict, error) {
	wt := r.workTree()
	defer wt.Close()
	f, err := wt.Create(ours.Path)
	if err != nil {
		return nil, nil, err
	}
	if _, err := parquet.MergeRowGroups(f, sides[0], sides[1], sides[2], plan); err != nil {
		f.Abort()
		return nil, []MergeConflict{{Reason: "the row groups cannot be merged: " + manifest.SanitizeValue(err.Error())}}, nil
	}
	if err := errors.Join(f.Sync(), f.Commit(true)); err != nil {
		return nil, nil, err
	}
	ch, err := r.storeMerged(ctx, ours, want, nil)
	return ch, nil, err
}

// mergeFileDriver is MergeDriver for two Parquet or FlatGeobuf versions
// (merge is mergeParquet or mergeFlatGeobuf): the merged manifest goes to
// result, or the conflicts.
func (r *Repo) mergeFileDriver(ctx context.Context, res *MergeResult, ms [3]*manifest.Manifest, oursText []byte, result string,
	merge func(context.Context, *MergeResult, [3]*manifest.Manifest) (*chunked, []MergeConflict, error)) (*MergeResult, error) {
	ch, cs, err := merge(ctx, res, ms)
	if err == nil && len(cs) == 0 && len(ch.parts) > 0 {
		err = fmt.Errorf("%w: the merged %s needs a split manifest", ErrIntegrity, ch.m.Path)
	}
	if err != nil {
		_, cerr := r.conflict(res, result, oursText, []MergeConflict{{Reason: "the merge failed: " + manifest.SanitizeValue(err.Error())}})
		return res, fmt.Errorf("merge %s: %w", res.Path, errors.Join(err, cerr))
	}
	if len(cs) > 0 {
		return r.conflict(res, result, oursText, cs)
	}
	if ch.m.Digest == ms[1].Digest {
		res.Outcome, res.FromTheirs = MergedOurs, 0
		return res, nil
	}
	res.Outcome = MergedChunks
	return res, os.WriteFile(result, ch.encoded, 0o644)
}
