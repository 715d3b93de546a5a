package diff

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/manifest"
)

// ZarrDiff is the Zarr dataset part of a FileDiff: its arrays that were
// added, removed or changed, matched by key prefix between the "array"
// summary fields of the two versions, in prefix order.
type ZarrDiff struct {
	Arrays []ZarrArray `json:"arrays"`
}

// ZarrArray is what happened to one array of a Zarr dataset.
type ZarrArray struct {
	// Array is the array's key prefix ("" for a root array).
	Array string `json:"array"`
	// Change is "added", "removed" or "changed" (chunks or metadata).
	Change Change `json:"change"`
	// Total is the number of chunks of the grid its keys index (the inner
	// chunk grid when sharded) that hold elements of the array: the new
	// version's, the old one's when removed.
	Total int64 `json:"total"`
	// Stored is how many of those chunks the version holds (absent chunks
	// are the fill value).
	Stored int `json:"stored"`
	// Added, Removed and Changed count its chunks by change; a chunk cut
	// into pieces (key@1, key@2, …) counts once.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Changed int `json:"changed"`
	// ShapeOld and ShapeNew are the array's shapes (absent on the side
	// where it does not exist).
	ShapeOld []int64 `json:"shape_old,omitempty"`
	ShapeNew []int64 `json:"shape_new,omitempty"`
	// Dims bounds the added, removed and changed chunks per dimension;
	// empty when none did, or when the chunk shape changed (the grids do
	// not compare).
	Dims []ZarrDimRange `json:"dims,omitempty"`
	// Drift names the encoding settings that changed, e.g.
	// "chunks 1x4x4 → 2x4x4" or "codecs zlib → zstd" (dtype, chunks,
	// inner, order, codecs, fill).
	Drift []string `json:"drift,omitempty"`
	// Stats and Chunks are set by diff --stats (repo decodes the changed
	// chunks in both versions, when its codecs allow): the totals over
	// the measured chunks, and each changed chunk in change order.
	Stats  *ZarrStats       `json:"stats,omitempty"`
	Chunks []ZarrChunkStats `json:"chunk_stats,omitempty"`
}

// ZarrDimRange is the range of one dimension that a change touched.
type ZarrDimRange struct {
	Dim  int    `json:"dim"`            // 0-based dimension
	Name string `json:"name,omitempty"` // the dimension's name, if any
	// Chunks is the first and last chunk index (inclusive) touched.
	Chunks [2]int64 `json:"chunks"`
	// Elements is the first and last element index (inclusive) those
	// chunks cover, clipped to the larger of the two shapes.
	Elements [2]int64 `json:"elements"`
	// Appended is set when the array grew along this dimension alone
	// (same chunk shape, no other dimension changed size) and every
	// added or changed chunk lies in the grown part or in the chunk that
	// held the old edge, with none removed: an append, as xarray's
	// to_zarr(append_dim=…) makes.
	Appended bool `json:"appended,omitempty"`
	// Dates are the dates of Elements' first and last index when the
	// dimension has an evenly spaced CF time coordinate (a "time_axis"
	// summary field): ["2020-01-11", "2020-01-12"].
	Dates []string `json:"dates,omitempty"`
}

// zarrSide is one array's summary in each version (nil where absent).
type zarrSide struct{ old, cur *zarr.ArraySummary }

// zarrChunk is one chunk key of an array: in which versions it is and
// whether any of its pieces changed.
type zarrChunk struct {
	coords            []int64
	inOld, inCur, mod bool
}

// zarrArrays reads the "array" summary fields of m by key prefix; values
// that do not parse are left out.
func zarrArrays(m *manifest.Manifest, into map[string]*zarrSide, old bool) {
	if m == nil {
		return
	}
	for _, f := range m.Summary {
		if f.Name != "array" {
			continue
		}
		s, err := zarr.ParseSummaryArray(f.Value)
		if err != nil {
			continue
		}
		side := into[s.Prefix]
		if side == nil {
			side = &zarrSide{}
			into[s.Prefix] = side
		}
		if old {
			side.old = &s
		} else {
			side.cur = &s
		}
	}
}

func zarrDiff(old, cur *manifest.Manifest, d manifest.Delta) *ZarrDiff {
	sides := map[string]*zarrSide{}
	zarrArrays(old, sides, true)
	zarrArrays(cur, sides, false)
	chunks := map[string]map[string]*zarrChunk{} // prefix → base key → chunk
	for _, k := range d.Keys {
		base, _, _ := strings.Cut(k.Key, "@")
		prefix, coords, ok := zarr.ParseKey(base)
		if !ok || sides[prefix] == nil {
			continue
		}
		m := chunks[prefix]
		if m == nil {
			m = map[string]*zarrChunk{}
			chunks[prefix] = m
		}
		c := m[base]
		if c == nil {
			c = &zarrChunk{coords: coords}
			m[base] = c
		}
		c.inOld = c.inOld || k.Old != nil
		c.inCur = c.inCur || k.New != nil
		c.mod = c.mod || k.Change != manifest.Unchanged
	}
	prefixes := make([]string, 0, len(sides))
	for p := range sides {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	out := &ZarrDiff{Arrays: []ZarrArray{}}
	axes := timeAxes(cur, old)
	for _, p := range prefixes {
		if a, ok := zarrArrayDiff(p, sides[p], chunks[p]); ok {
			dateRanges(a.Array, a.Dims, axes)
			out.Arrays = append(out.Arrays, a)
		}
	}
	return out
}

// timeAxes reads the "time_axis" summary fields of the manifests given,
// the first one's winning for an array both have.
func timeAxes(ms ...*manifest.Manifest) map[string]zarr.TimeAxis {
	axes := map[string]zarr.TimeAxis{}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i] == nil {
			continue
		}
		for _, f := range ms[i].Summary {
			if f.Name != "time_axis" {
				continue
			}
			if ax, err := zarr.ParseTimeAxis(f.Value); err == nil {
				axes[ax.Path] = ax
			}
		}
	}
	return axes
}

// dateRanges dates the ranges of dimensions whose coordinate array (named
// like the dimension, next to the array with key prefix prefix) is a
// time axis.
func dateRanges(prefix string, dims []ZarrDimRange, axes map[string]zarr.TimeAxis) {
	if len(axes) == 0 || strings.HasPrefix(prefix, "~") {
		return // a hashed prefix does not say where the array lies
	}
	group := path.Dir("/" + prefix)
	for i, r := range dims {
		if r.Name == "" {
			continue
		}
		ax, ok := axes[strings.TrimPrefix(path.Join(group, r.Name), "/")]
		if !ok {
			continue
		}
		first, last := ax.Date(r.Elements[0]), ax.Date(r.Elements[1])
		if first != "" && last != "" {
			dims[i].Dates = []string{first, last}
		}
	}
}

// zarrArrayDiff describes one array; ok is false when nothing about it
// changed.
func zarrArrayDiff(prefix string, side *zarrSide, chunks map[string]*zarrChunk) (ZarrArray, bool) {
	a := ZarrArray{Array: prefix, Change: ChunkChanged}
	ref := side.cur
	switch {
	case side.old == nil:
		a.Change = ChunkAdded
	case side.cur == nil:
		a.Change, ref = ChunkRemoved, side.old
	default:
		a.Drift = zarrDrift(side.old, side.cur)
	}
	if side.old != nil {
		a.ShapeOld = side.old.Shape
	}
	if side.cur != nil {
		a.ShapeNew = side.cur.Shape
	}
	a.Total = ref.GridChunks()
	var touched []*zarrChunk
	for _, c := range chunks {
		if (ref == side.cur && c.inCur) || (ref == side.old && c.inOld) {
			a.Stored++
		}
		switch {
		case !c.mod:
			continue
		case c.inOld && c.inCur:
			a.Changed++
		case c.inCur:
			a.Added++
		default:
			a.Removed++
		}
		touched = append(touched, c)
	}
	if a.Change == ChunkChanged && len(touched) == 0 && slices.Equal(a.ShapeOld, a.ShapeNew) && len(a.Drift) == 0 {
		return a, false
	}
	if len(touched) > 0 && (side.old == nil || side.cur == nil || slices.Equal(side.old.KeyChunkShape(), side.cur.KeyChunkShape())) {
		a.Dims = zarrRanges(side, ref, touched)
	}
	return a, true
}

// zarrRanges bounds the touched chunks per dimension and marks appends.
func zarrRanges(side *zarrSide, ref *zarr.ArraySummary, touched []*zarrChunk) []ZarrDimRange {
	rank := len(ref.Shape)
	kc := ref.KeyChunkShape()
	names := ref.DimNames()
	var dims []ZarrDimRange
	for i := 0; i < rank; i++ {
		r := ZarrDimRange{Dim: i, Chunks: [2]int64{-1, -1}}
		if names != nil {
			r.Name = names[i]
		}
		for _, c := range touched {
			if len(c.coords) != rank {
				continue
			}
			if x := c.coords[i]; r.Chunks[0] < 0 || x < r.Chunks[0] {
				r.Chunks[0] = x
			}
			if x := c.coords[i]; x > r.Chunks[1] {
				r.Chunks[1] = x
			}
		}
		if r.Chunks[0] < 0 {
			return nil // no key of this rank: the summary does not describe them
		}
		limit := ref.Shape[i]
		if side.old != nil && side.cur != nil && len(side.old.Shape) == rank {
			limit = max(side.old.Shape[i], side.cur.Shape[i])
		}
		last := max(limit-1, 0)
		r.Elements = [2]int64{min(startOf(r.Chunks[0], kc[i], limit), last), startOf(r.Chunks[1]+1, kc[i], limit) - 1}
		r.Elements[1] = max(r.Elements[1], r.Elements[0])
		r.Appended = appendedAlong(side, touched, i)
		dims = append(dims, r)
	}
	return dims
}

// startOf is the first element of chunk x of side k, at most limit (keys
// may name chunks past the shape; the product must not overflow).
func startOf(x, k, limit int64) int64 {
	if k > 0 && x > limit/k {
		return limit
	}
	return min(x*k, limit)
}

// appendedAlong reports whether the change is an append along dim (see
// ZarrDimRange.Appended).
func appendedAlong(side *zarrSide, touched []*zarrChunk, dim int) bool {
	o, c := side.old, side.cur
	if o == nil || c == nil || len(o.Shape) != len(c.Shape) || !slices.Equal(o.KeyChunkShape(), c.KeyChunkShape()) {
		return false
	}
	for i := range o.Shape {
		if (i == dim) != (o.Shape[i] != c.Shape[i]) {
			return false
		}
	}
	if c.Shape[dim] < o.Shape[dim] {
		return false
	}
	edge := o.Shape[dim] / o.KeyChunkShape()[dim] // the first chunk new elements reach
	added := false
	for _, t := range touched {
		if !t.inCur || t.coords[dim] < edge {
			return false
		}
		added = added || !t.inOld
	}
	return added
}

// zarrDrift names the encoding settings that differ between two versions
// of an array.
func zarrDrift(o, c *zarr.ArraySummary) []string {
	var out []string
	add := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %s → %s", name, a, b))
		}
	}
	add("dtype", o.DType, c.DType)
	add("chunks", shapeText(o.ChunkShape), shapeText(c.ChunkShape))
	add("inner", shapeText(o.Inner), shapeText(c.Inner))
	add("order", string(o.Order), string(c.Order))
	add("codecs", o.Codecs, c.Codecs)
	add("fill", o.Fill, c.Fill)
	return out
}

func shapeText(s []int64) string {
	if s == nil {
		return "none"
	}
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = fmt.Sprint(n)
	}
	if len(parts) == 0 {
		return "()"
	}
	return strings.Join(parts, "x")
}

// zarrWarnings flags each array whose encoding drifted, as a TIFF profile
// change is flagged: "t2m re-chunked (chunks 1x4x4 → 2x4x4): every chunk
// changed".
func zarrWarnings(old, cur *manifest.Manifest, d manifest.Delta) []string {
	// Drift comes from the arrays' summaries alone: without any, the
	// pass over every chunk key (a commit's, of every chunk) is not made.
	sides := map[string]*zarrSide{}
	zarrArrays(old, sides, true)
	zarrArrays(cur, sides, false)
	drifted := false
	for _, s := range sides {
		drifted = drifted || (s.old != nil && s.cur != nil && len(zarrDrift(s.old, s.cur)) > 0)
	}
	if !drifted {
		return nil
	}
	var w []string
	for _, a := range zarrDiff(old, cur, d).Arrays {
		if len(a.Drift) == 0 {
			continue
		}
		what := "re-encoded"
		for _, s := range a.Drift {
			if strings.HasPrefix(s, "chunks ") || strings.HasPrefix(s, "inner ") {
				what = "re-chunked"
			}
		}
		before := a.Stored - a.Added + a.Removed // chunks the old version held
		hit := a.Changed + a.Removed
		count := fmt.Sprintf("%d of %d chunks changed", hit, before)
		if hit == before && before > 0 {
			count = "every chunk changed"
		}
		w = append(w, fmt.Sprintf("%s %s (%s): %s", zarrName(a.Array), what, strings.Join(a.Drift, ", "), count))
	}
	return w
}

// zarrName is how a message names the array with key prefix p.
func zarrName(p string) string {
	if p == "" {
		return "the root array"
	}
	return p
}

// Line says in one line what happened to the array, for a review:
// "t2m: 18 of 90 chunks changed (18 added), time 8..9 appended". Ranges
// are element indices of the dimensions the change did not span whole.
func (a ZarrArray) Line() string {
	name := zarrName(a.Array)
	switch a.Change {
	case ChunkAdded:
		return fmt.Sprintf("%s: added, %s of %s chunks stored", name, thousands(int64(a.Stored)), thousands(a.Total))
	case ChunkRemoved:
		return fmt.Sprintf("%s: removed, %s chunks stored", name, thousands(int64(a.Stored)))
	}
	n := a.Added + a.Removed + a.Changed
	s := fmt.Sprintf("%s: %s of %s chunks changed", name, thousands(int64(n)), thousands(a.Total))
	var kinds []string
	for _, k := range []struct {
		n    int
		what string
	}{{a.Added, "added"}, {a.Removed, "removed"}} {
		if k.n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %s", thousands(int64(k.n)), k.what))
		}
	}
	if len(kinds) > 0 {
		s += " (" + strings.Join(kinds, ", ") + ")"
	}
	for _, r := range a.Dims {
		dim := r.Name
		if dim == "" {
			dim = fmt.Sprintf("dim %d", r.Dim)
		}
		full := len(a.ShapeNew) > r.Dim && r.Elements == [2]int64{0, a.ShapeNew[r.Dim] - 1}
		switch {
		case r.Appended:
			s += fmt.Sprintf(", %s %d..%d appended", dim, r.Elements[0], r.Elements[1])
		case !full:
			s += fmt.Sprintf(", %s %d..%d", dim, r.Elements[0], r.Elements[1])
		}
		if (r.Appended || !full) && len(r.Dates) == 2 {
			s += " (" + DateRange(r.Dates) + ")"
		}
	}
	if len(a.Drift) > 0 {
		s += "; " + strings.Join(a.Drift, ", ")
	}
	return s
}

// DateRange spells a ZarrDimRange's Dates: "2020-01-11..2020-01-12", or
// one date when both are the same.
func DateRange(d []string) string {
	if d[0] == d[1] {
		return d[0]
	}
	return d[0] + ".." + d[1]
}

// thousands spells n with comma-separated thousands ("16,000").
func thousands(n int64) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
