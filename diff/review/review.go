package review

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/geom"
)

//go:embed page.html
var pageHTML string

// Page is what Write draws.
type Page struct {
	Result *diff.Result
	// Thumbs holds raster previews by file path (Thumbnails).
	Thumbs map[string]Thumb
	// Features is diff --features' "features" object; nil when features
	// were not compared.
	Features *Features
}

// Thumb is a raster file's preview before and after, as PNG, covering
// Extent (the file's bbox in its CRS). Either side may be empty (an added
// or deleted file).
type Thumb struct {
	Extent        geom.BBox
	Before, After []byte
}

// Features mirrors the "features" object of diff --features (package
// diff/featurediff): only the fields the page shows are read.
type Features struct {
	Files     []json.RawMessage `json:"files,omitempty"`
	Changes   []FeatureChange   `json:"changes"`
	Truncated bool              `json:"truncated"`
}

// FeatureChange is one added, removed, modified or moved feature.
type FeatureChange struct {
	Change      string          `json:"change"` // added, removed, modified, moved
	Key         json.RawMessage `json:"key"`
	Path        string          `json:"path"`
	FromPath    string          `json:"from_path,omitempty"`
	BBoxOld     *[4]float64     `json:"bbox_old"`
	BBoxNew     *[4]float64     `json:"bbox_new"`
	GeometryOld json.RawMessage `json:"geometry_old,omitempty"`
	GeometryNew json.RawMessage `json:"geometry_new,omitempty"`
	Columns     []ColumnChange  `json:"columns,omitempty"`
}

// ColumnChange is one attribute's old and new value.
type ColumnChange struct {
	Name string          `json:"name"`
	Old  json.RawMessage `json:"old"`
	New  json.RawMessage `json:"new"`
}

// FeaturesFrom converts any value whose JSON is diff --features'
// "features" object (the featurediff result) into Features; nil gives nil.
// Going through JSON keeps this package to the published contract rather
// than to another package's Go types.
func FeaturesFrom(v any) (*Features, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("review: features: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	var f Features
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("review: features: %w", err)
	}
	return &f, nil
}

// pageData is the JSON the page's script draws from.
type pageData struct {
	From     string     `json:"from"`
	To       string     `json:"to"`
	Files    []pageFile `json:"files"`
	Features *Features  `json:"features"`
}

type pageFile struct {
	Path    string           `json:"path"`
	Status  string           `json:"status"`
	Format  string           `json:"format"`
	CRS     string           `json:"crs"`
	Extent  *geom.BBox       `json:"extent"`
	BBox    *geom.BBox       `json:"bbox"`
	Tiles   []diff.TileStats `json:"tiles"`
	Chunks  []pageChunk      `json:"chunks"`
	Before  string           `json:"before,omitempty"` // data: URI
	After   string           `json:"after,omitempty"`
	Summary string           `json:"summary"`
}

// pageChunk is a changed chunk footprint drawn when a file has no tile
// statistics (a raster not measured, a FlatGeobuf or Parquet file).
type pageChunk struct {
	Key    string    `json:"key"`
	Change string    `json:"change"`
	BBox   geom.BBox `json:"bbox"`
}

// Write renders p as one HTML document.
func Write(w io.Writer, p *Page) error {
	t, err := template.New("review").Parse(pageHTML)
	if err != nil {
		return fmt.Errorf("review page template: %w", err)
	}
	d := pageData{From: p.Result.From, To: p.Result.To, Features: p.Features, Files: []pageFile{}}
	for i := range p.Result.Files {
		d.Files = append(d.Files, fileData(&p.Result.Files[i], p.Thumbs))
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return fmt.Errorf("review page: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// fileData is one file's part of the page: the finest changed level's
// tiles, or else its changed chunks' footprints.
func fileData(f *diff.FileDiff, thumbs map[string]Thumb) pageFile {
	pf := pageFile{Path: f.Path, Status: string(f.Status), Format: f.Format, CRS: f.CRS, Extent: f.Extent, BBox: f.BBox,
		Tiles: finestTiles(f.Tiles), Chunks: []pageChunk{},
		Summary: fmt.Sprintf("+%d -%d ~%d chunks", f.Chunks.Added, f.Chunks.Removed, f.Chunks.Changed)}
	if len(pf.Tiles) == 0 {
		finest := -1
		for _, c := range f.Changes {
			if c.BBox != nil && (finest < 0 || chunkLevel(c.Key) < finest) {
				finest = chunkLevel(c.Key)
			}
		}
		for _, c := range f.Changes {
			if c.BBox != nil && chunkLevel(c.Key) == finest {
				pf.Chunks = append(pf.Chunks, pageChunk{Key: c.Key, Change: string(c.Change), BBox: *c.BBox})
			}
		}
	}
	if th, ok := thumbs[f.Path]; ok {
		pf.Before, pf.After = dataURI(th.Before), dataURI(th.After)
		if pf.Extent == nil {
			e := th.Extent
			pf.Extent = &e
		}
	}
	return pf
}

// finestTiles keeps the tiles of the finest level measured: overview
// tiles repeat the same change at a coarser grid.
func finestTiles(tiles []diff.TileStats) []diff.TileStats {
	out := []diff.TileStats{}
	finest := -1
	for _, t := range tiles {
		if t.BBox != nil && (finest < 0 || t.Level < finest) {
			finest = t.Level
		}
	}
	for _, t := range tiles {
		if t.BBox != nil && t.Level == finest {
			out = append(out, t)
		}
	}
	return out
}

// chunkLevel is a TIFF key's overview level (z<L>/…), 0 for other keys.
func chunkLevel(key string) int {
	var l int
	if _, err := fmt.Sscanf(key, "z%d/", &l); err != nil {
		return 0
	}
	return l
}

func dataURI(png []byte) string {
	if len(png) == 0 {
		return ""
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
}
