package diffview

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/geom"
)

// mdEscape keeps a value from breaking a table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Markdown writes a compact table per file for a pull-request comment.
func Markdown(w io.Writer, res *diff.Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### chunkvc diff `%s` → `%s`\n\n", mdEscape(res.From), mdEscape(res.To))
	if len(res.Files) == 0 {
		fmt.Fprintln(bw, "No tracked data files changed.")
		return bw.Flush()
	}
	fmt.Fprintln(bw, "| file | status | format | chunks +/−/~/= | to move | changed area |")
	fmt.Fprintln(bw, "|---|---|---|---|---|---|")
	for i := range res.Files {
		f := &res.Files[i]
		area := "—"
		if f.BBox != nil {
			area = "`" + f.BBox.String() + "`"
			if f.CRS != "" {
				area += " " + mdEscape(f.CRS)
			}
			if fr := geom.Fraction(f.BBox, f.Extent); fr > 0 {
				area += " (" + fmtPct(fr) + ")"
			}
		}
		fmt.Fprintf(bw, "| `%s` | %s | %s | %d / %d / %d / %d | %s | %s |\n", mdEscape(f.Path), f.Status, f.Format,
			f.Chunks.Added, f.Chunks.Removed, f.Chunks.Changed, f.Chunks.Unchanged, HumanBytes(f.Bytes), area)
	}
	for i := range res.Files {
		f := &res.Files[i]
		var rows [][2]string
		for _, l := range detailLines(f) {
			switch l[0] {
			case "chunks", "to move", "area", "crs":
				continue
			}
			rows = append(rows, l)
		}
		if len(rows) == 0 && !listChanges(f) {
			continue
		}
		fmt.Fprintf(bw, "\n#### `%s`\n\n", mdEscape(f.Path))
		if len(rows) > 0 {
			fmt.Fprintln(bw, "| | |\n|---|---|")
			for _, l := range rows {
				label := l[0]
				if label == "warning" || label == "re-encoded" {
					label = "⚠️ " + label
				}
				fmt.Fprintf(bw, "| %s | %s |\n", label, mdEscape(l[1]))
			}
		}
		if listChanges(f) {
			fmt.Fprintf(bw, "\n<details><summary>%d changed chunks</summary>\n\n", len(f.Changes))
			fmt.Fprintln(bw, "| key | change | bytes | bbox |\n|---|---|---|---|")
			for j, c := range f.Changes {
				if j == maxListed {
					fmt.Fprintf(bw, "| … | %d more | | |\n", len(f.Changes)-maxListed)
					break
				}
				b := ""
				if c.BBox != nil {
					b = "`" + c.BBox.String() + "`"
				}
				fmt.Fprintf(bw, "| `%s` | %s | %d | %s |\n", mdEscape(c.Key), c.Change, c.Bytes, b)
			}
			fmt.Fprintln(bw, "\n</details>")
		}
		mdTiles(bw, f)
	}
	return bw.Flush()
}

// mdTiles writes the measured raster tiles (diff --stats) as a table,
// capped at maxListed rows.
func mdTiles(w io.Writer, f *diff.FileDiff) {
	if len(f.Tiles) == 0 {
		return
	}
	fmt.Fprintf(w, "\n<details><summary>%d changed tiles measured</summary>\n\n", len(f.Tiles))
	fmt.Fprintln(w, "| tile | changed pixels | band: min / max / mean of new − old |\n|---|---|---|")
	for j, t := range f.Tiles {
		if j == maxListed {
			fmt.Fprintf(w, "| … | %d more | |\n", len(f.Tiles)-maxListed)
			break
		}
		stats := t.Error
		for _, b := range t.Bands {
			stats += fmt.Sprintf("b%d: %s / %s / %s ", b.Band, fmtNum(b.Min), fmtNum(b.Max), fmtNum(b.Mean))
		}
		fmt.Fprintf(w, "| `%s` | %d | %s |\n", mdEscape(t.Key), t.ChangedPixels, mdEscape(strings.TrimSpace(stats)))
	}
	fmt.Fprintln(w, "\n</details>")
}
