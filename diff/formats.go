package diff

import (
	"sort"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats/parquet"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/manifest"
)

func tiffDiff(d manifest.Delta, deleted bool) *TiffDiff {
	type lk struct {
		level int
		mask  bool
	}
	counts := map[lk]*LevelCount{}
	for _, k := range d.Keys {
		lv, mask, ok := levelOf(k.Key)
		if !ok {
			continue
		}
		c := counts[lk{lv, mask}]
		if c == nil {
			c = &LevelCount{Level: lv, Mask: mask}
			counts[lk{lv, mask}] = c
		}
		if k.New != nil || deleted {
			c.Total++
		}
		if k.Change != manifest.Unchanged {
			c.Changed++
		}
	}
	out := &TiffDiff{Levels: []LevelCount{}}
	for _, c := range counts {
		out.Levels = append(out.Levels, *c)
	}
	sort.Slice(out.Levels, func(i, j int) bool {
		a, b := out.Levels[i], out.Levels[j]
		if a.Mask != b.Mask {
			return !a.Mask
		}
		return a.Level < b.Level
	})
	return out
}

func parquetDiff(old, cur *manifest.Manifest, d manifest.Delta) *ParquetDiff {
	p := &ParquetDiff{RowGroupsChanged: []int{}, ColumnsChanged: []string{}}
	if old != nil {
		p.RowsOld, _ = strconv.ParseInt(old.SummaryValue("rows"), 10, 64)
		p.RowGroupsOld, _ = strconv.Atoi(old.SummaryValue("row_groups"))
	}
	if cur != nil {
		p.RowsNew, _ = strconv.ParseInt(cur.SummaryValue("rows"), 10, 64)
		p.RowGroupsNew, _ = strconv.Atoi(cur.SummaryValue("row_groups"))
	}
	if old != nil && cur != nil {
		p.SchemaChanged = old.SummaryValue("schema") != cur.SummaryValue("schema")
		p.GeoChanged = old.SummaryValue("geo") != cur.SummaryValue("geo")
	}
	rgs, cols := map[int]bool{}, map[string]bool{}
	for _, k := range d.Keys {
		if k.Change == manifest.Unchanged {
			continue
		}
		rg, col, ok := rowGroupOf(k.Key)
		if !ok {
			continue
		}
		rgs[rg] = true
		if col != "" {
			cols[col] = true
		}
	}
	for rg := range rgs {
		p.RowGroupsChanged = append(p.RowGroupsChanged, rg)
	}
	sort.Ints(p.RowGroupsChanged)
	for c := range cols {
		p.ColumnsChanged = append(p.ColumnsChanged, c)
	}
	sort.Strings(p.ColumnsChanged)
	return p
}

// fgbHeaderFields are the FlatGeobuf summary fields that come from its header.
var fgbHeaderFields = []string{"geometry_type", "has_z", "has_m", "crs", "columns", "name"}

func flatgeobufDiff(old, cur *manifest.Manifest, d manifest.Delta) *FlatGeobufDiff {
	fg := &FlatGeobufDiff{}
	if old != nil {
		fg.FeaturesOld, _ = strconv.ParseInt(old.SummaryValue("features"), 10, 64)
	}
	if cur != nil {
		fg.FeaturesNew, _ = strconv.ParseInt(cur.SummaryValue("features"), 10, 64)
	}
	if old != nil && cur != nil {
		for _, f := range fgbHeaderFields {
			if old.SummaryValue(f) != cur.SummaryValue(f) {
				fg.HeaderChanged = true
			}
		}
		fg.CRSChanged = old.SummaryValue("crs") != cur.SummaryValue("crs")
	}
	for _, k := range d.Keys {
		// "f/<hash>[.<n>]" is a block of feature records; the rest is the
		// header and the index.
		if k.Change != manifest.Unchanged && strings.HasPrefix(k.Key, "f/") {
			fg.BlocksChanged++
		}
	}
	return fg
}

// levelOf is the pyramid level of a TIFF block key of the first pyramid
// (z<level>/…, or mask/z<level>/… for its mask); ok is false for gaps,
// second pyramids (ifd<N>/…) and keys the tiff adapter does not write.
func levelOf(key string) (level int, mask bool, ok bool) {
	k, ok := tiff.ParseKey(key)
	if !ok || k.Gap || k.IFD >= 0 || k.Level < 0 {
		return -1, false, false
	}
	return k.Level, k.Mask, true
}

// rowGroupOf is the row group and column of a Parquet chunk key; ok is
// false for gaps and keys the parquet adapter does not write.
func rowGroupOf(key string) (rg int, col string, ok bool) {
	k, ok := parquet.ParseKey(key)
	if !ok || k.Gap {
		return 0, "", false
	}
	return k.RowGroup, k.Column, true
}
