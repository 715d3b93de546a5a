package diffview

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
)

// maxListed caps the chunk keys text and markdown list per file.
const maxListed = 20

// HumanBytes spells n bytes in binary units with one decimal (1.5 MiB).
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func title(res *diff.Result) string {
	n := len(res.Files)
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("%s → %s: %d file%s changed", res.From, res.To, n, s)
}

func fmtPct(f float64) string {
	switch {
	case f == 0:
		return "0%"
	case f < 0.001:
		return "<0.1%"
	}
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

func chunkLine(c diff.ChunkCounts) string {
	return fmt.Sprintf("+%d -%d ~%d =%d", c.Added, c.Removed, c.Changed, c.Unchanged)
}

func sizeLine(f *diff.FileDiff) string {
	switch f.Status {
	case diff.Added:
		return HumanBytes(f.Size)
	case diff.Deleted:
		return HumanBytes(f.OldSize)
	}
	if f.Size == f.OldSize {
		return HumanBytes(f.Size)
	}
	return HumanBytes(f.OldSize) + " → " + HumanBytes(f.Size)
}

func levelsLine(t *diff.TiffDiff) string {
	var parts []string
	for _, l := range t.Levels {
		name := "z" + strconv.Itoa(l.Level)
		if l.Mask {
			name = "mask/" + name
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", name, l.Changed, l.Total))
	}
	return strings.Join(parts, ", ")
}

func changedWord(b bool) string {
	if b {
		return "changed"
	}
	return "unchanged"
}

func intsLine(v []int, max int) string {
	var parts []string
	for i, n := range v {
		if i == max {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(v)))
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", ")
}

func stringsLine(v []string, max int) string {
	if len(v) > max {
		return strings.Join(v[:max], ", ") + fmt.Sprintf(", … (%d in all)", len(v))
	}
	return strings.Join(v, ", ")
}

func signed(n int64) string {
	if n >= 0 {
		return "+" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// detailLines are the format-aware facts, as (label, text) pairs.
func detailLines(f *diff.FileDiff) [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	if f.Status == diff.Renamed {
		add("renamed", f.OldPath+" → "+f.Path)
	}
	if f.Status == diff.Rewritten {
		v := f.OldPath + " → " + f.Path
		if f.Size > 0 {
			v += fmt.Sprintf(", %s of bytes shared", fmtPct(float64(f.SharedBytes)/float64(f.Size)))
		}
		add("rewritten", v)
	}
	if f.OldFormat != "" {
		add("format", f.OldFormat+" → "+f.Format)
	}
	add("chunks", chunkLine(f.Chunks))
	add("to move", HumanBytes(f.Bytes))
	if f.BBox != nil {
		v := f.BBox.String()
		if f.CRS != "" {
			v += " (" + f.CRS + ")"
		}
		if fr := geom.Fraction(f.BBox, f.Extent); fr > 0 {
			v += ", " + fmtPct(fr) + " of the extent"
		}
		add("area", v)
	} else if f.CRS != "" {
		add("crs", f.CRS)
	}
	if t := f.Tiff; t != nil && len(t.Levels) > 0 {
		add("levels", levelsLine(t))
	}
	if p := f.Parquet; p != nil {
		add("rows", fmt.Sprintf("%d → %d (%s)", p.RowsOld, p.RowsNew, signed(p.RowsNew-p.RowsOld)))
		rg := fmt.Sprintf("%d → %d", p.RowGroupsOld, p.RowGroupsNew)
		if len(p.RowGroupsChanged) > 0 {
			rg += "; changed: " + intsLine(p.RowGroupsChanged, 20)
		}
		add("row groups", rg)
		if len(p.ColumnsChanged) > 0 {
			add("columns", stringsLine(p.ColumnsChanged, 20))
		}
		if f.Status == diff.Modified || f.Status == diff.Renamed || f.Status == diff.Rewritten {
			add("schema", changedWord(p.SchemaChanged)+"; geo metadata "+changedWord(p.GeoChanged))
		}
	}
	if fg := f.FlatGeobuf; fg != nil {
		add("features", fmt.Sprintf("%d → %d (%s)", fg.FeaturesOld, fg.FeaturesNew, signed(fg.FeaturesNew-fg.FeaturesOld)))
		add("blocks", fmt.Sprintf("%d changed", fg.BlocksChanged))
		if fg.Compared {
			add("feature set", fmt.Sprintf("+%d -%d", fg.FeaturesAdded, fg.FeaturesRemoved))
		}
		if f.Status == diff.Modified || f.Status == diff.Renamed || f.Status == diff.Rewritten {
			h := changedWord(fg.HeaderChanged)
			if fg.CRSChanged {
				h += " (CRS changed)"
			}
			add("header", h)
		}
	}
	if z := f.Zarr; z != nil {
		zarrLines(z, add)
	}
	for _, s := range f.SummaryChanges {
		if shownElsewhere(f.Format, s.Name) {
			continue
		}
		add("summary", fmt.Sprintf("%s %s → %s", s.Name, orNone(s.Old), orNone(s.New)))
	}
	if f.Reencoded != "" {
		add("re-encoded", f.Reencoded)
	}
	for _, w := range f.Warnings {
		if f.Reencoded != "" && strings.HasPrefix(w, "re-encoded:") {
			continue
		}
		add("warning", w)
	}
	return out
}

// shownElsewhere reports summary fields that detailLines already covers
// (or that say nothing to a reviewer).
func shownElsewhere(format, field string) bool {
	switch field {
	case "bbox", "ghost":
		return true
	}
	switch format {
	case formats.Parquet:
		return field == "rows" || field == "row_groups" || field == "schema" || field == "geo"
	case formats.FlatGeobuf:
		return field == "features"
	case "zarr":
		return field == "array" || field == "arrays" // the array lines
	}
	return false
}

// listChanges reports whether a file's chunk changes are worth listing
// one by one: not for whole-file additions, deletions and re-encodes.
func listChanges(f *diff.FileDiff) bool {
	return f.Status == diff.Modified && f.Reencoded == "" && len(f.Changes) > 0
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Text writes the human summary of res.
func Text(w io.Writer, res *diff.Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "diff %s\n", title(res))
	for i := range res.Files {
		f := &res.Files[i]
		fmt.Fprintf(bw, "\n%-9s %s  (%s, %s)\n", f.Status, f.Path, f.Format, sizeLine(f))
		for _, l := range detailLines(f) {
			fmt.Fprintf(bw, "  %-11s %s\n", l[0], l[1])
		}
		if listChanges(f) {
			for j, c := range f.Changes {
				if j == maxListed {
					fmt.Fprintf(bw, "  … and %d more (--format json lists all)\n", len(f.Changes)-maxListed)
					break
				}
				line := fmt.Sprintf("  %-8s %-24s %10s", c.Change, c.Key, HumanBytes(c.Bytes))
				if c.BBox != nil {
					line += "  " + c.BBox.String()
				}
				fmt.Fprintln(bw, line)
			}
		}
	}
	return bw.Flush()
}
