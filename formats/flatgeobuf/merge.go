package flatgeobuf

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// A three-way merge of FlatGeobuf files works on their feature sets: a
// feature is named by its key column's value, or (without a key column,
// or where the value is null) by its content, and each name is merged on
// its own against the base. The merged features are written with the
// header of the side whose header changed (features_count and envelope
// patched), in Hilbert order, under a regenerated index.

// MergeSide is one version of a FlatGeobuf file in a merge; a zero Size
// is a base that does not exist (two histories without a common file).
type MergeSide struct {
	R    io.ReaderAt
	Size int64
}

// MergeConflict is a feature (Key, BBox) or, with Key empty, the header
// that cannot be merged.
type MergeConflict struct {
	Key    string
	BBox   *geom.BBox
	Reason string
}

// MergePlan is the merged file: which side's header, and which records of
// which side in which order. It holds, per merged feature, its Feature
// (hash, bbox, source offset and length) and its side; the sides' key
// indexes are gone once it is made.
type MergePlan struct {
	magic    []byte
	header   []byte // patched
	nodeSize uint16
	feats    []Feature
	from     []uint8 // per feature: 1 ours, 2 theirs
	// FromTheirs counts the features taken from theirs (added or changed
	// there); Theirs says the header is theirs.
	FromTheirs int
	Theirs     bool
	key        string // the key column, for conflicts
	take       func(string) int
}

// Count is the number of features of the merged file.
func (p *MergePlan) Count() int { return len(p.feats) }

// entry is one key of a side: its record (the first, for content keys
// with copies) and how many records have it.
type entry struct {
	key    string
	id     hashing.ID
	n      int
	bb     geom.BBox
	off    int64
	length int64
}

// sideIndex is one side's features by key: its entries in file order,
// and each key's place among them. A key is "=" and the key column's
// value, or "#" and the record's hash (raw bytes: no key column, or a
// null value).
type sideIndex struct {
	f       *file
	r       io.ReaderAt
	by      map[string]int
	entries []entry
}

// get returns the entry of key k, or nil.
func (s *sideIndex) get(k string) *entry {
	if s == nil {
		return nil
	}
	if i, ok := s.by[k]; ok {
		return &s.entries[i]
	}
	return nil
}

// keyName spells key k of column col for a person: "col=value", or
// "feature/" and the start of the hash.
func keyName(col, k string) string {
	if rest, ok := strings.CutPrefix(k, "#"); ok {
		return "feature/" + hex.EncodeToString([]byte(rest))[:16]
	}
	return col + "=" + sanitize([]byte(k[1:]), 120)
}

// MergeOptions says how PlanMerge names features and settles conflicts.
type MergeOptions struct {
	// Key is the key column; "" (or a column a side lacks) keys features
	// by content.
	Key string
	// Take, when not nil, settles a feature both sides changed, by the
	// name a conflict gives it: TakeOurs or TakeTheirs, else TakeNone
	// leaves it a conflict.
	Take func(name string) int
}

// The sides MergeOptions.Take picks.
const (
	TakeNone = iota
	TakeOurs
	TakeTheirs
)

// PlanMerge reads the three versions' headers and records and merges
// their feature sets by key. Conflicts (the same feature changed
// differently and not settled by Take, the header or columns changed on
// both sides, a key on several features) return no plan.
func PlanMerge(ctx context.Context, base, ours, theirs MergeSide, opt MergeOptions) (*MergePlan, []MergeConflict, error) {
	key := opt.Key
	var sides [3]*sideIndex
	for i, s := range []MergeSide{base, ours, theirs} {
		if i == 0 && s.Size == 0 {
			continue
		}
		si, cs, err := indexSide(ctx, s, key, [3]string{"base", "ours", "theirs"}[i])
		if err != nil || len(cs) > 0 {
			return nil, cs, err
		}
		sides[i] = si
	}
	p, cs, err := planHeader(sides)
	if err != nil || len(cs) > 0 {
		return nil, cs, err
	}
	p.key, p.take = key, opt.Take
	if cs := p.planFeatures(sides); len(cs) > 0 {
		return nil, cs, nil
	}
	if p.nodeSize > 0 {
		hilbertSort(p.feats, func(i, j int) { p.from[i], p.from[j] = p.from[j], p.from[i] })
	}
	if err := p.patchHeader(); err != nil {
		return nil, []MergeConflict{{Reason: err.Error()}}, nil
	}
	return p, nil, nil
}

// indexSide walks one side's records into its key index.
func indexSide(ctx context.Context, s MergeSide, key, name string) (*sideIndex, []MergeConflict, error) {
	f, err := parseHead(s.R, s.Size)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	sch := &Schema{types: f.h.colTypes}
	keyAt := -1
	for i, c := range f.h.columns {
		if key != "" && string(c) == key {
			keyAt = i
		}
	}
	// Every record takes at least 8 bytes, which bounds the preallocation.
	n := min(f.h.count, uint64(s.Size-f.featOff)/8)
	si := &sideIndex{f: f, r: s.R, by: make(map[string]int, n), entries: make([]entry, 0, n)}
	var dup []MergeConflict
	var buf []byte
	err = f.walk(ctx, s.R, s.Size, true, func(ft *Feature) error {
		buf = buf[:0]
		if keyAt >= 0 {
			t, err := root(f.rec)
			if err != nil {
				return err
			}
			err = sch.eachProperty(t, func(c int, typ uint8, v []byte) {
				switch {
				case c != keyAt:
				case typ < colString:
					buf = fmt.Append(append(buf, '='), fixedValue(typ, v))
				default:
					buf = append(append(buf, '='), v...)
				}
			})
			if err != nil {
				return fmt.Errorf("feature at %d: %w", ft.Off, err)
			}
		}
		named := len(buf) > 0
		if !named {
			buf = append(append(buf, '#'), ft.ID[:]...)
		}
		if i, ok := si.by[string(buf)]; ok {
			// Copies of one feature merge as a count; a key on two
			// features cannot say which of them an edit changed.
			e := &si.entries[i]
			if named {
				dup = append(dup, MergeConflict{Key: keyName(key, e.key), BBox: boxOf(ft.BBox), Reason: fmt.Sprintf("the key is on more than one feature of %s", name)})
			}
			e.n++
			return nil
		}
		k := string(buf)
		si.by[k] = len(si.entries)
		si.entries = append(si.entries, entry{key: k, id: ft.ID, n: 1, bb: ft.BBox, off: ft.Off, length: ft.Len})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return si, dup, nil
}

// boxOf is b, or nil for a feature without coordinates.
func boxOf(b geom.BBox) *geom.BBox {
	if !(b.MinX <= b.MaxX && b.MinY <= b.MaxY) {
		return nil
	}
	return &b
}

// planHeader picks the header: the sides must agree on the columns and
// geometry (their records are decoded by them), and the rest (name, CRS,
// metadata) merges three ways, features_count and envelope aside.
func planHeader(sides [3]*sideIndex) (*MergePlan, []MergeConflict, error) {
	o, t := sides[1].f.h, sides[2].f.h
	if why := schemaDiff(o, t); why != "" {
		return nil, []MergeConflict{{Reason: "the sides' schemas differ: " + why}}, nil
	}
	var norm [3][]byte
	for i, s := range sides {
		if s == nil {
			continue
		}
		b, err := headerBytes(s)
		if err != nil {
			return nil, nil, err
		}
		norm[i] = b
	}
	p := &MergePlan{}
	switch {
	case bytes.Equal(norm[1], norm[2]), sides[0] != nil && bytes.Equal(norm[2], norm[0]):
	case sides[0] != nil && bytes.Equal(norm[1], norm[0]):
		p.Theirs = true
	default:
		return nil, []MergeConflict{{Reason: "the header (name, CRS, index node size or metadata) changed on both sides"}}, nil
	}
	src := sides[1]
	if p.Theirs {
		src = sides[2]
	}
	raw, err := rawHeader(src)
	if err != nil {
		return nil, nil, err
	}
	p.magic, p.header, p.nodeSize = raw[:magicLen], raw[magicLen+4:], src.f.h.nodeSize
	return p, nil, nil
}

// schemaDiff says how two headers' columns or geometry differ, or "".
func schemaDiff(a, b *header) string {
	switch {
	case a.geomType != b.geomType || a.hasZ != b.hasZ || a.hasM != b.hasM || a.hasT != b.hasT || a.hasTM != b.hasTM:
		return "geometry type or dimensions"
	case len(a.columns) != len(b.columns):
		return fmt.Sprintf("%d columns on ours, %d on theirs", len(a.columns), len(b.columns))
	}
	for i := range a.columns {
		if !bytes.Equal(a.columns[i], b.columns[i]) || a.colTypes[i] != b.colTypes[i] {
			return fmt.Sprintf("column %d is %s (type %d) on ours, %s (type %d) on theirs",
				i, sanitize(a.columns[i], 64), a.colTypes[i], sanitize(b.columns[i], 64), b.colTypes[i])
		}
	}
	return ""
}

// rawHeader reads a side's magic, header length and header.
func rawHeader(s *sideIndex) ([]byte, error) {
	b := make([]byte, s.f.indexOff)
	return b, readAt(s.r, b, 0)
}

// headerBytes is a side's header with features_count and the envelope
// zeroed: what a merge compares.
func headerBytes(s *sideIndex) ([]byte, error) {
	raw, err := rawHeader(s)
	if err != nil {
		return nil, err
	}
	h := raw[magicLen+4:]
	if err := patchCountEnvelope(h, 0, geom.BBox{}); err != nil && err != errNoCount {
		return nil, err
	}
	return h, nil
}

// planFeatures merges the sides' keys: ours in our file order, then
// those only theirs has in theirs. A key one side left as the base takes
// the other side's; the same change on both sides is taken once.
func (p *MergePlan) planFeatures(sides [3]*sideIndex) []MergeConflict {
	var cs []MergeConflict
	n := len(sides[1].entries) + len(sides[2].entries)/8
	p.feats, p.from = make([]Feature, 0, n), make([]uint8, 0, n)
	visit := func(k string) {
		b, o, t := sides[0].get(k), sides[1].get(k), sides[2].get(k)
		take, from := o, uint8(1)
		switch {
		case same(o, t), same(t, b):
		case same(o, b):
			take, from = t, 2
			p.FromTheirs += takeCount(t)
		default:
			name := keyName(p.key, k)
			switch p.settle(name) {
			case TakeOurs:
			case TakeTheirs:
				take, from = t, 2
				p.FromTheirs += takeCount(t)
			default:
				cs = append(cs, featureConflict(name, b, o, t))
				return
			}
		}
		for range takeCount(take) {
			p.feats = append(p.feats, Feature{ID: take.id, BBox: take.bb, Off: take.off, Len: take.length})
			p.from = append(p.from, from)
		}
	}
	for i := range sides[1].entries {
		visit(sides[1].entries[i].key)
	}
	for i := range sides[2].entries {
		if k := sides[2].entries[i].key; sides[1].get(k) == nil {
			visit(k)
		}
	}
	return cs
}

// settle is what the options say of a conflicted feature.
func (p *MergePlan) settle(name string) int {
	if p.take == nil {
		return TakeNone
	}
	return p.take(name)
}

func takeCount(e *entry) int {
	if e == nil {
		return 0
	}
	return e.n
}

// same reports whether two sides have a key alike (or both lack it).
func same(a, b *entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.id == b.id && a.n == b.n
}

// featureConflict names a key both sides changed, with the union of its
// bboxes on the three sides.
func featureConflict(k string, b, o, t *entry) MergeConflict {
	c := MergeConflict{Key: k}
	for _, e := range []*entry{b, o, t} {
		if e != nil {
			if bb := boxOf(e.bb); bb != nil {
				c.BBox = geom.UnionPtr(c.BBox, bb)
			}
		}
	}
	switch {
	case o == nil:
		c.Reason = "deleted by ours, changed by theirs"
	case t == nil:
		c.Reason = "changed by ours, deleted by theirs"
	case b == nil:
		c.Reason = fmt.Sprintf("added on both sides, differently (ours %s, theirs %s)", o.id.Short(), t.id.Short())
	case o.id == t.id:
		c.Reason = fmt.Sprintf("copies of the feature: %d in the base, %d on ours, %d on theirs", b.n, o.n, t.n)
	default:
		c.Reason = fmt.Sprintf("feature changed on both sides (ours %s, theirs %s)", o.id.Short(), t.id.Short())
	}
	return c
}
