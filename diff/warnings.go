package diff

import (
	"fmt"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/manifest"
)

// Warnings flags what a reviewer of the change from old to cur (both
// present; d is manifest.Diff(old, cur)) should know: a re-encode rather
// than an edit, stale TIFF overviews, a changed schema, CRS or geometry
// types, a changed format. Commit prints them too.
func Warnings(old, cur *manifest.Manifest, d manifest.Delta) []string {
	var w []string
	if reencoded(old, cur, d) {
		total := d.Unchanged + d.Changed + d.Removed
		w = append(w, fmt.Sprintf("re-encoded: %s, %d/%d chunks changed", profileChange(old, cur), d.Changed+d.Removed, total))
	}
	if cur.Format == formats.TIFF {
		if n := staleOverviews(d); n > 0 {
			w = append(w, fmt.Sprintf("stale overviews: %d full-resolution tiles changed but no overview tile covering them did (rebuild overviews, e.g. gdal_translate -of COG -co OVERVIEWS=IGNORE_EXISTING)", n))
		}
	}
	for _, f := range []struct{ name, what string }{{"schema", "schema"}, {"crs", "CRS"}, {"geometry_types", "geometry types"}} {
		if a, b := old.SummaryValue(f.name), cur.SummaryValue(f.name); a != b && a != "" && b != "" {
			w = append(w, fmt.Sprintf("%s changed (%s → %s); readers of the previous version may break", f.what, a, b))
		}
	}
	if old.Format == zarr.Format && cur.Format == zarr.Format {
		w = append(w, zarrWarnings(old, cur, d)...)
	}
	if old.Format != cur.Format {
		w = append(w, fmt.Sprintf("format changed: %s → %s", old.Format, cur.Format))
	}
	return w
}

// reencoded reports a version whose encoding profile changed and that
// changed almost every chunk: a re-encode, not an edit.
func reencoded(old, cur *manifest.Manifest, d manifest.Delta) bool {
	total := d.Unchanged + d.Changed + d.Removed
	return profileOf(old) != profileOf(cur) && total > 0 && float64(d.Changed+d.Removed) >= 0.9*float64(total)
}

// profileFields are the summary fields that describe how a file was encoded
// (rather than what it holds); a change in them re-encodes every chunk.
var profileFields = []string{"tile", "interleave", "compression", "predictor", "overviews"}

func profileOf(m *manifest.Manifest) string {
	var b strings.Builder
	for _, f := range profileFields {
		fmt.Fprintf(&b, "%s=%s;", f, m.SummaryValue(f))
	}
	return b.String()
}

// profileChange names the settings that differ, e.g. "compression deflate → zstd".
func profileChange(old, cur *manifest.Manifest) string {
	var parts []string
	for _, f := range profileFields {
		if a, b := old.SummaryValue(f), cur.SummaryValue(f); a != b {
			parts = append(parts, fmt.Sprintf("%s %s → %s", strings.ToUpper(f), a, b))
		}
	}
	return strings.Join(parts, ", ")
}

// staleOverviews counts changed full-resolution TIFF tiles (keys z0/…) that
// no changed overview tile (z1/…, z2/…) overlaps, when the file has
// overviews at all. Masks and second pyramids are left out.
func staleOverviews(d manifest.Delta) int {
	var full, ovr []*manifest.Chunk
	hasOvr := false
	for _, k := range d.Keys {
		level, mask, ok := levelOf(k.Key)
		if !ok || mask {
			level = -1
		}
		if level > 0 {
			hasOvr = true
		}
		if k.Change != manifest.Modified || k.New.BBox == nil {
			continue
		}
		switch {
		case level == 0:
			full = append(full, k.New)
		case level > 0:
			ovr = append(ovr, k.New)
		}
	}
	if !hasOvr {
		return 0
	}
	n := 0
	for _, f := range full {
		covered := false
		for _, o := range ovr {
			if f.BBox.Intersects(*o.BBox) {
				covered = true
				break
			}
		}
		if !covered {
			n++
		}
	}
	return n
}

// FootprintWarnings says why some of cur's chunks have no footprint (its
// summary's footprint_fallback) when old, the version before (nil for a
// new file), did not say the same: the chunks are still stored and come
// back exactly, but --bbox and maps cannot place them.
func FootprintWarnings(old, cur *manifest.Manifest) []string {
	why := cur.SummaryValue("footprint_fallback")
	if why == "" || (old != nil && old.SummaryValue("footprint_fallback") == why) {
		return nil
	}
	return []string{"no footprints for some chunks: " + why}
}

// ProfileChange names the encoding settings (tile, interleave,
// compression, predictor, overviews) that differ between two versions of
// a raster, "" when none does.
func ProfileChange(old, cur *manifest.Manifest) string {
	if profileOf(old) == profileOf(cur) {
		return ""
	}
	return profileChange(old, cur)
}
