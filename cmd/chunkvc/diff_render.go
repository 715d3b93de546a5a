package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

// maxListed caps the chunk keys text and markdown list per file.
const maxListed = 20

func diffTitle(res *diff.Result) string {
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
		return humanBytes(f.Size)
	case diff.Deleted:
		return humanBytes(f.OldSize)
	}
	if f.Size == f.OldSize {
		return humanBytes(f.Size)
	}
	return humanBytes(f.OldSize) + " → " + humanBytes(f.Size)
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
	if f.OldFormat != "" {
		add("format", f.OldFormat+" → "+f.Format)
	}
	add("chunks", chunkLine(f.Chunks))
	add("to move", humanBytes(f.Bytes))
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
		if f.Status == diff.Modified || f.Status == diff.Renamed {
			add("schema", changedWord(p.SchemaChanged)+"; geo metadata "+changedWord(p.GeoChanged))
		}
	}
	if fg := f.FlatGeobuf; fg != nil {
		add("features", fmt.Sprintf("%d → %d (%s)", fg.FeaturesOld, fg.FeaturesNew, signed(fg.FeaturesNew-fg.FeaturesOld)))
		add("blocks", fmt.Sprintf("%d changed", fg.BlocksChanged))
		if fg.Compared {
			add("feature set", fmt.Sprintf("+%d -%d", fg.FeaturesAdded, fg.FeaturesRemoved))
		}
		if f.Status == diff.Modified || f.Status == diff.Renamed {
			h := changedWord(fg.HeaderChanged)
			if fg.CRSChanged {
				h += " (CRS changed)"
			}
			add("header", h)
		}
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

// renderText is the human summary.
func renderText(w io.Writer, res *diff.Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "diff %s\n", diffTitle(res))
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
				line := fmt.Sprintf("  %-8s %-24s %10s", c.Change, c.Key, humanBytes(c.Bytes))
				if c.BBox != nil {
					line += "  " + c.BBox.String()
				}
				fmt.Fprintln(bw, line)
			}
		}
	}
	return bw.Flush()
}

// mdEscape keeps a value from breaking a table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// renderMarkdown prints a compact table per file for a pull-request comment.
func renderMarkdown(w io.Writer, res *diff.Result) error {
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
			f.Chunks.Added, f.Chunks.Removed, f.Chunks.Changed, f.Chunks.Unchanged, humanBytes(f.Bytes), area)
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
	}
	return bw.Flush()
}

// mapChanges are the changes a map shows: for TIFF only the finest level
// that changed (overview tiles would cover the whole image), otherwise
// every changed chunk with a footprint.
func mapChanges(f *diff.FileDiff) []diff.ChunkChange {
	finest := -1
	if f.Tiff != nil {
		for _, l := range f.Tiff.Levels {
			if l.Changed > 0 && !l.Mask && (finest < 0 || l.Level < finest) {
				finest = l.Level
			}
		}
	}
	var out []diff.ChunkChange
	for _, c := range f.Changes {
		if c.BBox == nil {
			continue
		}
		if finest >= 0 && !atLevel(c.Key, finest) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// atLevel reports whether key is a block of level lv of a TIFF's first
// pyramid (not its mask).
func atLevel(key string, lv int) bool {
	k, ok := tiff.ParseKey(key)
	return ok && !k.Gap && k.IFD < 0 && !k.Mask && k.Level == lv
}

// isLonLat reports whether crs is longitude/latitude on WGS 84 as GeoTIFF,
// GeoParquet and FlatGeobuf spell footprints (x = longitude).
func isLonLat(crs string) bool {
	switch strings.ToUpper(crs) {
	case "EPSG:4326", "OGC:CRS84", "CRS84":
		return true
	}
	return false
}

type geoFeature struct {
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
	Geometry   geoPolygon     `json:"geometry"`
}

type geoPolygon struct {
	Type        string         `json:"type"`
	Coordinates [][][2]float64 `json:"coordinates"`
}

// ring is the closed, counter-clockwise outline of b with n points per edge.
func ring(b geom.BBox, n int) (xs, ys []float64) {
	corners := [][2]float64{{b.MinX, b.MinY}, {b.MaxX, b.MinY}, {b.MaxX, b.MaxY}, {b.MinX, b.MaxY}}
	for i := 0; i < 4; i++ {
		a, c := corners[i], corners[(i+1)%4]
		for k := 0; k < n; k++ {
			t := float64(k) / float64(n)
			xs = append(xs, a[0]+(c[0]-a[0])*t)
			ys = append(ys, a[1]+(c[1]-a[1])*t)
		}
	}
	return append(xs, xs[0]), append(ys, ys[0])
}

func round7(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// renderGeoJSON prints the changed chunks' footprints as an RFC 7946
// FeatureCollection in EPSG:4326. Footprints in another CRS are reprojected
// with GDAL; a build without GDAL writes them in their own CRS with a
// (pre-RFC 7946) "crs" member instead, and says so in the returned note.
func renderGeoJSON(w io.Writer, res *diff.Result) (string, error) {
	type fc struct {
		Type     string         `json:"type"`
		CRS      map[string]any `json:"crs,omitempty"`
		Features []geoFeature   `json:"features"`
	}
	out := fc{Type: "FeatureCollection", Features: []geoFeature{}}
	var notes []string
	nativeCRS := ""
	for i := range res.Files {
		f := &res.Files[i]
		changes := mapChanges(f)
		if len(changes) == 0 {
			continue
		}
		var project func(x, y []float64) error
		densify := 1
		switch {
		case isLonLat(f.CRS):
		case f.CRS == "" || f.CRS == "undefined" || f.CRS == "user-defined":
			notes = append(notes, fmt.Sprintf("%s: CRS %q unknown, footprints left out", f.Path, f.CRS))
			continue
		default:
			fn, release, err := lonLatTransform(f.CRS)
			if err == nil {
				defer release()
				project, densify = fn, 8
				break
			}
			if haveGDAL {
				notes = append(notes, fmt.Sprintf("%s: cannot reproject %s: %v; footprints left out", f.Path, f.CRS, err))
				continue
			}
			if nativeCRS != "" && nativeCRS != f.CRS {
				notes = append(notes, fmt.Sprintf("%s: footprints in %s left out (without GDAL one collection holds one CRS, here %s)", f.Path, f.CRS, nativeCRS))
				continue
			}
			nativeCRS = f.CRS
		}
		for _, c := range changes {
			xs, ys := ring(*c.BBox, densify)
			if project != nil {
				if err := project(xs, ys); err != nil {
					return "", fmt.Errorf("%s: reproject %s from %s: %w", f.Path, c.Key, f.CRS, err)
				}
			}
			pts := make([][2]float64, len(xs))
			for k := range xs {
				pts[k] = [2]float64{round7(xs[k]), round7(ys[k])}
			}
			out.Features = append(out.Features, geoFeature{Type: "Feature",
				Properties: map[string]any{"path": f.Path, "key": c.Key, "change": c.Change, "bytes": c.Bytes},
				Geometry:   geoPolygon{Type: "Polygon", Coordinates: [][][2]float64{pts}}})
		}
	}
	if nativeCRS != "" {
		name := nativeCRS
		if org, code, ok := strings.Cut(nativeCRS, ":"); ok {
			name = "urn:ogc:def:crs:" + org + "::" + code
		}
		out.CRS = map[string]any{"type": "name", "properties": map[string]string{"name": name}}
		notes = append(notes, fmt.Sprintf("built without GDAL: footprints are in %s with a non-standard \"crs\" member, not EPSG:4326 as RFC 7946 asks (GDAL and QGIS read it; build with -tags gdal to reproject)", nativeCRS))
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		return "", err
	}
	return strings.Join(notes, "; "), nil
}

// PNG drawing.

var (
	colBackground = color.RGBA{236, 236, 236, 255}
	colExtent     = color.RGBA{90, 90, 90, 255}
	colGrid       = color.RGBA{170, 170, 170, 255}
	colChanged    = color.RGBA{230, 30, 30, 255}
	colAdded      = color.RGBA{20, 170, 40, 255}
	colRemoved    = color.RGBA{40, 80, 230, 255}
	colArea       = color.RGBA{255, 200, 0, 255}
)

// canvas maps map coordinates of an extent onto an image.
type canvas struct {
	img    *image.RGBA
	extent geom.BBox
}

func (c *canvas) px(x, y float64) (int, int) {
	b := c.img.Bounds()
	e := c.extent
	fx := (x - e.MinX) / (e.MaxX - e.MinX) * float64(b.Dx())
	fy := (e.MaxY - y) / (e.MaxY - e.MinY) * float64(b.Dy())
	return int(math.Floor(fx)), int(math.Floor(fy))
}

// rect returns the pixel rectangle of box, at least min pixels wide and high.
func (c *canvas) rect(box geom.BBox, minSide int) image.Rectangle {
	x0, y1 := c.px(box.MinX, box.MinY)
	x1, y0 := c.px(box.MaxX, box.MaxY)
	r := image.Rect(x0, y0, x1, y1)
	for r.Dx() < minSide {
		r.Min.X--
		r.Max.X++
	}
	for r.Dy() < minSide {
		r.Min.Y--
		r.Max.Y++
	}
	return r
}

func (c *canvas) outline(r image.Rectangle, col color.RGBA, width int) {
	for i := 0; i < width; i++ {
		rr := r.Inset(i)
		if rr.Empty() {
			return
		}
		for x := rr.Min.X; x < rr.Max.X; x++ {
			c.set(x, rr.Min.Y, col)
			c.set(x, rr.Max.Y-1, col)
		}
		for y := rr.Min.Y; y < rr.Max.Y; y++ {
			c.set(rr.Min.X, y, col)
			c.set(rr.Max.X-1, y, col)
		}
	}
}

func (c *canvas) set(x, y int, col color.RGBA) {
	if image.Pt(x, y).In(c.img.Bounds()) {
		c.img.SetRGBA(x, y, col)
	}
}

// tint blends col over r at alpha a (0..1).
func (c *canvas) tint(r image.Rectangle, col color.RGBA, a float64) {
	r = r.Intersect(c.img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			o := c.img.RGBAAt(x, y)
			mix := func(p, q uint8) uint8 { return uint8(float64(p)*(1-a) + float64(q)*a) }
			c.img.SetRGBA(x, y, color.RGBA{mix(o.R, col.R), mix(o.G, col.G), mix(o.B, col.B), 255})
		}
	}
}

// pngFile picks the file --png draws: the first with a footprint.
func pngFile(res *diff.Result) *diff.FileDiff {
	for i := range res.Files {
		f := &res.Files[i]
		if len(mapChanges(f)) > 0 && (f.Extent != nil || f.BBox != nil) {
			return f
		}
	}
	return nil
}

// gridChunks are the chunks drawn as a grey grid: the finest level of a
// TIFF, every chunk with a footprint otherwise.
func gridChunks(m *manifest.Manifest) []manifest.Chunk {
	if m == nil {
		return nil
	}
	var out []manifest.Chunk
	for _, c := range m.Chunks {
		if c.BBox == nil || (m.Format == formats.TIFF && !atLevel(c.Key, 0)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// writeDiffPNG draws the first file with footprints into name: its extent,
// the raster at low resolution when GDAL can render it, its chunk grid, the
// changed chunks (red changed, green added, blue removed) and the changed
// area (yellow). It returns a note for the user.
func writeDiffPNG(ctx context.Context, r *repo.Repo, res *diff.Result, name string) (string, error) {
	const maxSide = 1024
	f := pngFile(res)
	extent := geom.BBox{MaxX: 1, MaxY: 1}
	switch {
	case f == nil:
	case f.Extent != nil:
		extent = *f.Extent
	default:
		extent = *f.BBox
	}
	if f != nil {
		for _, c := range mapChanges(f) {
			extent = extent.Union(*c.BBox)
		}
	}
	ew, eh := extent.MaxX-extent.MinX, extent.MaxY-extent.MinY
	if ew <= 0 || eh <= 0 {
		ew, eh = 1, 1
		extent.MaxX, extent.MaxY = extent.MinX+1, extent.MinY+1
	}
	w, h := maxSide, maxSide
	if ew > eh {
		h = max(64, int(math.Round(maxSide*eh/ew)))
	} else {
		w = max(64, int(math.Round(maxSide*ew/eh)))
	}
	cv := &canvas{img: image.NewRGBA(image.Rect(0, 0, w, h)), extent: extent}
	draw.Draw(cv.img, cv.img.Bounds(), image.NewUniform(colBackground), image.Point{}, draw.Src)
	note := ""
	if f == nil {
		note = "--png: no changed chunk has a footprint; the picture is empty"
	} else {
		note = "--png: drew " + f.Path
		if others := len(res.Files) - 1; others > 0 {
			note += fmt.Sprintf(" (%d other changed files not drawn; choose one with -- PATH)", others)
		}
		if f.Format == formats.TIFF {
			if msg := drawPreview(ctx, r, res, f, cv); msg != "" {
				note += "; " + msg
			}
		}
		m := f.New()
		if m == nil {
			m = f.Old()
		}
		grid := gridChunks(m)
		if len(grid) <= 20000 {
			for _, c := range grid {
				cv.outline(cv.rect(*c.BBox, 1), colGrid, 1)
			}
		}
		cv.outline(cv.rect(extent, 1), colExtent, 1)
		changes := mapChanges(f)
		for _, c := range changes {
			rr := cv.rect(*c.BBox, 5)
			col := colChanged
			switch c.Change {
			case diff.ChunkAdded:
				col = colAdded
			case diff.ChunkRemoved:
				col = colRemoved
			}
			cv.tint(rr, col, 0.3)
			cv.outline(rr, col, 2)
		}
		if f.BBox != nil {
			cv.outline(cv.rect(*f.BBox, 9).Inset(-3), colArea, 2)
		}
	}
	out, err := os.Create(name)
	if err != nil {
		return "", err
	}
	err = png.Encode(out, cv.img)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return note + "; wrote " + name, nil
}

// drawPreview paints a low-resolution rendering of the raster's new version
// (the old one when deleted) under the outlines, and returns a note when it
// cannot.
func drawPreview(ctx context.Context, r *repo.Repo, res *diff.Result, f *diff.FileDiff, cv *canvas) string {
	commit, p := res.ToCommit, f.Path
	if f.Status == diff.Deleted {
		commit = res.FromCommit
	}
	if !haveGDAL {
		return "outlines only (built without GDAL)"
	}
	file, cleanup, err := r.FileAt(ctx, commit, p)
	if err != nil {
		return "no raster preview: " + err.Error()
	}
	defer cleanup()
	// Render at the canvas's resolution over the raster's own extent.
	rb := f.Extent
	if rb == nil {
		return "no raster preview: the raster has no extent"
	}
	dst := cv.rect(*rb, 1).Intersect(cv.img.Bounds())
	if dst.Empty() {
		return ""
	}
	img, _, err := rasterPreview(file, dst.Dx(), dst.Dy())
	if err != nil {
		return "no raster preview: " + err.Error()
	}
	draw.Draw(cv.img, dst, img, img.Bounds().Min, draw.Over)
	return ""
}
