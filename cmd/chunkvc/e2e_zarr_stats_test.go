package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// zarrStatsStore writes, with zarr-python, a v2 store of four arrays:
// temp (float32, Blosc lz4 with shuffle, fill NaN, one chunk absent),
// count (int32, zlib, fill 0), level (big-endian uint16 in F order, gzip)
// and scaled (a fixedscaleoffset filter chunkvc does not decode). Values
// are multiples of 0.25, so every sum below is exact.
const zarrStatsStore = `
import numpy as np, zarr, numcodecs
g = zarr.open_group("cube.zarr", mode="w")
rng = np.random.default_rng(7)
t = g.create_dataset("temp", shape=(25, 32), chunks=(10, 10), dtype="f4",
    compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    fill_value=np.nan, write_empty_chunks=False)
v = np.round(rng.random((25, 32)) * 100) / 4
v[20:, 30:] = np.nan
v[3, 4] = np.nan
t[:, :] = v
c = g.create_dataset("count", shape=(25, 30), chunks=(10, 10), dtype="<i4",
    compressor=numcodecs.Zlib(level=5), fill_value=0)
c[:, :] = rng.integers(1, 1000, size=(25, 30), dtype="i4")
l = g.create_dataset("level", shape=(12, 12), chunks=(5, 5), dtype=">u2", order="F",
    compressor=numcodecs.GZip(level=6), fill_value=7)
l[:, :] = rng.integers(0, 60000, size=(12, 12), dtype="u2")
s = g.create_dataset("scaled", shape=(10,), chunks=(5,), dtype="f8",
    filters=[numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="f8", astype="i4")], fill_value=0)
s[:] = np.arange(10)
`

// zarrStatsEdit edits known values in 2-4 chunks of each array (a NaN
// becoming a number, an absent chunk written, chunks made all fill and so
// removed) and prints, computed by numpy from the arrays as zarr-python
// reads them before and after, each changed chunk's statistics by key.
const zarrStatsEdit = `
import json
g = zarr.open_group("cube.zarr", mode="r+")
old = {n: g[n][...] for n in ("temp", "count", "level")}
t = zarr.open_array("cube.zarr/temp", mode="r+", write_empty_chunks=False)
t[1, 2] = t[1, 2] + 2.5
t[4, 5] = -1.25
t[3, 4] = 0
t[12:14, 15] = [10, 11]
t[21, 31] = 4
t[0:10, 30:32] = np.nan
c = zarr.open_array("cube.zarr/count", mode="r+", write_empty_chunks=False)
c[0, 0] = c[0, 0] - 100
c[24, 29] = 5000
c[20:25, 0:10] = 0
l = g["level"]
l[11, 11] = 0
l[0, 1] = l[0, 1] + 3
g["scaled"][2] = 4
out = {}
for n, o in old.items():
    a = g[n]
    cur = a[...]
    grid = [(s + k - 1) // k for s, k in zip(a.shape, a.chunks)]
    for idx in np.ndindex(*grid):
        sl = tuple(slice(i * k, min((i + 1) * k, s)) for i, k, s in zip(idx, a.chunks, a.shape))
        ov, nv = o[sl].astype("f8"), cur[sl].astype("f8")
        changed = ~((ov == nv) | (np.isnan(ov) & np.isnan(nv)))
        if not changed.any():
            continue
        d = (nv - ov)[changed]
        d = d[np.isfinite(d)]
        out[n + "/c/" + "/".join(str(i) for i in idx)] = {"elements": int(ov.size),
            "changed": int(changed.sum()), "numeric": int(d.size),
            "min": float(d.min()) if d.size else 0.0, "max": float(d.max()) if d.size else 0.0,
            "mean": float(d.mean()) if d.size else 0.0}
print(json.dumps(out))
`

// zarrFigures are the figures of a chunk's statistics, comparable.
func zarrFigures(c diff.ZarrChunkStats) [6]float64 {
	return [6]float64{float64(c.Elements), float64(c.Changed), float64(c.Numeric), c.Min, c.Max, c.Mean}
}

// checkZarrStats compares the arrays' measured chunks with numpy's.
func checkZarrStats(t *testing.T, what string, arrays []diff.ZarrArray, want map[string]diff.ZarrChunkStats) {
	t.Helper()
	got := map[string]diff.ZarrChunkStats{}
	for _, a := range arrays {
		if a.Array == "scaled" && (a.Chunks != nil || a.Stats != nil) {
			t.Errorf("%s: scaled, which chunkvc cannot decode, measured: %+v", what, a)
		}
		n := 0
		for _, c := range a.Chunks {
			if c.Error != "" {
				t.Errorf("%s: chunk %s: %s", what, c.Key, c.Error)
			}
			got[c.Key] = c
			n += int(c.Changed)
		}
		if a.Chunks != nil && (a.Stats == nil || a.Stats.Changed != int64(n) || a.Stats.Chunks != len(a.Chunks)) {
			t.Errorf("%s: %s totals %+v for %d chunks, %d changed elements", what, a.Array, a.Stats, len(a.Chunks), n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d chunks measured, %d changed\ngot  %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	for k, w := range want {
		if zarrFigures(got[k]) != zarrFigures(w) {
			t.Errorf("%s: chunk %s: %v, want %v (elements, changed, numeric, min, max, mean)", what, k, zarrFigures(got[k]), zarrFigures(w))
		}
	}
}

// zarrStatsOf runs diff --stats --json ARGS on r's only (Zarr) file,
// compares its arrays' measured chunks with want (checkZarrStats) and
// returns the file's warnings.
func zarrStatsOf(t *testing.T, r *runner, what string, want map[string]diff.ZarrChunkStats, args ...string) []string {
	t.Helper()
	var d struct {
		Files []struct {
			Warnings []string       `json:"warnings"`
			Zarr     *diff.ZarrDiff `json:"zarr"`
		} `json:"files"`
	}
	r.jsonOf(&d, append([]string{"diff", "--stats"}, args...)...)
	if len(d.Files) != 1 || d.Files[0].Zarr == nil {
		t.Fatalf("%s: %+v", what, d.Files)
	}
	checkZarrStats(t, what, d.Files[0].Zarr.Arrays, want)
	return d.Files[0].Warnings
}

// diff --stats of a zarr-python store measures each changed chunk of the
// arrays it can decode (Blosc, zlib, gzip; float and integer dtypes; big
// endian, F order, absent chunks as the fill value, NaN = NaN) exactly as
// numpy does, in the work tree and between commits, in JSON, text and
// markdown; the array with a filter it cannot decode gets a warning.
func TestDiffStatsZarr(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy", "numcodecs")
	r := newRunner(t)
	r.git("init", "-q")
	r.cv("init")
	r.python(t, py, zarrStatsStore)
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "cube")
	var want map[string]diff.ZarrChunkStats
	out := r.python(t, py, zarrStatsEdit)
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatalf("numpy's statistics: %v\n%s", err, out)
	}
	if len(want) < 9 {
		t.Fatalf("the edit changed %d chunks, want at least 9: %s", len(want), out)
	}
	check := func(what string, args ...string) {
		t.Helper()
		warnings := zarrStatsOf(t, r, what, want, args...)
		if w := strings.Join(warnings, "\n"); !strings.Contains(w, "stats: array scaled not measured: filter fixedscaleoffset unsupported") {
			t.Errorf("%s: warnings %q name neither the array nor its filter", what, w)
		}
	}
	check("work tree")
	r.cv("commit", "-q", "-m", "edit")
	check("HEAD~1..HEAD", "HEAD~1", "HEAD")
	text := r.cv("diff", "--stats", "HEAD~1", "HEAD")
	for _, line := range []string{
		"chunk       temp/c/0/0 changed: 3 of 100 elements changed, new − old -8..2.5 mean -2.75",
		"chunk       count/c/2/0 removed: 50 of 50 elements changed, new − old -983..-32 mean -482.04",
		"values      level: 2 elements changed in 2 chunks measured, new − old -57220..3 mean -28608.5",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("diff --stats text lacks %q:\n%s", line, text)
		}
	}
	md := r.cv("diff", "--stats", "--format", "markdown", "HEAD~1", "HEAD")
	if !strings.Contains(md, "| chunk | temp/c/2/3 added: 1 of 10 elements changed |") {
		t.Errorf("markdown lacks the added chunk of temp:\n%s", md)
	}
	if plain := r.cv("diff", "HEAD~1", "HEAD"); strings.Contains(plain, "elements changed") {
		t.Errorf("diff without --stats decoded chunks:\n%s", plain)
	}
}
