package featurediff

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MarkdownLimit caps the rows of each kind the markdown lists.
const MarkdownLimit = 50

// KeyLine spells a key choice for a header line: "id (detected)",
// "none: rows matched by content".
func (k KeyChoice) String() string {
	if k.Column == nil {
		return "none (rows matched by content: a modified row shows as removed + added)"
	}
	return fmt.Sprintf("%s (%s)", *k.Column, k.Source)
}

// Text writes f for a terminal: a header line per file with its key and
// counts, then one line per change with its changed columns (old -> new,
// geometries as WKT) beneath.
func Text(w io.Writer, f *Features) error {
	var b strings.Builder
	for _, fs := range f.Files {
		fmt.Fprintf(&b, "features %s: key %s\n", fs.Path, fs.Key)
		fmt.Fprintf(&b, "  added %d, removed %d, modified %d, moved in %d, moved out %d; %d bytes read\n",
			fs.Added, fs.Removed, fs.Modified, fs.MovedIn, fs.MovedOut, fs.BytesRead)
	}
	for _, ch := range f.Changes {
		switch ch.Change {
		case Added:
			fmt.Fprintf(&b, "+ %s %s %s\n", ch.Key, ch.Path, ch.GeometryNew.WKT())
		case Removed:
			fmt.Fprintf(&b, "- %s %s %s\n", ch.Key, ch.Path, ch.GeometryOld.WKT())
		case Modified:
			fmt.Fprintf(&b, "~ %s %s\n", ch.Key, ch.Path)
		case Moved:
			fmt.Fprintf(&b, "> %s %s -> %s\n", ch.Key, ch.FromPath, ch.Path)
		}
		if ch.Change == Modified || ch.Change == Moved {
			for _, c := range ch.Columns {
				fmt.Fprintf(&b, "    %s: %s -> %s\n", c.Name, TextValue(c.Old), TextValue(c.New))
			}
		}
	}
	for _, d := range f.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", d)
	}
	t := f.Totals
	fmt.Fprintf(&b, "features: %d added, %d removed, %d modified, %d moved; %d bytes read", t.Added, t.Removed, t.Modified, t.Moved, f.BytesRead)
	if f.Truncated {
		fmt.Fprintf(&b, " (%d changes listed)", len(f.Changes))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// TextValue spells a column value for text and markdown.
func TextValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case *Geometry:
		return x.WKT()
	case string:
		return strconv.Quote(x)
	case []byte:
		if len(x) > 16 {
			return fmt.Sprintf("0x%x… (%d bytes)", x[:16], len(x))
		}
		return fmt.Sprintf("0x%x", x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return fmt.Sprint(v)
}

// Markdown writes f for a pull-request comment: a table of files, then
// per kind a table of at most MarkdownLimit changes with the total.
func Markdown(w io.Writer, f *Features) error {
	var b strings.Builder
	t := f.Totals
	fmt.Fprintf(&b, "### Features: %d added, %d removed, %d modified, %d moved\n\n", t.Added, t.Removed, t.Modified, t.Moved)
	b.WriteString("| file | key | added | removed | modified | moved in | moved out | bytes read |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, fs := range f.Files {
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %d | %d | %d | %d |\n", fs.Path, mdEscape(fs.Key.String()),
			fs.Added, fs.Removed, fs.Modified, fs.MovedIn, fs.MovedOut, fs.BytesRead)
	}
	for _, kind := range []string{Added, Removed, Modified, Moved} {
		total := map[string]int{Added: t.Added, Removed: t.Removed, Modified: t.Modified, Moved: t.Moved}[kind]
		if total == 0 {
			continue
		}
		var rows []Change
		for _, ch := range f.Changes {
			if ch.Change == kind && len(rows) < MarkdownLimit {
				rows = append(rows, ch)
			}
		}
		fmt.Fprintf(&b, "\n#### %s (%d)\n\n", kind, total)
		markdownRows(&b, kind, rows)
		if len(rows) < total {
			fmt.Fprintf(&b, "\n…and %d more.\n", total-len(rows))
		}
	}
	if len(f.Warnings) > 0 {
		b.WriteString("\n")
		for _, d := range f.Warnings {
			fmt.Fprintf(&b, "> **Warning:** %s\n", mdEscape(d))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func markdownRows(b *strings.Builder, kind string, rows []Change) {
	switch kind {
	case Added, Removed:
		b.WriteString("| key | file | geometry |\n|---|---|---|\n")
		for _, ch := range rows {
			g := ch.GeometryNew
			if kind == Removed {
				g = ch.GeometryOld
			}
			fmt.Fprintf(b, "| %s | `%s` | %s |\n", mdEscape(ch.Key), ch.Path, mdEscape(g.WKT()))
		}
	default:
		b.WriteString("| key | file | changes |\n|---|---|---|\n")
		for _, ch := range rows {
			file := "`" + ch.Path + "`"
			if kind == Moved {
				file = "`" + ch.FromPath + "` → `" + ch.Path + "`"
			}
			cols := make([]string, 0, len(ch.Columns))
			for _, c := range ch.Columns {
				cols = append(cols, fmt.Sprintf("%s: %s → %s", c.Name, TextValue(c.Old), TextValue(c.New)))
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", mdEscape(ch.Key), file, mdEscape(strings.Join(cols, "; ")))
		}
	}
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// geoFeature is one GeoJSON Feature of GeoJSON's output.
type geoFeature struct {
	Type       string         `json:"type"`
	Geometry   *Geometry      `json:"geometry"`
	Properties map[string]any `json:"properties"`
}

// GeoJSON writes f as a FeatureCollection: a feature per side of each
// change, "before" with the old geometry and "after" with the new one,
// properties change, side, key, path (from_path for moves) and, for
// modified and moved ones, the names of the changed columns. Coordinates
// are written as f holds them: the files' own, unless the caller
// reprojected them (Geometry.Project).
func GeoJSON(w io.Writer, f *Features) error {
	feats := []geoFeature{}
	for _, ch := range f.Changes {
		props := func(side string) map[string]any {
			p := map[string]any{"change": ch.Change, "side": side, "key": ch.Key, "path": ch.Path}
			if ch.FromPath != "" {
				p["from_path"] = ch.FromPath
			}
			if ch.Change == Modified || ch.Change == Moved {
				names := make([]string, len(ch.Columns))
				for i, c := range ch.Columns {
					names[i] = c.Name
				}
				p["changed"] = names
			}
			return p
		}
		if ch.Change != Added {
			feats = append(feats, geoFeature{Type: "Feature", Geometry: ch.GeometryOld, Properties: props("before")})
		}
		if ch.Change != Removed {
			feats = append(feats, geoFeature{Type: "Feature", Geometry: ch.GeometryNew, Properties: props("after")})
		}
	}
	// One feature a line: readable, and a small diff when a review
	// changes.
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i, ft := range feats {
		j, err := json.Marshal(ft)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(j)
	}
	b.WriteString("\n]}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
