package diffview

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
)

// maxArrays caps the arrays text and markdown describe one by one.
const maxArrays = 20

// zarrLines are the per-array facts of a dataset's diff: one line per
// array that changed, "t2m: 5 of 16000 chunks changed; time 49 (chunk 49)",
// then one per encoding drift.
func zarrLines(z *diff.ZarrDiff, add func(k, v string)) {
	for i, a := range z.Arrays {
		if i == maxArrays {
			add("arrays", fmt.Sprintf("… and %d more (--format json lists all)", len(z.Arrays)-maxArrays))
			break
		}
		add("array", ArrayLine(a))
		for _, d := range a.Drift {
			add("drift", arrayName(a.Array)+": "+d)
		}
		zarrStatLines(a, add)
	}
}

// zarrStatLines are an array's value statistics (diff --stats): its
// totals, "t2m: 37 elements changed in 3 chunks, new − old -2..4 mean
// 0.5", then one line per measured chunk, up to maxArrays.
func zarrStatLines(a diff.ZarrArray, add func(k, v string)) {
	if t := a.Stats; t != nil {
		add("values", fmt.Sprintf("%s: %d elements changed in %d chunks measured%s", arrayName(a.Array), t.Changed, t.Chunks, diffWords(t.Numeric, t.Min, t.Max, t.Mean)))
	}
	for j, c := range a.Chunks {
		if j == maxArrays {
			add("chunks", fmt.Sprintf("… and %d more measured (--format json lists all)", len(a.Chunks)-maxArrays))
			return
		}
		if c.Error != "" {
			add("chunk", c.Key+" "+c.Error)
			continue
		}
		add("chunk", fmt.Sprintf("%s %s: %d of %d elements changed%s", c.Key, c.Change, c.Changed, c.Elements, diffWords(c.Numeric, c.Min, c.Max, c.Mean)))
	}
}

// diffWords spells the statistics of numeric differences new − old.
func diffWords(numeric int64, lo, hi, mean float64) string {
	if numeric == 0 {
		return ""
	}
	return fmt.Sprintf(", new − old %s..%s mean %s", fmtNum(lo), fmtNum(hi), fmtNum(mean))
}

func arrayName(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// ArrayLine spells one array's change: "t2m: 5 of 16000 chunks changed
// (+0 -0 ~5); time 49".
func ArrayLine(a diff.ZarrArray) string {
	var b strings.Builder
	b.WriteString(arrayName(a.Array) + ": ")
	switch a.Change {
	case diff.ChunkAdded:
		fmt.Fprintf(&b, "added, %d of %d chunks stored, shape %s", a.Stored, a.Total, shapeWord(a.ShapeNew))
		return b.String()
	case diff.ChunkRemoved:
		fmt.Fprintf(&b, "removed (%d chunks, shape %s)", a.Stored, shapeWord(a.ShapeOld))
		return b.String()
	}
	n := a.Added + a.Removed + a.Changed
	fmt.Fprintf(&b, "%d of %d chunks changed (+%d -%d ~%d)", n, a.Total, a.Added, a.Removed, a.Changed)
	if a.ShapeOld != nil && a.ShapeNew != nil && shapeWord(a.ShapeOld) != shapeWord(a.ShapeNew) {
		fmt.Fprintf(&b, "; shape %s → %s", shapeWord(a.ShapeOld), shapeWord(a.ShapeNew))
	}
	var dims []string
	for _, d := range a.Dims {
		name := d.Name
		if name == "" {
			name = "dim" + strconv.Itoa(d.Dim)
		}
		r := rangeWord(d.Elements)
		if d.Appended {
			r += " appended"
		}
		if len(d.Dates) == 2 {
			r += " (" + diff.DateRange(d.Dates) + ")"
		}
		dims = append(dims, name+" "+r)
	}
	if len(dims) > 0 {
		b.WriteString("; " + strings.Join(dims, ", "))
	}
	return b.String()
}

func rangeWord(r [2]int64) string {
	if r[0] == r[1] {
		return strconv.FormatInt(r[0], 10)
	}
	return strconv.FormatInt(r[0], 10) + ".." + strconv.FormatInt(r[1], 10)
}

func shapeWord(s []int64) string {
	if len(s) == 0 {
		return "()"
	}
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, "x")
}
