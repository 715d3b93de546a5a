package diffview

import (
	"bufio"
	"fmt"
	"io"

	"github.com/chunkvc/chunkvc/diff"
)

// shortRev is a commit's first 12 hex digits.
func shortRev(s string) string { return s[:min(12, len(s))] }

// ConflictText writes what a stopped merge left conflicted: per file its
// conflicts (key, bbox, reason), then how to settle them.
func ConflictText(w io.Writer, rep *diff.ConflictReport) error {
	bw := bufio.NewWriter(w)
	if rep.Operation == "" {
		fmt.Fprintln(bw, "no merge, cherry-pick or rebase is stopped here: nothing is conflicted")
		return bw.Flush()
	}
	fmt.Fprintf(bw, "%s of %s into %s: %d conflicts in %d data files\n", rep.Operation, shortRev(rep.Theirs), shortRev(rep.Ours), rep.Count(), len(rep.Files))
	for _, f := range rep.Files {
		crs := ""
		if f.CRS != "" {
			crs = ", bboxes in " + f.CRS
		}
		fmt.Fprintf(bw, "\n%s (%s%s)\n", f.Path, f.Format, crs)
		for _, c := range f.Conflicts {
			key := c.Key
			if key == "" {
				key = "(whole file)"
			}
			box := ""
			if c.BBox != nil {
				box = "  [" + c.BBox.String() + "]"
			}
			fmt.Fprintf(bw, "  %s%s: %s\n", key, box, c.Reason)
		}
	}
	if len(rep.Files) > 0 {
		fmt.Fprintln(bw, "\nsettle with chunkvc resolve PATH --ours|--theirs, or --take ours|theirs KEY...;")
		fmt.Fprintln(bw, "then chunkvc merge --continue (or git merge --abort to undo)")
	}
	return bw.Flush()
}

// ConflictMarkdown writes the conflicts as a table per file, for a
// pull-request comment or an issue (capped at maxListed rows a file).
func ConflictMarkdown(w io.Writer, rep *diff.ConflictReport) error {
	bw := bufio.NewWriter(w)
	if rep.Operation == "" {
		fmt.Fprintln(bw, "No merge, cherry-pick or rebase is stopped: nothing is conflicted.")
		return bw.Flush()
	}
	fmt.Fprintf(bw, "### chunkvc: %d conflicts (%s of `%s` into `%s`)\n", rep.Count(), rep.Operation, shortRev(rep.Theirs), shortRev(rep.Ours))
	for _, f := range rep.Files {
		fmt.Fprintf(bw, "\n#### `%s` (%s", mdEscape(f.Path), f.Format)
		if f.CRS != "" {
			fmt.Fprintf(bw, ", %s", mdEscape(f.CRS))
		}
		fmt.Fprintf(bw, ")\n\n| key | bbox | reason |\n|---|---|---|\n")
		for i, c := range f.Conflicts {
			if i == maxListed {
				fmt.Fprintf(bw, "| … | %d more | |\n", len(f.Conflicts)-maxListed)
				break
			}
			key, box := "whole file", "—"
			if c.Key != "" {
				key = "`" + mdEscape(c.Key) + "`"
			}
			if c.BBox != nil {
				box = "`" + c.BBox.String() + "`"
			}
			fmt.Fprintf(bw, "| %s | %s | %s |\n", key, box, mdEscape(c.Reason))
		}
	}
	return bw.Flush()
}

// ConflictGeoJSON writes the conflicts' footprints (m is the map
// repo.Repo.Conflicts returns) like GeoJSON writes changes, each feature
// with path, key, change "conflict" and reason.
func ConflictGeoJSON(w io.Writer, rep *diff.ConflictReport, m *diff.Result, toLonLat Reprojector) (string, error) {
	reasons := map[[2]string]string{}
	for _, f := range rep.Files {
		for _, c := range f.Conflicts {
			reasons[[2]string{f.Path, c.Key}] = c.Reason
		}
	}
	return geoJSON(w, m, toLonLat, func(f *diff.FileDiff, c diff.ChunkChange) map[string]any {
		return map[string]any{"path": f.Path, "key": c.Key, "change": c.Change, "reason": reasons[[2]string{f.Path, c.Key}]}
	})
}
