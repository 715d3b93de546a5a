package featurediff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// DefaultLimit is how many changes Compare lists when Input.Limit is 0;
// the totals always count them all.
const DefaultLimit = 10000

// Row is one decoded row or feature.
type Row struct {
	// Key is the key column's value as text; ignored when the table's key
	// source is KeyContent (the row's content hash names it then).
	Key      string
	Values   []any  // aligned with Table.Columns
	Geometry []byte // WKB of the primary geometry; nil when none
}

// Table is the decoded rows of one version of one file: only those of the
// row groups (blocks) whose chunks changed.
type Table struct {
	Path     string
	Key      KeyChoice
	Columns  []string
	Geometry string // the geometry column's name ("" when none)
	Rows     []Row
	// BytesRead is what decoding these rows fetched; RowGroups which row
	// groups they are (Parquet).
	BytesRead int64
	RowGroups []int
}

// Input is what Compare pairs: the old and new tables of every changed
// file (a file added has no old table, one deleted no new one).
type Input struct {
	Old, New []Table
	// Renames maps a rewritten file's new path to the path it was
	// rewritten from: rows moving between the two are not moves.
	Renames map[string]string
	Limit   int // changes listed; 0 = DefaultLimit, < 0 = none
}

// occ is one row of one side: the table it is in and the path it is
// compared under (an old path renamed to its new one).
type occ struct {
	t    *Table
	row  *Row
	path string
}

// Compare pairs the rows of in by key (see the package doc) and lists
// what changed.
func Compare(in Input) *Features {
	oldName := map[string]string{} // old path → new path
	for n, o := range in.Renames {
		oldName[o] = n
	}
	c := &comparer{files: map[string]*FileSummary{}, out: &Features{
		Files: []FileSummary{}, Changes: []Change{}, Duplicates: []Duplicate{}}}
	oldRows := c.index(in.Old, oldName, "old")
	newRows := c.index(in.New, nil, "new")
	keys := make([]string, 0, len(oldRows)+len(newRows))
	for k := range oldRows {
		keys = append(keys, k)
	}
	for k := range newRows {
		if _, ok := oldRows[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.pair(k, oldRows[k], newRows[k])
	}
	c.finish(in.Limit)
	return c.out
}

type comparer struct {
	files map[string]*FileSummary
	out   *Features
}

// file returns the summary of path, made from t on first use.
func (c *comparer) file(path string, t *Table) *FileSummary {
	f, ok := c.files[path]
	if !ok {
		f = &FileSummary{Path: path, Key: t.Key}
		c.files[path] = f
	}
	return f
}

// index groups the rows of tables by key, names each by the path it is
// compared under and reports keys held twice.
func (c *comparer) index(tables []Table, rename map[string]string, side string) map[string][]occ {
	rows := map[string][]occ{}
	for i := range tables {
		t := &tables[i]
		p := t.Path
		if n, ok := rename[p]; ok {
			p = n
		}
		f := c.file(p, t)
		f.BytesRead += t.BytesRead
		if side == "old" {
			f.RowGroupsOld = append(f.RowGroupsOld, t.RowGroups...)
		} else {
			f.RowGroups = append(f.RowGroups, t.RowGroups...)
			f.Key = t.Key
		}
		c.out.BytesRead += t.BytesRead
		for j := range t.Rows {
			r := &t.Rows[j]
			k := r.Key
			if t.Key.Source == KeyContent {
				k = contentKey(r)
			}
			rows[k] = append(rows[k], occ{t: t, row: r, path: p})
		}
	}
	for k, os := range rows {
		if len(os) < 2 || os[0].t.Key.Source == KeyContent {
			continue
		}
		d := Duplicate{Key: k}
		for _, o := range os {
			d.Paths = append(d.Paths, o.t.Path)
		}
		sort.Strings(d.Paths)
		c.out.Duplicates = append(c.out.Duplicates, d)
		c.out.Warnings = append(c.out.Warnings, fmt.Sprintf("duplicate key %s in the %s revision: %s", k, side, strings.Join(d.Paths, ", ")))
	}
	return rows
}

// contentKey names a row by the hash of its values and geometry.
func contentKey(r *Row) string {
	h := sha256.New()
	for _, v := range r.Values {
		fmt.Fprintf(h, "%T:%v\x00", v, v)
	}
	h.Write(r.Geometry)
	return "#" + hex.EncodeToString(h.Sum(nil))[:16]
}

// pair matches the old and new rows of key k: by path first (modified),
// then across paths (moved); what is left was removed or added.
func (c *comparer) pair(k string, olds, news []occ) {
	sort.SliceStable(olds, func(i, j int) bool { return olds[i].path < olds[j].path })
	sort.SliceStable(news, func(i, j int) bool { return news[i].path < news[j].path })
	usedNew := make([]bool, len(news))
	var left []occ
	for _, o := range olds {
		j := -1
		for i, n := range news {
			if !usedNew[i] && n.path == o.path {
				j = i
				break
			}
		}
		if j < 0 {
			left = append(left, o)
			continue
		}
		usedNew[j] = true
		if ch, ok := diffRows(k, o, news[j]); ok {
			c.add(ch, o, news[j])
		}
	}
	i := 0
	for j, n := range news {
		if usedNew[j] {
			continue
		}
		if i < len(left) {
			ch, _ := diffRows(k, left[i], n)
			ch.Change, ch.FromPath = Moved, left[i].t.Path
			c.add(ch, left[i], n)
			i++
			continue
		}
		c.add(wholeRow(k, nil, &n), occ{}, n)
	}
	for ; i < len(left); i++ {
		o := left[i]
		c.add(wholeRow(k, &o, nil), o, occ{})
	}
}

// add records ch and counts it in its files.
func (c *comparer) add(ch Change, o, n occ) {
	switch ch.Change {
	case Added:
		c.file(n.path, n.t).Added++
		c.out.Totals.Added++
	case Removed:
		c.file(o.path, o.t).Removed++
		c.out.Totals.Removed++
	case Modified:
		c.file(n.path, n.t).Modified++
		c.out.Totals.Modified++
	case Moved:
		c.file(o.path, o.t).MovedOut++
		c.file(n.path, n.t).MovedIn++
		c.out.Totals.Moved++
	}
	c.out.Changes = append(c.out.Changes, ch)
}

// diffRows compares one row's old and new versions; ok is false when they
// are equal.
func diffRows(k string, o, n occ) (Change, bool) {
	ch := Change{Change: Modified, Key: k, Path: n.t.Path, Columns: []Column{}}
	ch.GeometryOld, ch.BBoxOld = geometryOf(o.row.Geometry)
	ch.GeometryNew, ch.BBoxNew = geometryOf(n.row.Geometry)
	oldVals := map[string]any{}
	for i, name := range o.t.Columns {
		oldVals[name] = value(o.row.Values, i)
	}
	seen := map[string]bool{}
	for i, name := range n.t.Columns {
		seen[name] = true
		ov, nv := oldVals[name], value(n.row.Values, i)
		if !equal(ov, nv) {
			ch.Columns = append(ch.Columns, Column{Name: name, Old: ov, New: nv})
		}
	}
	for _, name := range o.t.Columns {
		if !seen[name] && oldVals[name] != nil {
			ch.Columns = append(ch.Columns, Column{Name: name, Old: oldVals[name]})
		}
	}
	if !bytes.Equal(o.row.Geometry, n.row.Geometry) {
		name := n.t.Geometry
		if name == "" {
			name = "geometry"
		}
		ch.Columns = append(ch.Columns, Column{Name: name, Old: ch.GeometryOld, New: ch.GeometryNew})
	}
	return ch, len(ch.Columns) > 0
}

// wholeRow is the change of a row only one side has: every column, with
// the missing side nil.
func wholeRow(k string, o, n *occ) Change {
	ch := Change{Key: k, Columns: []Column{}}
	side := n
	if o != nil {
		ch.Change, ch.Path, side = Removed, o.t.Path, o
		ch.GeometryOld, ch.BBoxOld = geometryOf(o.row.Geometry)
	} else {
		ch.Change, ch.Path = Added, n.t.Path
		ch.GeometryNew, ch.BBoxNew = geometryOf(n.row.Geometry)
	}
	for i, name := range side.t.Columns {
		v := value(side.row.Values, i)
		if o != nil {
			ch.Columns = append(ch.Columns, Column{Name: name, Old: v})
		} else {
			ch.Columns = append(ch.Columns, Column{Name: name, New: v})
		}
	}
	return ch
}

// value is vs[i] as the outputs carry it: a float that is not finite as
// its name ("NaN", "+Inf", "-Inf"), which JSON has no number for.
func value(vs []any, i int) any {
	if i >= len(vs) {
		return nil
	}
	switch x := vs[i].(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case float32:
		if x != x || math.IsInf(float64(x), 0) {
			return strconv.FormatFloat(float64(x), 'g', -1, 32)
		}
	}
	return vs[i]
}

// geometryOf decodes WKB b; nil when b is nil or not WKB.
func geometryOf(b []byte) (*Geometry, *[4]float64) {
	if b == nil {
		return nil, nil
	}
	g, err := ParseWKB(b)
	if err != nil {
		return nil, nil
	}
	return g, g.BBox()
}

// equal compares two column values; NaN equals NaN (an unchanged NaN is
// no change).
func equal(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || x != x && y != y)
	}
	if _, ok := b.([]byte); ok {
		return false
	}
	return a == b
}

// kindOrder sorts changes as the outputs list them.
var kindOrder = map[string]int{Added: 0, Removed: 1, Modified: 2, Moved: 3}

// finish sorts files, changes and duplicates and applies the limit.
func (c *comparer) finish(limit int) {
	for _, f := range c.files {
		sort.Ints(f.RowGroups)
		sort.Ints(f.RowGroupsOld)
		c.out.Files = append(c.out.Files, *f)
	}
	sort.Slice(c.out.Files, func(i, j int) bool { return c.out.Files[i].Path < c.out.Files[j].Path })
	ch := c.out.Changes
	sort.SliceStable(ch, func(i, j int) bool {
		if a, b := kindOrder[ch[i].Change], kindOrder[ch[j].Change]; a != b {
			return a < b
		}
		if ch[i].Path != ch[j].Path {
			return ch[i].Path < ch[j].Path
		}
		return KeyLess(ch[i].Key, ch[j].Key)
	})
	c.out.Sort()
	c.out.Limit(limit)
}

// Sort orders the duplicates by key and the warnings, after a caller
// added some.
func (f *Features) Sort() {
	sort.Slice(f.Duplicates, func(i, j int) bool { return KeyLess(f.Duplicates[i].Key, f.Duplicates[j].Key) })
	sort.Strings(f.Warnings)
}

// Limit keeps the first n changes (0 = DefaultLimit, < 0 = none) and
// sets Truncated when it drops some.
func (f *Features) Limit(n int) {
	if n == 0 {
		n = DefaultLimit
	}
	if n < 0 {
		n = 0
	}
	if len(f.Changes) > n {
		f.Changes, f.Truncated = f.Changes[:n], true
	}
}

// KeyLess orders keys numerically when both are integers, else as text.
func KeyLess(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return x < y
	}
	if (errA == nil) != (errB == nil) {
		return errA == nil
	}
	return a < b
}
