package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// reviewThumbs returns the before and after previews of the review page's
// only file, decoded from their data: URIs (nil when missing).
func reviewThumbs(t *testing.T, page string) (before, after image.Image) {
	t.Helper()
	_, rest, ok := strings.Cut(page, "\nconst D = ")
	data, _, ok2 := strings.Cut(rest, ";\n")
	if !ok || !ok2 {
		t.Fatalf("review page has no data (%d bytes)", len(page))
	}
	var d struct {
		Files []struct {
			Path, Before, After string
		}
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("review page data: %v", err)
	}
	if len(d.Files) != 1 {
		t.Fatalf("review page files %+v, want one", d.Files)
	}
	img := func(uri string) image.Image {
		b64, ok := strings.CutPrefix(uri, "data:image/png;base64,")
		if !ok {
			return nil
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		im, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	return img(d.Files[0].Before), img(d.Files[0].After)
}

// Issue 31: the review page of an edit in a JPEG or WebP COG, whose
// tiles chunkvc cannot decode in Go, shows before and after thumbnails
// read with GDAL, both as diff --format html writes it (the plain binary
// hands that to chunkvc-gdal, which reads both versions' previews) and as
// the plain binary's serve answers /review/A..B (it asks chunkvc-gdal for
// the page) and as chunkvc-gdal's serve does. They differ inside the edited window and nowhere else
// (unchanged tiles are the same bytes).
func TestReviewThumbnailsGDAL(t *testing.T) {
	formattest.RequireTool(t, "gdal_create")
	formattest.RequireTool(t, "curl")
	dir := gdalBuild(t)
	for _, codec := range []string{"jpeg", "webp"} {
		r := newRunner(t)
		onPath(r, dir)
		lossyWindowEdit(t, r, lossyCOG[codec])
		r.cv("commit", "-m", "v2")
		r.cv("diff", "HEAD~1", "HEAD", "--format", "html", "-o", r.path("review.html"))
		page := string(r.read("review.html"))
		t.Run(codec+"/diff", func(t *testing.T) { checkEditPreviews(t, page) })
		// The plain binary's serve, which asks chunkvc-gdal for the page,
		// and chunkvc-gdal's own, which reads the tiles with GDAL itself.
		for name, bin := range map[string]string{"serve": serveBinary(t), "serve-gdal": filepath.Join(dir, "chunkvc-gdal")} {
			t.Run(codec+"/"+name, func(t *testing.T) {
				srv := startServeBin(t, bin, r)
				code, hdr, body := curl(t, srv.url+"/review/HEAD~1..HEAD")
				if code != 200 || !strings.Contains(hdr, "text/html") {
					t.Fatalf("serve /review/HEAD~1..HEAD: %d\n%s%s\n%s", code, hdr, body, srv.logs)
				}
				checkEditPreviews(t, string(body))
				if string(body) != page {
					t.Errorf("serve's page (%d bytes) is not the page diff --format html writes (%d bytes)", len(body), len(page))
				}
			})
		}
	}
}

// checkEditPreviews requires the review page of lossyWindowEdit to have
// both previews, brighter after in the edited window and the same outside
// the edited tile (lossy codecs spread an edit within its tile, never
// across tiles).
func checkEditPreviews(t *testing.T, page string) {
	t.Helper()
	before, after := reviewThumbs(t, page)
	if before == nil || after == nil {
		t.Fatalf("review page previews: before %v, after %v; want both", before != nil, after != nil)
	}
	bb := before.Bounds()
	if bb != after.Bounds() || bb.Dx() < 64 {
		t.Fatalf("preview sizes %v and %v", bb, after.Bounds())
	}
	// The edit, in preview pixels, and the tile around it.
	s := float64(bb.Dx()) / 256
	edit := image.Rect(int(20*s), int(150*s), int(80*s), int(200*s))
	tile := image.Rect(0, int(128*s), int(128*s), int(256*s))
	var inEdit, outside int
	for y := bb.Min.Y; y < bb.Max.Y; y++ {
		for x := bb.Min.X; x < bb.Max.X; x++ {
			r0, _, _, _ := before.At(x, y).RGBA()
			r1, _, _, _ := after.At(x, y).RGBA()
			p := image.Pt(x, y)
			switch {
			case p.In(edit) && r1 > r0:
				inEdit++
			case !p.In(tile) && r1 != r0:
				outside++
			}
		}
	}
	if inEdit < edit.Dx()*edit.Dy()*9/10 || outside != 0 {
		t.Errorf("after is brighter at %d of the %d edited preview pixels (want ≥ 90%%) and differs at %d outside the edited tile (want 0)",
			inEdit, edit.Dx()*edit.Dy(), outside)
	}
}
