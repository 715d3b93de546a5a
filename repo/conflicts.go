package repo

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/geom"
)

// Conflicts reports what the stopped merge, cherry-pick or rebase left
// conflicted in the data files, read from the conflict lines the merge
// driver (or chunkvc merge) wrote above our manifest: the keys, their
// footprints and the reasons. The second result is for maps (GeoJSON,
// PNG): the diff of ours against theirs for those files, whose changes
// are the conflicted keys alone (diff.ChunkConflict), with each file's
// extent, CRS and manifests. With nothing stopped both are empty.
func (r *Repo) Conflicts(ctx context.Context) (*diff.ConflictReport, *diff.Result, error) {
	rep := &diff.ConflictReport{Files: []diff.ConflictedFile{}}
	op, err := r.stopped(ctx)
	if errors.Is(err, ErrNoStoppedMerge) {
		return rep, &diff.Result{Files: []diff.FileDiff{}}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	rep.Operation, rep.Ours, rep.Theirs = op.kind, op.ours, op.theirs
	paths, err := r.unmerged(ctx)
	if err != nil {
		return nil, nil, err
	}
	var data []string
	for _, p := range paths {
		if !strings.HasPrefix(p, ManifestDir+"/") {
			continue // shards follow their root; other files are git's
		}
		c := r.conflictOf(p)
		f := diff.ConflictedFile{Path: c.Path, Conflicts: []diff.Conflict{}}
		for _, l := range c.Lines {
			if k, ok := ParseConflictLine(l); ok {
				f.Conflicts = append(f.Conflicts, k)
			}
		}
		if len(f.Conflicts) == 0 {
			f.Conflicts = append(f.Conflicts, diff.Conflict{Reason: "git left the manifest conflicted: chunkvc merge --continue merges it chunk by chunk"})
		}
		rep.Files = append(rep.Files, f)
		data = append(data, f.Path)
	}
	sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Path < rep.Files[j].Path })
	if len(data) == 0 {
		return rep, &diff.Result{From: op.ours, To: op.theirs, Files: []diff.FileDiff{}}, nil
	}
	res, err := r.Diff(ctx, DiffOptions{From: op.ours, To: op.theirs, Paths: data})
	if err != nil {
		return nil, nil, err
	}
	return rep, conflictMap(rep, res), nil
}

// conflictMap narrows res (ours against theirs) to the conflicted files,
// each with its conflicts as changes: a keyed conflict takes the bbox of
// its line, else of the key's change; a whole-file conflict the file's
// extent. The format details go: they count changes, not conflicts.
func conflictMap(rep *diff.ConflictReport, res *diff.Result) *diff.Result {
	byPath := map[string]*diff.ConflictedFile{}
	for i := range rep.Files {
		byPath[rep.Files[i].Path] = &rep.Files[i]
	}
	out := *res
	out.Files = []diff.FileDiff{}
	for _, f := range res.Files {
		cf := byPath[f.Path]
		if cf == nil {
			continue
		}
		cf.Format, cf.CRS = f.Format, f.CRS
		boxes := map[string]*geom.BBox{}
		for _, c := range f.Changes {
			boxes[c.Key] = c.BBox
		}
		changes := []diff.ChunkChange{}
		var area *geom.BBox
		for i, c := range cf.Conflicts {
			box := c.BBox
			switch {
			case box == nil && c.Key != "":
				box = boxes[c.Key]
			case box == nil:
				box = f.Extent
			}
			cf.Conflicts[i].BBox = box
			changes = append(changes, diff.ChunkChange{Key: c.Key, Change: diff.ChunkConflict, BBox: box})
			area = geom.UnionPtr(area, box)
		}
		f.Changes, f.BBox, f.Chunks = changes, area, diff.ChunkCounts{Changed: len(changes)}
		f.Tiff, f.Parquet, f.FlatGeobuf, f.Zarr, f.Tiles = nil, nil, nil, nil, nil
		f.SummaryChanges, f.Warnings, f.Reencoded = nil, nil, ""
		out.Files = append(out.Files, f)
	}
	return &out
}

// ParseConflictLine reads a line ConflictLine wrote ("conflict KEY
// [BBOX]: reason", key and bbox optional) back.
func ParseConflictLine(l string) (diff.Conflict, bool) {
	rest, ok := strings.CutPrefix(l, "conflict")
	if !ok {
		return diff.Conflict{}, false
	}
	var c diff.Conflict
	if r, ok := strings.CutPrefix(rest, ": "); ok {
		c.Reason = r
		return c, true
	}
	rest, ok = strings.CutPrefix(rest, " ")
	if !ok {
		return c, false
	}
	head, reason, ok := strings.Cut(rest, ": ")
	if !ok {
		return c, false
	}
	c.Reason = reason
	if k, box, ok := strings.Cut(head, " ["); ok && strings.HasSuffix(box, "]") {
		b, err := geom.Parse(strings.TrimSuffix(box, "]"))
		if err != nil {
			return c, false
		}
		c.Key, c.BBox = k, &b
	} else {
		c.Key = head
	}
	return c, c.Key != ""
}
