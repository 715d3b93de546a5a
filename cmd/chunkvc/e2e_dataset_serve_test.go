package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// zarrFromDEM writes a GDAL Zarr v2 store (array "cube", 256×256 chunks)
// of a 1024×1024 window at (x, y) of dem.
func zarrFromDEM(t *testing.T, dem, out string, x, y int) {
	t.Helper()
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	formattest.Run1(t, "gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2", "-co", "BLOCKSIZE=256,256",
		"-co", "COMPRESS=ZLIB", "-srcwin", strconv.Itoa(x), strconv.Itoa(y), "1024", "1024", dem, out)
}

// hasHeader reports whether response headers hdr have name: value (the
// name in any case).
func hasHeader(hdr, name, value string) bool {
	for _, line := range strings.Split(hdr, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && strings.EqualFold(k, name) && strings.TrimSpace(v) == value {
			return true
		}
	}
	return false
}

var checksumRE = regexp.MustCompile(`Checksum=(\d+)`)

// gdalChecksum is what gdalinfo -checksum says of band 1 of src.
func gdalChecksum(t *testing.T, src string, env ...string) string {
	t.Helper()
	cmd := exec.Command(formattest.RequireTool(t, "gdalinfo"), "-checksum", src)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	m := checksumRE.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("gdalinfo -checksum %s: %v\n%s", src, err, out)
	}
	return string(m[1])
}

// toGTiff copies band data of src into a GeoTIFF and returns its pixels
// as GDAL reads them back, and their checksum.
func toGTiff(t *testing.T, src string, env ...string) ([]byte, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.tif")
	cmd := exec.Command(formattest.RequireTool(t, "gdal_translate"), "-q", "-of", "GTiff", src, out)
	cmd.Env = append(os.Environ(), env...)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate %s: %v\n%s", src, err, o)
	}
	return window(t, out, 0, 0, 1024, 1024), gdalChecksum(t, out)
}

// GDAL's Zarr driver reads an OLD revision of a committed store over
// /vsicurl/ from serve in a lazy clone, with the pixels committed then
// (a chunk missing from that version read as the fill value, as locally),
// after the store was rewritten; HEAD gives the new pixels. Members answer
// with their bytes, ETag (a chunk's ID), Range and HEAD; a chunk the
// manifest lacks, a directory and a name that is no member are 404; and
// the lazy clone fetches only the chunks read.
func TestServeZarrGDAL(t *testing.T) {
	formattest.RequireTool(t, "curl")
	formattest.RequireTool(t, "gdal_translate")
	a := newRunner(t)
	a.cv("init", "--store", filepath.Join(t.TempDir(), "chunks"))
	dem := filepath.Join(t.TempDir(), "dem.tif")
	demCOG(t, dem)

	zarrFromDEM(t, dem, a.path("cube.zarr"), 0, 0)
	if err := os.Remove(a.path("cube.zarr/cube/1.2")); err != nil {
		t.Fatal(err) // absent in v1: the fill value
	}
	a.cv("track", "cube.zarr")
	a.cv("commit", "-m", "v1")
	rev1 := strings.TrimSpace(a.git("rev-parse", "HEAD"))
	pix1, sum1 := toGTiff(t, `ZARR:"`+a.path("cube.zarr")+`"`)
	zmeta1 := a.read("cube.zarr/.zmetadata")

	zarrFromDEM(t, dem, a.path("cube.zarr"), 900, 700)
	a.cv("commit", "-m", "v2")
	pix2, sum2 := toGTiff(t, `ZARR:"`+a.path("cube.zarr")+`"`)
	if sum1 == sum2 || bytes.Equal(pix1, pix2) {
		t.Fatal("the two versions have the same pixels")
	}
	var chunks lsChunks
	a.jsonOf(&chunks, "ls-chunks", rev1+":cube.zarr/cube")
	if len(chunks.Chunks) != 15 {
		t.Fatalf("v1's array cube has %d chunks, want 15 (16 less the one removed)", len(chunks.Chunks))
	}

	b := newRunner(t)
	b.cv("clone", "--lazy", "--trust-store", a.dir, "c")
	b.dir = b.path("c")
	s := startServe(t, b)
	base := s.url + "/" + rev1 + "/cube.zarr"

	// Inline members fetch nothing; one chunk fetches that chunk alone.
	code, _, body := curl(t, base+"/.zmetadata")
	if code != 200 || !bytes.Equal(body, zmeta1) {
		t.Fatalf(".zmetadata at v1: %d, %d bytes (want %d)", code, len(body), len(zmeta1))
	}
	if st := s.stats(t); st.ChunksFetched != 0 {
		t.Fatalf("reading .zmetadata fetched %d chunks", st.ChunksFetched)
	}
	c00 := chunks.Chunks[0]
	code, hdr, body := curl(t, base+"/cube/0.0")
	want := []byte(a.cv("cat", rev1+":cube.zarr/cube/0.0"))
	if code != 200 || !bytes.Equal(body, want) || int64(len(body)) != c00.Size || !hasHeader(hdr, "ETag", `"`+c00.Hash+`"`) {
		t.Fatalf("chunk 0.0 at v1 (key %s): %d, %d bytes (want %d)\n%s", c00.Key, code, len(body), len(want), hdr)
	}
	if st := s.stats(t); st.ChunksFetched != 1 || st.BytesFetched != c00.Size {
		t.Fatalf("reading one chunk fetched %d chunks, %d bytes (want 1, %d)", st.ChunksFetched, st.BytesFetched, c00.Size)
	}
	code, hdr, body = curl(t, "-r", "10-19", base+"/cube/0.0")
	if code != 206 || !bytes.Equal(body, want[10:20]) || !strings.Contains(hdr, "Content-Range: bytes 10-19/") {
		t.Fatalf("range of chunk 0.0: %d %q\n%s", code, body, hdr)
	}
	code, hdr, _ = curl(t, "-I", base+"/cube/.zarray")
	if code != 200 || !hasHeader(hdr, "Content-Type", "application/json") {
		t.Fatalf("HEAD .zarray: %d\n%s", code, hdr)
	}
	for _, p := range []string{"/cube/1.2", "/cube/9.9", "/cube", "", "/nope/.zarray", "/zarr.json"} {
		if code, _, body := curl(t, base+p); code != 404 {
			t.Errorf("%s at v1: %d, want 404: %s", p, code, body)
		}
	}
	if code, _, _ := curl(t, s.url+"/main/cube.zarr/cube/1.2"); code != 200 {
		t.Errorf("chunk 1.2 at main: %d, want 200", code)
	}

	gdalEnv := []string{"GDAL_HTTP_MAX_RETRY=0"}
	for _, c := range []struct {
		rev  string
		pix  []byte
		sum  string
		name string
	}{{rev1, pix1, sum1, "v1 (old)"}, {"main", pix2, sum2, "main"}} {
		src := `ZARR:"/vsicurl/` + s.url + "/" + c.rev + `/cube.zarr"`
		if got := gdalChecksum(t, src, gdalEnv...); got != c.sum {
			t.Errorf("%s over /vsicurl/: checksum %s, local %s\n%s", c.name, got, c.sum, s.logs)
		}
		pix, sum := toGTiff(t, src, gdalEnv...)
		if sum != c.sum || !bytes.Equal(pix, c.pix) {
			t.Errorf("%s over /vsicurl/ to GeoTIFF: checksum %s, local %s; pixels equal %v", c.name, sum, c.sum, bytes.Equal(pix, c.pix))
		}
	}
	t.Logf("served: %+v", s.stats(t))
}

// xarrayServeScript writes (mode "write"), appends to ("append") or reads
// ("read", a path or URL) a cube of t2m over time, lat and lon; "read"
// prints what it read: each variable's dtype, shape and the SHA-256 of
// its values, and the time coordinate.
const xarrayServeScript = `
import hashlib, json, sys
import numpy as np, pandas as pd, xarray as xr
mode, where = sys.argv[1], sys.argv[2]
def steps(t0, n):
    rng = np.random.default_rng(t0)
    return xr.Dataset({"t2m": (("time", "lat", "lon"), rng.random((n, 10, 12)).astype("f4"))},
        coords={"time": pd.date_range("2024-01-01", periods=n, freq="D") + pd.Timedelta(days=t0),
                "lat": np.linspace(50, 41, 10), "lon": np.linspace(0, 11, 12)})
if mode == "write":
    steps(0, 3).to_zarr(where, mode="w", encoding={"t2m": {"chunks": (1, 4, 4)}})
elif mode == "append":
    steps(int(sys.argv[3]), 2).to_zarr(where, append_dim="time")
else:
    ds = xr.open_zarr(where)
    out = {}
    for name, v in sorted(ds.variables.items()):
        vals = np.ascontiguousarray(v.values)
        out[name] = [str(vals.dtype), list(vals.shape), hashlib.sha256(vals.tobytes()).hexdigest()]
    out["time"].append([str(t) for t in ds["time"].values])
    print(json.dumps(out, sort_keys=True))
`

// xarray reads an old revision of a store it wrote and appended to, over
// HTTP from serve (fsspec's HTTPFileSystem, consolidated metadata): the
// same values it read locally right after that commit.
func TestServeZarrXarray(t *testing.T) {
	py := formattest.RequirePython(t, "xarray", "zarr", "fsspec", "aiohttp", "pandas")
	a := newRunner(t)
	a.cv("init")
	cube := a.path("cube.zarr")
	runPy := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(py, append([]string{"-c", xarrayServeScript}, args...)...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("python %v: %v\n%s", args, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	runPy("write", cube)
	a.cv("track", "cube.zarr")
	a.cv("commit", "-m", "three days")
	revs := []string{strings.TrimSpace(a.git("rev-parse", "HEAD"))}
	local := []string{runPy("read", cube)}
	for i, t0 := range []string{"3", "5"} {
		runPy("append", cube, t0)
		a.cv("commit", "-m", "two more days")
		revs = append(revs, strings.TrimSpace(a.git("rev-parse", "HEAD")))
		local = append(local, runPy("read", cube))
		if local[i+1] == local[i] {
			t.Fatal("an append changed nothing xarray reads")
		}
	}
	s := startServe(t, a)
	for i, rev := range revs {
		if got := runPy("read", s.url+"/"+rev+"/cube.zarr"); got != local[i] {
			t.Errorf("revision %d over HTTP:\n got %s\nwant %s", i, got, local[i])
		}
	}
	if got := runPy("read", s.url+"/main/cube.zarr"); got != local[2] {
		t.Errorf("main over HTTP:\n got %s\nwant %s", got, local[2])
	}
	if t.Failed() {
		t.Logf("serve log:\n%s", s.logs)
	}
}
