package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/internal/miniotest"
)

var (
	serveBinOnce sync.Once
	serveBin     string
	serveBinErr  error
)

// serveBinary is the e2e binary when it has the serve command, else one
// built with root.go registering it (go build -overlay), so these tests run
// before root.go lists newServeCmd.
func serveBinary(t *testing.T) string {
	t.Helper()
	serveBinOnce.Do(func() {
		if exec.Command(binary, "serve", "--help").Run() == nil {
			serveBin = binary
			return
		}
		src, err := os.ReadFile("root.go")
		if err != nil {
			serveBinErr = err
			return
		}
		patched := strings.Replace(string(src), "newInstallCmd(g),", "newInstallCmd(g),\n\t\tnewServeCmd(g),", 1)
		dir := filepath.Dir(binary)
		abs, _ := filepath.Abs("root.go")
		pf := filepath.Join(dir, "root_serve.go")
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(pf, []byte(patched), 0o644); err != nil {
			serveBinErr = err
			return
		}
		js, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: pf}})
		if err := os.WriteFile(ov, js, 0o644); err != nil {
			serveBinErr = err
			return
		}
		serveBin = filepath.Join(dir, "chunkvc-serve")
		if out, err := exec.Command("go", "build", "-overlay", ov, "-o", serveBin, ".").CombinedOutput(); err != nil {
			serveBinErr = fmt.Errorf("build with serve: %v\n%s", err, out)
		}
	})
	if serveBinErr != nil {
		t.Fatal(serveBinErr)
	}
	return serveBin
}

// server is a running chunkvc serve.
type server struct {
	url  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	done chan error
}

var servingRE = regexp.MustCompile(`on http://(\S+)/<rev>`)

// startServe runs chunkvc serve in r's directory on a free loopback port.
func startServe(t *testing.T, r *runner, args ...string) *server {
	t.Helper()
	return startServeBin(t, serveBinary(t), r, args...)
}

// startServeBin is startServe with the chunkvc program bin.
func startServeBin(t *testing.T, bin string, r *runner, args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--json-log"}, args...)...)
	cmd.Dir, cmd.Env = r.dir, r.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, logs: &bytes.Buffer{}, done: make(chan error, 1)}
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	m := servingRE.FindStringSubmatch(line)
	if err != nil || m == nil {
		cmd.Process.Kill()
		t.Fatalf("serve did not start: %q %v", line, err)
	}
	s.url = "http://" + m[1]
	var mu sync.Mutex
	go func() {
		b, _ := io.ReadAll(br)
		mu.Lock()
		s.logs.Write(b)
		mu.Unlock()
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop interrupts the server and checks it shut down cleanly.
func (s *server) stop(t *testing.T) {
	if s.cmd.ProcessState != nil || s.done == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGINT\n%s", err, s.logs)
		}
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		t.Error("serve did not stop after SIGINT")
	}
	s.done = nil
}

type serveStats struct {
	Requests      int64 `json:"requests"`
	BytesServed   int64 `json:"bytes_served"`
	ChunksFetched int64 `json:"chunks_fetched"`
	BytesFetched  int64 `json:"bytes_fetched"`
}

func (s *server) stats(t *testing.T) serveStats {
	t.Helper()
	resp, err := http.Get(s.url + "/debug/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st serveStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// curl runs curl and returns the HTTP status, headers and body.
func curl(t *testing.T, args ...string) (int, string, []byte) {
	t.Helper()
	hdrFile := filepath.Join(t.TempDir(), "h")
	out, err := exec.Command("curl", append([]string{"-sS", "-D", hdrFile, "-o", "-"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	h, _ := os.ReadFile(hdrFile)
	var code int
	fmt.Sscanf(string(h), "HTTP/1.1 %d", &code)
	return code, string(h), out
}

// Range edge cases through curl against the real binary; path escapes and
// the token.
func TestServeCurl(t *testing.T) {
	formattest.RequireTool(t, "curl")
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	data := randomBytes(600000, 11)
	r.write("d/x.bin", data)
	r.cv("commit", "-m", "v1")
	r.git("branch", "feature/x")
	s := startServe(t, r)
	u := s.url + "/main/d/x.bin"
	n := len(data)

	var etag string
	for _, c := range []struct {
		name string
		args []string
		code int
		body []byte
		hdr  string
	}{
		{"full", []string{u}, 200, data, "Accept-Ranges: bytes"},
		{"suffix", []string{"-r", "-100", u}, 206, data[n-100:], fmt.Sprintf("Content-Range: bytes %d-%d/%d", n-100, n-1, n)},
		{"open ended", []string{"-r", "599000-", u}, 206, data[599000:], ""},
		{"past EOF", []string{"-r", "600000-600100", u}, 416, nil, fmt.Sprintf("Content-Range: bytes */%d", n)},
		{"end clipped", []string{"-r", "599990-700000", u}, 206, data[599990:], ""},
		{"slash branch", []string{"-r", "0-99", s.url + "/feature/x/d/x.bin"}, 206, data[:100], ""},
		{"multiple", []string{"-r", "0-9,100-109", u}, 206, nil, "Content-Type: multipart/byteranges"},
		{"head", []string{"-I", u}, 200, nil, fmt.Sprintf("Content-Length: %d", n)},
		{"escape", []string{"--path-as-is", s.url + "/main/../../etc/passwd"}, 400, nil, ""},
		{"missing", []string{s.url + "/main/d/nope.bin"}, 404, nil, ""},
	} {
		code, hdr, body := curl(t, c.args...)
		if code != c.code {
			t.Errorf("%s: status %d, want %d\n%s", c.name, code, c.code, hdr)
			continue
		}
		if c.body != nil && !bytes.Equal(body, c.body) {
			t.Errorf("%s: %d bytes differ from the %d expected", c.name, len(body), len(c.body))
		}
		if c.hdr != "" && !strings.Contains(hdr, c.hdr) {
			t.Errorf("%s: no %q in\n%s", c.name, c.hdr, hdr)
		}
		if m := regexp.MustCompile(`(?i)etag: (\S+)`).FindStringSubmatch(hdr); m != nil {
			etag = m[1]
		}
	}
	if code, _, _ := curl(t, "-H", "If-None-Match: "+etag, u); code != 304 {
		t.Errorf("If-None-Match with the ETag: %d, want 304", code)
	}
	if st := s.stats(t); st.Requests < 11 || st.BytesServed < int64(n) {
		t.Errorf("stats %+v", st)
	}
	s.stop(t)
	if !strings.Contains(s.logs.String(), `"status":416`) {
		t.Errorf("no JSON log line for the 416:\n%s", s.logs)
	}

	// Token: required when set; a non-loopback address needs one.
	ts := startServe(t, r, "--token", "tok")
	if code, _, _ := curl(t, ts.url+"/main/d/x.bin"); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := curl(t, "-H", "Authorization: Bearer tok", "-r", "0-0", ts.url+"/main/d/x.bin"); code != 206 {
		t.Errorf("bearer token: %d", code)
	}
	if res := r.run(serveBinary(t), "serve", "--addr", "0.0.0.0:0"); res.code != exitUsage || !strings.Contains(res.stderr, "--token") {
		t.Errorf("non-loopback without token: exit %d %s", res.code, res.stderr)
	}
}

// demCOG writes a 2048² UInt16 DEFLATE COG (256-pixel tiles, 10 m pixels,
// EPSG:32633, origin 500000,4620480) at path.
func demCOG(t *testing.T, path string) {
	t.Helper()
	raw := filepath.Join(t.TempDir(), "dem.bin")
	if out, err := exec.Command(mkdemo(t), "raster", "-o", raw, "-size", "2048").CombinedOutput(); err != nil {
		t.Fatalf("mkdemo: %v %s", err, out)
	}
	formattest.Run1(t, "gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=256",
		"-a_srs", "EPSG:32633", "-a_ullr", "500000", "4620480", "520480", "4600000", raw, path)
}

// window returns the raw pixels of a window of a raster, read by GDAL.
func window(t *testing.T, src string, x, y, w, h int) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "win.envi")
	formattest.Run1(t, "gdal_translate", "-q", "-of", "ENVI", "-srcwin", fmt.Sprint(x), fmt.Sprint(y), fmt.Sprint(w), fmt.Sprint(h), src, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lazyDEM commits a COG to a repository whose store is a separate
// directory and lazily clones it, so every chunk read in the clone is a
// fetch from the store.
func lazyDEM(t *testing.T) (orig string, clone *runner, size int64) {
	formattest.RequireTool(t, "gdal_translate")
	a := newRunner(t)
	store := filepath.Join(t.TempDir(), "chunks")
	a.cv("init", "--store", store)
	a.cv("track", "*.tif")
	demCOG(t, a.path("dem.tif"))
	a.cv("commit", "-m", "dem")
	b := newRunner(t)
	b.cv("clone", "--lazy", "--trust-store", a.dir, "c")
	b.dir = b.path("c")
	fi, err := os.Stat(a.path("dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	return a.path("dem.tif"), b, fi.Size()
}

// GDAL reads a window of a COG over /vsicurl/ from a lazy clone: same
// pixels as the original, and only a small part of the file is fetched.
func TestServeVsicurlLazyClone(t *testing.T) {
	orig, b, size := lazyDEM(t)
	s := startServe(t, b)
	url := "/vsicurl/" + s.url + "/main/dem.tif"
	// (With EMPTY_DIR the ENVI driver cannot find the .hdr it just wrote,
	// so the window goes to a GTiff and is compared as raw pixels after.)
	gdalEnv := []string{"GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR", "GDAL_HTTP_MAX_RETRY=0"}
	out := filepath.Join(t.TempDir(), "win.tif")
	cmd := exec.Command("gdal_translate", "-q", "-srcwin", "1000", "700", "256", "256", url, out)
	cmd.Env = append(os.Environ(), gdalEnv...)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate over vsicurl: %v\n%s\n%s", err, o, s.logs)
	}
	if want := window(t, orig, 1000, 700, 256, 256); !bytes.Equal(window(t, out, 0, 0, 256, 256), want) {
		t.Fatal("pixels read over /vsicurl/ differ from the original's")
	}
	st := s.stats(t)
	frac := float64(st.BytesFetched) / float64(size)
	t.Logf("vsicurl window: %d requests, %d bytes served, %d chunks = %d bytes fetched from the store = %.1f%% of the %d-byte file",
		st.Requests, st.BytesServed, st.ChunksFetched, st.BytesFetched, 100*frac, size)
	if st.BytesFetched == 0 || frac >= 0.15 {
		t.Fatalf("fetched %.1f%% of the file from the store (want > 0 and < 15%%)", 100*frac)
	}
}

// checkout --bbox of a COG: a valid, much smaller GeoTIFF with the right
// pixels in the box, shown as partial, refused by commit, and replaced by
// a full checkout.
func TestCheckoutBBoxCOG(t *testing.T) {
	orig, b, size := lazyDEM(t)
	// Pixels 600..900 in x and y: tiles r2..r3, c2..c3 at full resolution.
	box := "506000,4611480,509000,4614480"
	res := b.run(binary, "checkout", "--bbox", box, "--bbox-crs", "EPSG:4326", "--", "dem.tif")
	if res.code == 0 || !strings.Contains(res.stderr, "EPSG:32633") {
		t.Fatalf("--bbox-crs EPSG:4326 on a UTM file: exit %d %s", res.code, res.stderr)
	}
	var co struct {
		Files []struct {
			Path         string `json:"path"`
			Status       string `json:"status"`
			Size         int64  `json:"size"`
			FullSize     int64  `json:"full_size"`
			BytesFetched int64  `json:"bytes_fetched"`
		} `json:"files"`
	}
	b.jsonOf(&co, "checkout", "--bbox", box, "--", "dem.tif")
	if len(co.Files) != 1 || co.Files[0].Status != "partial" || co.Files[0].FullSize != size {
		t.Fatalf("checkout --bbox: %+v", co)
	}
	fi, err := os.Stat(b.path("dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("partial COG: %d of %d bytes (%.1f%%); fetched %d bytes", fi.Size(), size, 100*float64(fi.Size())/float64(size), co.Files[0].BytesFetched)
	if fi.Size() != co.Files[0].Size || fi.Size() >= size/2 {
		t.Fatalf("partial file is %d bytes of %d", fi.Size(), size)
	}
	if out := formattest.Run1(t, "gdalinfo", "-checksum", b.path("dem.tif")); !strings.Contains(out, "Checksum=") {
		t.Fatalf("gdalinfo cannot read the partial file:\n%s", out)
	}
	if !bytes.Equal(window(t, b.path("dem.tif"), 600, 600, 300, 300), window(t, orig, 600, 600, 300, 300)) {
		t.Fatal("pixels inside the box differ")
	}
	if bytes.Equal(window(t, b.path("dem.tif"), 1500, 1500, 64, 64), window(t, orig, 1500, 1500, 64, 64)) {
		t.Fatal("pixels far outside the box are present: nothing was left out")
	}
	if st := b.cv("status"); !strings.Contains(st, "partial") || !strings.Contains(st, "dem.tif") {
		t.Fatalf("status: %q", st)
	}
	if res := b.run(binary, "commit", "-m", "oops"); res.code != exitRefused || !strings.Contains(res.stderr, "partial") {
		t.Fatalf("commit of a partial file: exit %d (want %d, refused)\n%s%s", res.code, exitRefused, res.stdout, res.stderr)
	}
	b.cv("checkout", "--", "dem.tif")
	if got, _ := os.ReadFile(b.path("dem.tif")); !bytes.Equal(got, mustRead(t, orig)) {
		t.Fatal("full checkout after a partial one is not byte-identical")
	}
	if st := b.cv("status"); st != "" {
		t.Fatalf("status after the full checkout: %q", st)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A FlatGeobuf with a spatial index (derived, not stored) served from a
// lazy clone: OGR reads it over /vsicurl/ (the first read of the index
// rebuilds the file once); checkout --bbox prefetches the blocks that meet
// the box and writes no file.
func TestServeFlatGeobufAndPrefetch(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	a := newRunner(t)
	a.cv("init", "--store", filepath.Join(t.TempDir(), "chunks"))
	a.cv("track", "*.fgb")
	csv := filepath.Join(t.TempDir(), "p.csv")
	runTool(t, mkdemo(t), "points", "-o", csv, "-n", "20000")
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES", "-oo", "X_POSSIBLE_NAMES=lon", "-oo", "Y_POSSIBLE_NAMES=lat",
		"-oo", "KEEP_GEOM_COLUMNS=NO", "-a_srs", "EPSG:4326", "-nln", "stations", a.path("p.fgb"), csv)
	a.cv("commit", "-m", "points")
	b := newRunner(t)
	b.cv("clone", "--lazy", "--trust-store", a.dir, "c")
	b.dir = b.path("c")

	s := startServe(t, b)
	cmd := exec.Command("ogrinfo", "-ro", "-so", "-al", "/vsicurl/"+s.url+"/main/p.fgb")
	cmd.Env = append(os.Environ(), "GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Feature Count: 20000") {
		t.Fatalf("ogrinfo over vsicurl: %v\n%s", err, out)
	}
	s.stop(t)
	if !strings.Contains(s.logs.String(), `"status":206`) {
		t.Fatalf("no range request logged:\n%s", s.logs)
	}

	var co struct {
		Files []struct {
			Status        string `json:"status"`
			ChunksFetched int    `json:"chunks_fetched"`
			BytesFetched  int64  `json:"bytes_fetched"`
			FullSize      int64  `json:"full_size"`
		} `json:"files"`
	}
	b.jsonOf(&co, "checkout", "--bbox", "5,45,6,46", "--", "p.fgb")
	if len(co.Files) != 1 || co.Files[0].Status != "prefetched" || co.Files[0].ChunksFetched == 0 || co.Files[0].BytesFetched >= co.Files[0].FullSize {
		t.Fatalf("checkout --bbox of a FlatGeobuf: %+v", co)
	}
	t.Logf("prefetched %d chunks, %d of %d bytes", co.Files[0].ChunksFetched, co.Files[0].BytesFetched, co.Files[0].FullSize)
	if _, err := os.Stat(b.path("p.fgb")); !os.IsNotExist(err) {
		t.Fatal("checkout --bbox wrote a FlatGeobuf")
	}
	if st := b.cv("status"); st != "" {
		t.Fatalf("status after a prefetch: %q", st)
	}
}

// The headline against a real MinIO: a lazy clone serves a COG to
// GDAL's /vsicurl/; a 256×256 window has the original's pixels, and MinIO
// sends (measured at the server) a small fraction of the file.
func TestServeVsicurlMinIO(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	srv := miniotest.Start(t)
	a := newRunner(t)
	a.env = append(a.env, srv.Env()...)
	demCOG(t, a.path("dem.tif"))
	orig := a.path("dem.tif")
	size := int64(len(a.read("dem.tif")))
	a.cv("init", "--store", "s3://chunkvc-serve/lazy")
	a.cv("track", "*.tif")
	a.cv("commit", "-m", "dem")
	b := newRunner(t)
	b.env = a.env
	b.cv("clone", "--lazy", a.dir, "c")
	b.dir = b.path("c")
	s := startServe(t, b)
	_, sent0, err := srv.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "win.tif")
	cmd := exec.Command("gdal_translate", "-q", "-srcwin", "1000", "700", "256", "256", "/vsicurl/"+s.url+"/main/dem.tif", out)
	cmd.Env = append(os.Environ(), "GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR", "GDAL_HTTP_MAX_RETRY=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate over vsicurl: %v\n%s", err, o)
	}
	_, sent1, err := srv.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(window(t, out, 0, 0, 256, 256), window(t, orig, 1000, 700, 256, 256)) {
		t.Fatal("pixels read over /vsicurl/ from MinIO differ from the original's")
	}
	st := s.stats(t)
	frac := float64(sent1-sent0) / float64(size)
	t.Logf("MinIO sent %d bytes (%.1f%% of the %d-byte file); serve counted %d chunks = %d bytes fetched", sent1-sent0, 100*frac, size, st.ChunksFetched, st.BytesFetched)
	if st.ChunksFetched == 0 || frac >= 0.15 {
		t.Fatalf("MinIO sent %.1f%% of the file (want < 15%%)", 100*frac)
	}
}
