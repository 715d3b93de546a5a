package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// chunkvc diff --conflicts lists what a stopped git merge left conflicted
// in a COG both sides changed in one tile: the full-resolution tile and
// its overview tile, with the bboxes their grid gives (10 m pixels from
// 500000,4600000; 256-pixel tiles; the overview's pixels twice as wide),
// as json, text, markdown and geojson, and as magenta tiles in --png;
// --exit-code then exits 1. Once resolved it is empty again.
func TestDiffConflicts(t *testing.T) {
	formattest.RequireTool(t, "git")
	r, _ := mergeRepo(t, editTopLeftToo)
	if res := r.run(binary, "diff", "--conflicts", "--exit-code"); res.code != 0 || !strings.Contains(res.stdout, "nothing is conflicted") {
		t.Fatalf("diff --conflicts with no merge stopped: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	cog(t, "edit", r.path("dem.tif"), editTopLeft)
	r.cv("commit", "-q", "-m", "ours")
	if res := r.run("git", "merge", "--no-edit", "theirs"); res.code == 0 {
		t.Fatal("git merge of the same tile went through")
	}
	want := map[string][4]float64{
		"z0/r0/c0": {500000, 4600000 - 2560, 500000 + 2560, 4600000},
		"z1/r0/c0": {500000, 4600000 - 5120, 500000 + 5120, 4600000},
	}
	var rep struct {
		Operation string `json:"operation"`
		Theirs    string `json:"theirs"`
		Files     []struct {
			Path      string `json:"path"`
			Format    string `json:"format"`
			Conflicts []struct {
				Key    string     `json:"key"`
				BBox   [4]float64 `json:"bbox"`
				Reason string     `json:"reason"`
			} `json:"conflicts"`
		} `json:"files"`
	}
	out := r.cv("diff", "--conflicts", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Files) != 1 {
		t.Fatalf("diff --conflicts --json: %v\n%s", err, out)
	}
	theirs := strings.TrimSpace(r.git("rev-parse", "theirs"))
	f := rep.Files[0]
	if rep.Operation != "merge" || rep.Theirs != theirs || f.Path != "dem.tif" || f.Format != "tiff" || len(f.Conflicts) != len(want) {
		t.Fatalf("diff --conflicts --json:\n%s", out)
	}
	for _, c := range f.Conflicts {
		if box, ok := want[c.Key]; !ok || c.BBox != box || !strings.Contains(c.Reason, "both sides") {
			t.Fatalf("conflict %+v, want a key of %v with its bbox\n%s", c, want, out)
		}
	}
	text := r.cv("diff", "--conflicts")
	md := r.cv("diff", "--conflicts", "--format", "markdown")
	for key := range want {
		if !strings.Contains(text, key) || !strings.Contains(md, "| `"+key+"` |") {
			t.Fatalf("%s missing from the text or markdown:\n%s\n%s", key, text, md)
		}
	}
	var gj struct {
		Features []struct {
			Geometry   struct{ Type string } `json:"geometry"`
			Properties map[string]string     `json:"properties"`
		} `json:"features"`
	}
	out = r.cv("diff", "--conflicts", "--format", "geojson")
	if err := json.Unmarshal([]byte(out), &gj); err != nil || len(gj.Features) != len(want) {
		t.Fatalf("diff --conflicts --format geojson: %v\n%s", err, out)
	}
	for _, ft := range gj.Features {
		p := ft.Properties
		if _, ok := want[p["key"]]; !ok || p["change"] != "conflict" || p["path"] != "dem.tif" || !strings.Contains(p["reason"], "both sides") || ft.Geometry.Type != "Polygon" {
			t.Fatalf("geojson feature %+v\n%s", ft, out)
		}
	}
	pngFile := r.path("conflicts.png")
	if res := r.run(binary, "diff", "--conflicts", "--exit-code", "--png", pngFile); res.code != 1 {
		t.Fatalf("diff --conflicts --exit-code with conflicts: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if n := magentaPixels(t, pngFile); n == 0 {
		t.Fatal("--png drew no conflicted tile in magenta")
	}
	alone := r.path("alone.png")
	if res := r.run(binary, "diff", "--conflicts", "--format", "png", "-o", alone); res.code != 0 || res.stdout != "" {
		t.Fatalf("diff --conflicts --format png: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if n := magentaPixels(t, alone); n == 0 {
		t.Fatal("--format png drew no conflicted tile in magenta")
	}
	if res := r.run(binary, "diff", "--conflicts", "--format", "png"); res.code != exitUsage {
		t.Fatalf("--format png without -o: exit %d, want a usage error", res.code)
	}
	if res := r.run(binary, "diff", "--conflicts", "HEAD"); res.code != exitUsage {
		t.Fatalf("diff --conflicts HEAD: exit %d, want a usage error\n%s", res.code, res.stderr)
	}
	r.cv("resolve", "dem.tif", "--theirs")
	r.git("commit", "-q", "--no-edit")
	if res := r.run(binary, "diff", "--conflicts", "--exit-code", "--json"); res.code != 0 || !strings.Contains(res.stdout, `"files": []`) {
		t.Fatalf("diff --conflicts after the merge was committed: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// magentaPixels counts the pixels of a PNG in diffview's conflict colour.
func magentaPixels(t *testing.T, name string) int {
	t.Helper()
	img := decodePNG(t, name)
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 200 && g>>8 == 0 && bl>>8 == 200 {
				n++
			}
		}
	}
	return n
}
