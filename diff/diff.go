package diff

import (
	"math"
	"strings"

	"github.com/chunkvc/chunkvc/diff/featurediff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/manifest"
)

// WorkTree is how Result.To names the working tree.
const WorkTree = "worktree"

// Status is what happened to a file between two versions.
type Status string

// File statuses, as diff --json spells them.
const (
	Added    Status = "added"
	Deleted  Status = "deleted"
	Modified Status = "modified"
	Renamed  Status = "renamed" // the same bytes under another path
	// Rewritten is a file removed and another added that shares most of
	// its chunks (a partition rewritten under a new name, a compaction):
	// OldPath names the one it was rewritten from.
	Rewritten Status = "rewritten"
)

// Change is what happened to one chunk key.
type Change string

// Chunk changes, as diff --json spells them.
const (
	ChunkAdded   Change = "added"
	ChunkRemoved Change = "removed"
	ChunkChanged Change = "changed"
)

// changeOf is c as a listed change; c is never manifest.Unchanged.
func changeOf(c manifest.Change) Change {
	switch c {
	case manifest.Added:
		return ChunkAdded
	case manifest.Removed:
		return ChunkRemoved
	}
	return ChunkChanged
}

// Result is what changed between two versions of the tracked files.
type Result struct {
	From       string     `json:"from"`                  // the old revision as given ("HEAD" by default)
	To         string     `json:"to"`                    // the new revision as given, or WorkTree
	FromCommit string     `json:"from_commit,omitempty"` // "" on an unborn branch
	ToCommit   string     `json:"to_commit,omitempty"`   // "" for the working tree
	Files      []FileDiff `json:"files"`
	// Features is set by diff --features: the rows of the changed
	// vector files, compared by key.
	Features *featurediff.Features `json:"features,omitempty"`
}

// ChunkCounts counts chunk keys by change.
type ChunkCounts struct {
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
}

// ChunkChange is one chunk key that is not unchanged.
type ChunkChange struct {
	Key    string     `json:"key"`
	Change Change     `json:"change"`
	Bytes  int64      `json:"bytes"` // the new chunk's size (the old one's when removed)
	BBox   *geom.BBox `json:"bbox,omitempty"`
}

// FieldChange is a manifest summary field whose value changed ("" = absent).
type FieldChange struct {
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// LevelCount is one TIFF pyramid level: how many of its blocks changed.
type LevelCount struct {
	Level   int  `json:"level"` // 0 = full resolution
	Mask    bool `json:"mask,omitempty"`
	Changed int  `json:"changed"` // added + removed + changed
	Total   int  `json:"total"`   // blocks in the new version (the old one when deleted)
}

// TiffDiff is the raster part of a FileDiff.
type TiffDiff struct {
	Levels []LevelCount `json:"levels"`
}

// ParquetDiff is the Parquet part of a FileDiff.
type ParquetDiff struct {
	RowsOld          int64    `json:"rows_old"`
	RowsNew          int64    `json:"rows_new"`
	RowGroupsOld     int      `json:"row_groups_old"`
	RowGroupsNew     int      `json:"row_groups_new"`
	RowGroupsChanged []int    `json:"row_groups_changed"`
	ColumnsChanged   []string `json:"columns_changed"`
	SchemaChanged    bool     `json:"schema_changed"`
	GeoChanged       bool     `json:"geo_changed"`
}

// FileDiff is one tracked file that differs.
type FileDiff struct {
	Path      string      `json:"path"`
	OldPath   string      `json:"old_path,omitempty"` // renamed and rewritten files only
	Status    Status      `json:"status"`
	Format    string      `json:"format"`
	OldFormat string      `json:"old_format,omitempty"` // only when it differs
	Size      int64       `json:"size"`                 // new size (0 when deleted)
	OldSize   int64       `json:"old_size"`             // 0 when added
	Chunks    ChunkCounts `json:"chunks"`
	// Bytes is what a commit would move: the size of the new version's
	// chunks whose hash the old version does not have.
	Bytes int64 `json:"bytes"`
	// SharedBytes, for a rewritten file, is the size of its chunks the
	// file it was rewritten from holds too (they are not moved again).
	SharedBytes int64 `json:"shared_bytes,omitempty"`
	// BBox is the changed area in CRS units (see the package doc); nil
	// when no footprint is known.
	BBox *geom.BBox `json:"bbox,omitempty"`
	// Extent is the whole file's bbox (new version, else old).
	Extent *geom.BBox `json:"extent,omitempty"`
	CRS    string     `json:"crs,omitempty"`
	// SummaryChanges lists the manifest summary fields that changed.
	SummaryChanges []FieldChange `json:"summary_changes,omitempty"`
	// Reencoded names the encoding settings that changed when they
	// re-encoded (nearly) every chunk, e.g. "COMPRESSION deflate → zstd".
	Reencoded  string          `json:"reencoded,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Tiff       *TiffDiff       `json:"tiff,omitempty"`
	Parquet    *ParquetDiff    `json:"parquet,omitempty"`
	FlatGeobuf *FlatGeobufDiff `json:"flatgeobuf,omitempty"`
	Zarr       *ZarrDiff       `json:"zarr,omitempty"`
	// Changes lists every chunk key that is not unchanged, in key order.
	Changes []ChunkChange `json:"changes"`
	// Tiles measures each changed raster block (diff --stats; repo fills
	// it in by decoding both versions of those blocks only).
	Tiles []TileStats `json:"tiles,omitempty"`

	old, cur *manifest.Manifest
}

// Old returns the old version's manifest (nil when added).
func (f *FileDiff) Old() *manifest.Manifest { return f.old }

// New returns the new version's manifest (nil when deleted).
func (f *FileDiff) New() *manifest.Manifest { return f.cur }

// Compare describes the change from old to cur (either may be nil, not
// both) without reading any data: chunk counts, the changed area and the
// format-aware summaries. A pair with different paths is a rename.
func Compare(old, cur *manifest.Manifest) FileDiff {
	d := manifest.Diff(old, cur)
	fd := FileDiff{old: old, cur: cur, Changes: []ChunkChange{},
		Chunks: ChunkCounts{Added: d.Added, Removed: d.Removed, Changed: d.Changed, Unchanged: d.Unchanged},
		Bytes:  d.NewBytes}
	ref := cur
	switch {
	case old == nil:
		fd.Status = Added
	case cur == nil:
		fd.Status = Deleted
		ref = old
	case old.Path != cur.Path && old.Digest == cur.Digest:
		fd.Status, fd.OldPath = Renamed, old.Path
	case old.Path != cur.Path:
		fd.Status, fd.OldPath, fd.SharedBytes = Rewritten, old.Path, SharedBytes(cur, d)
	default:
		fd.Status = Modified
	}
	fd.Path, fd.Format, fd.CRS = ref.Path, ref.Format, ref.SummaryValue("crs")
	if b, err := geom.Parse(ref.SummaryValue("bbox")); err == nil {
		fd.Extent = &b
	}
	if cur != nil {
		fd.Size = cur.Size
	}
	if old != nil {
		fd.OldSize = old.Size
		if cur != nil && old.Format != cur.Format {
			fd.OldFormat = old.Format
		}
	}
	fd.SummaryChanges = summaryChanges(old, cur)
	if old != nil && cur != nil {
		fd.Warnings = Warnings(old, cur, d)
		if reencoded(old, cur, d) {
			fd.Reencoded = profileChange(old, cur)
		}
	}
	fd.addChanges(d, ref.Format == formats.TIFF)

	switch ref.Format {
	case formats.TIFF:
		fd.Tiff = tiffDiff(d, cur == nil)
	case formats.Parquet:
		fd.Parquet = parquetDiff(old, cur, d)
	case formats.FlatGeobuf:
		fd.FlatGeobuf = flatgeobufDiff(old, cur, d)
	case zarr.Format:
		fd.Zarr = zarrDiff(old, cur, d)
	}
	return fd
}

// addChanges lists d's changed keys and grows the changed area by their
// footprints: for a TIFF (tiled) only those of the finest level that
// changed.
func (fd *FileDiff) addChanges(d manifest.Delta, tiled bool) {
	finest := math.MaxInt
	if tiled {
		for _, k := range d.Keys {
			if lv, _, ok := levelOf(k.Key); ok && k.Change != manifest.Unchanged && lv < finest {
				finest = lv
			}
		}
	}
	for _, k := range d.Keys {
		if k.Change == manifest.Unchanged {
			continue
		}
		c := ChunkChange{Key: k.Key, Change: changeOf(k.Change)}
		if k.New != nil {
			c.Bytes, c.BBox = k.New.Size, k.New.BBox
		} else {
			c.Bytes, c.BBox = k.Old.Size, k.Old.BBox
		}
		fd.Changes = append(fd.Changes, c)
		if finest != math.MaxInt {
			if lv, _, ok := levelOf(k.Key); !ok || lv != finest {
				continue
			}
		}
		for _, ch := range []*manifest.Chunk{k.Old, k.New} {
			if ch != nil {
				fd.BBox = geom.UnionPtr(fd.BBox, ch.BBox)
			}
		}
	}
}

// summaryChanges lists fields in old's order, then fields only cur has. A
// name that occurs more than once (a Zarr dataset's "array") names one
// field per first word of its value (the array), paired on that word.
func summaryChanges(old, cur *manifest.Manifest) []FieldChange {
	if old == nil || cur == nil {
		return nil
	}
	var out []FieldChange
	rep := repeatedNames(old, cur)
	id := func(f manifest.Field) string {
		if rep[f.Name] {
			w, _, _ := strings.Cut(f.Value, " ")
			return f.Name + " " + w
		}
		return f.Name
	}
	curByID := map[string]string{}
	for _, f := range cur.Summary {
		if _, ok := curByID[id(f)]; !ok {
			curByID[id(f)] = f.Value
		}
	}
	seen := map[string]bool{}
	for _, f := range old.Summary {
		seen[id(f)] = true
		if v := curByID[id(f)]; v != f.Value {
			out = append(out, FieldChange{Name: f.Name, Old: f.Value, New: v})
		}
	}
	for _, f := range cur.Summary {
		if !seen[id(f)] {
			seen[id(f)] = true
			out = append(out, FieldChange{Name: f.Name, Old: "", New: f.Value})
		}
	}
	return out
}

// repeatedNames are the summary field names that occur more than once in
// either manifest.
func repeatedNames(ms ...*manifest.Manifest) map[string]bool {
	rep := map[string]bool{}
	for _, m := range ms {
		n := map[string]int{}
		for _, f := range m.Summary {
			if n[f.Name]++; n[f.Name] == 2 {
				rep[f.Name] = true
			}
		}
	}
	return rep
}

// SharedBytes is the size of cur's chunks that the version d compared it
// with holds too (d = manifest.Diff(old, cur)): what a rewrite from that
// file does not move again.
func SharedBytes(cur *manifest.Manifest, d manifest.Delta) int64 {
	var n int64
	for _, c := range cur.Chunks {
		n += c.Size
	}
	return n - d.NewBytes
}
