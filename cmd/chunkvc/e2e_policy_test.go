package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

func (r *runner) addConfig(line string) {
	r.t.Helper()
	f, err := os.OpenFile(r.path(".chunkvc/config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		r.t.Fatal(err)
	}
}

// Policy gates: append-only lets files be added and refuses a change or a
// removal (exit 4, file and rule named, HEAD unmoved); crs refuses a
// raster in another CRS; check finds a change made before the gate was
// declared, in the range that holds it and not in one that does not.
func TestPolicyGates(t *testing.T) {
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "runs/**", "*.tif")
	r.write("runs/1/a.bin", randomBytes(70000, 1))
	r.cv("commit", "-q", "-m", "run 1")
	r.write("runs/1/a.bin", randomBytes(70000, 2))
	r.cv("commit", "-q", "-m", "rewrite run 1 (before the gate)")
	r.addConfig("append-only = runs/**")
	r.git("add", ".chunkvc/config")
	r.git("commit", "-q", "-m", "gate: runs are append-only")
	head := r.git("rev-parse", "HEAD")

	r.write("runs/2/a.bin", randomBytes(70000, 3))
	r.cv("commit", "-q", "-m", "run 2")
	r.write("runs/1/a.bin", randomBytes(70000, 4))
	res := r.run(binary, "commit", "-m", "rewrite run 1")
	if res.code != exitRefused || !strings.Contains(res.stderr, "runs/1/a.bin") || !strings.Contains(res.stderr, "append-only = runs/**") {
		t.Fatalf("commit changing an append-only file: exit %d (want %d)\n%s", res.code, exitRefused, res.stderr)
	}
	if err := os.Remove(r.path("runs/1/a.bin")); err != nil {
		t.Fatal(err)
	}
	if res := r.run(binary, "commit", "-m", "drop run 1"); res.code != exitRefused || !strings.Contains(res.stderr, "removed") {
		t.Fatalf("commit removing an append-only file: exit %d\n%s", res.code, res.stderr)
	}
	if got := r.git("log", "-1", "--format=%s"); got != "run 2\n" {
		t.Fatalf("HEAD moved: %q", got)
	}
	r.git("checkout", "-q", "--", ".")
	r.cv("checkout", "--force", "--", "runs/1/a.bin")

	type checkJSON struct {
		Commits    int  `json:"commits"`
		OK         bool `json:"ok"`
		Violations []struct {
			Commit, Path, Rule, Reason string
		} `json:"violations"`
	}
	var ok checkJSON
	r.jsonOf(&ok, "check", "--json", strings.TrimSpace(head)+"..HEAD")
	if !ok.OK || ok.Commits != 1 {
		t.Errorf("check of the gated range: %+v", ok)
	}
	res = r.run(binary, "check", "--json", "HEAD~3..HEAD")
	var bad checkJSON
	if res.code != exitRefused || json.Unmarshal([]byte(res.stdout), &bad) != nil || bad.OK || len(bad.Violations) != 1 ||
		bad.Violations[0].Path != "runs/1/a.bin" || !strings.HasPrefix(r.git("rev-parse", "HEAD~2"), bad.Violations[0].Commit) {
		t.Fatalf("check over the rewrite: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	tif := r.path("dem.tif")
	formattest.Run1(t, "gdal_create", "-q", "-of", "GTiff", "-outsize", "64", "64", "-bands", "1", "-burn", "7",
		"-a_srs", "EPSG:32631", "-a_ullr", "500000", "4600000", "500640", "4599360", "-co", "TILED=YES", tif)
	r.addConfig("crs = EPSG:4326 *.tif")
	res = r.run(binary, "commit", "-m", "dem")
	if res.code != exitRefused || !strings.Contains(res.stderr, "dem.tif") || !strings.Contains(res.stderr, "EPSG:32631") {
		t.Fatalf("commit of a raster in another CRS: exit %d\n%s", res.code, res.stderr)
	}
}
