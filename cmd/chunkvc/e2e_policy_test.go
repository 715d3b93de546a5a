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

// push judges every commit it sends by the rules that commit holds: a
// change an append-only gate refuses, committed past a config edited in
// the work tree only, is refused (exit 4, commit, file and rule named)
// and the remote does not move; history from before the gate pushes.
func TestPushPolicy(t *testing.T) {
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "runs/**")
	r.write("runs/1/a.bin", randomBytes(70000, 1))
	r.cv("commit", "-q", "-m", "run 1")
	r.write("runs/1/a.bin", randomBytes(70000, 2))
	r.cv("commit", "-q", "-m", "rewrite run 1 (before the gate)")
	r.addConfig("append-only = runs/**")
	r.git("add", ".chunkvc/config")
	r.git("commit", "-q", "-m", "gate: runs are append-only")
	bare := r.path("origin.git")
	r.git("init", "-q", "--bare", "-b", "main", bare)
	r.git("remote", "add", "origin", bare)
	r.cv("push")

	gated, err := os.ReadFile(r.path(".chunkvc/config"))
	if err != nil {
		t.Fatal(err)
	}
	r.write(".chunkvc/config", []byte(strings.Replace(string(gated), "append-only = runs/**\n", "", 1)))
	r.write("runs/1/a.bin", randomBytes(70000, 3))
	r.cv("commit", "-q", "-m", "rewrite run 1 past the gate")
	r.write(".chunkvc/config", gated)
	bad := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	res := r.run(binary, "push")
	if res.code != exitRefused || !strings.Contains(res.stderr, "runs/1/a.bin (commit "+bad[:12]+")") || !strings.Contains(res.stderr, "append-only = runs/**") {
		t.Fatalf("push of a commit the gate refuses: exit %d (want %d)\n%s", res.code, exitRefused, res.stderr)
	}
	// A plain git push runs the same check through the pre-push hook.
	r.cv("install")
	if res := r.run("git", "push", "origin", "main"); res.code == 0 || !strings.Contains(res.stderr, "append-only = runs/**") {
		t.Fatalf("git push with the hook: exit %d\n%s", res.code, res.stderr)
	}
	if remote := r.git("--git-dir", bare, "rev-parse", "main"); strings.TrimSpace(remote) == bad {
		t.Fatal("the remote moved to the refused commit")
	}
}

// strict-profile also refuses a raster whose profile is unchanged but
// whose tiles were re-encoded (new bytes, same pixels: here DEFLATE level
// 1 instead of 6), in commit and in check; a real pixel edit passes, and
// --allow-reencode lets the re-encode through.
func TestStrictProfilePixels(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "*.tif")
	r.addConfig("strict-profile = *.tif")
	r.git("add", ".chunkvc/config")
	r.git("commit", "-q", "-m", "gate: strict profile")
	cog(t, "make", r.path("dem.tif"))
	r.cv("commit", "-q", "-m", "base")
	reencode := func() {
		tmp := r.path("re.tif")
		formattest.Run1(t, "gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "LEVEL=1", "-co", "BLOCKSIZE=256",
			"-co", "OVERVIEW_COUNT=1", r.path("dem.tif"), tmp)
		if err := os.Rename(tmp, r.path("dem.tif")); err != nil {
			t.Fatal(err)
		}
	}
	reencode()
	res := r.run(binary, "commit", "-m", "re-encoded")
	if res.code != exitRefused || !strings.Contains(res.stderr, "same pixels") || !strings.Contains(res.stderr, "strict-profile = *.tif") {
		t.Fatalf("commit of a re-encode: exit %d (want %d)\n%s", res.code, exitRefused, res.stderr)
	}
	r.cv("commit", "-q", "--allow-reencode", "-m", "re-encoded on purpose")
	if res := r.run(binary, "check", "HEAD~1..HEAD"); res.code != exitRefused || !strings.Contains(res.stderr+res.stdout, "same pixels") {
		t.Fatalf("check of the re-encode: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	cog(t, "edit", r.path("dem.tif"), editTopLeft)
	reencode() // the same encoder as HEAD's: only the edited tiles change
	r.cv("commit", "-q", "-m", "an edit")
	r.cv("check", "HEAD~1..HEAD")
}
