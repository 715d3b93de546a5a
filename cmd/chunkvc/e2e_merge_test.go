package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// cogTool makes, edits and checks the test COG with GDAL's Python
// bindings: 1024² bytes in 256² DEFLATE tiles with one overview level
// (2×2 tiles), so that edits in opposite corners touch different tiles at
// every level; arguments opt:size=4096 opt:block=128 make a COG of 4096²
// in 128² tiles instead (1,280 of them: a split manifest);
// opt:overviews=all makes overviews down to one tile (the COG driver's
// default), opt:compress=LZW and opt:resampling=CUBIC change the profile.
// check compares every overview level.
const cogTool = `
import os, sys
import numpy as np
from osgeo import gdal, osr
gdal.UseExceptions()

def base():
    n = int(opts.get('size', 1024))
    y, x = np.mgrid[0:n, 0:n]
    return ((x * 7 + y * 13 + (x * y) % 17) % 251).astype(np.uint8)

def write(a, out, meta={}):
    block = int(opts.get('block', 256))
    mem = gdal.GetDriverByName('MEM').Create('', a.shape[1], a.shape[0], 1, gdal.GDT_Byte)
    mem.SetGeoTransform([500000, 10, 0, 4600000, 0, -10])
    srs = osr.SpatialReference(); srs.ImportFromEPSG(32633)
    mem.SetProjection(srs.ExportToWkt())
    mem.GetRasterBand(1).WriteArray(a)
    for k, v in meta.items():
        mem.SetMetadataItem(k, v)
    tmp = out + '.tmp'
    co = ['BLOCKSIZE=%d' % block, 'COMPRESS=' + opts.get('compress', 'DEFLATE'), 'RESAMPLING=' + opts.get('resampling', 'AVERAGE')]
    if opts.get('overviews') != 'all':
        co.append('OVERVIEW_COUNT=1')
    gdal.GetDriverByName('COG').CreateCopy(tmp, mem, options=co)
    os.replace(tmp, out)

def apply(a, edits):
    for e in edits:
        x, y, w, h, v = [int(s) for s in e.split(',')]
        a[y:y+h, x:x+w] = v
    return a

cmd, path = sys.argv[1], sys.argv[2]
edits = [e for e in sys.argv[3:] if ':' not in e]
meta = dict(e[5:].split('=', 1) for e in sys.argv[3:] if e.startswith('meta:'))
opts = dict(e[4:].split('=', 1) for e in sys.argv[3:] if e.startswith('opt:'))
if cmd == 'make':
    write(apply(base(), edits), path)
elif cmd == 'edit':
    ds = gdal.Open(path); a = ds.ReadAsArray(); ds = None
    write(apply(a, edits), path, meta)
elif cmd == 'check':
    # The file must hold exactly the base with the edits, at full
    # resolution and in its overviews (as GDAL would compute them).
    want = path + '.want.tif'
    write(apply(base(), edits), want)
    got, exp = gdal.Open(path), gdal.Open(want)
    bad = int((got.ReadAsArray() != exp.ReadAsArray()).sum())
    gb, eb = got.GetRasterBand(1), exp.GetRasterBand(1)
    if gb.GetOverviewCount() != eb.GetOverviewCount():
        sys.exit('%d overviews, want %d' % (gb.GetOverviewCount(), eb.GetOverviewCount()))
    ovr = sum(int((gb.GetOverview(i).ReadAsArray() != eb.GetOverview(i).ReadAsArray()).sum()) for i in range(gb.GetOverviewCount()))
    os.remove(want)
    print('full-res pixels wrong: %d, overview pixels wrong: %d' % (bad, ovr))
`

// cog runs cogTool and returns its output.
func cog(t *testing.T, args ...string) string {
	t.Helper()
	py := formattest.RequirePython(t, "osgeo.gdal", "numpy")
	out, err := exec.Command(py, append([]string{"-c", cogTool}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cog %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Edits of the same COG on two branches (a window in opposite corners)
const (
	editTopLeft     = "10,10,100,100,0"     // tile z0/r0/c0, overview z1/r0/c0
	editBottomRight = "900,880,100,120,255" // tile z0/r3/c3, overview z1/r1/c1
	editTopLeftToo  = "50,50,20,20,77"      // the same tile as editTopLeft
)

// mergeRepo makes a repository with the base COG (and notes.bin)
// committed, the merge driver installed, and a branch "theirs" with
// theirEdits (and a new notes.bin) committed; HEAD is back on the main
// branch with its files checked out. It returns their notes.bin.
func mergeRepo(t *testing.T, theirEdits ...string) (*runner, []byte) {
	r := newRunner(t)
	r.cv("init")
	r.cv("install")
	r.cv("track", "*.tif", "*.bin")
	cog(t, "make", r.path("dem.tif"))
	r.write("notes.bin", randomBytes(200000, 1))
	r.cv("commit", "-m", "base")
	main := strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD"))
	r.git("checkout", "-q", "-b", "theirs")
	cog(t, append([]string{"edit", r.path("dem.tif")}, theirEdits...)...)
	notes := randomBytes(200000, 2)
	r.write("notes.bin", notes)
	r.cv("commit", "-m", "theirs")
	r.git("checkout", "-q", main)
	r.cv("checkout", "--force")
	return r, notes
}

// clean fails the test unless chunkvc status lists no changed file.
func clean(t *testing.T, r *runner, when string) {
	t.Helper()
	if st := r.cv("status"); strings.Contains(st, "dem.tif") || strings.Contains(st, "notes.bin") {
		t.Fatalf("status %s:\n%s", when, st)
	}
}

// A plain git merge of two branches that edited different tiles of one
// COG merges tile by tile: no conflict, GDAL reads both edits and the
// base elsewhere (overview included), and fsck is clean. A file only
// their side changed is written by the post-merge hook.
func TestGitMergeCOGTiles(t *testing.T) {
	formattest.RequireTool(t, "git")
	r, notes := mergeRepo(t, editBottomRight)
	cog(t, "edit", r.path("dem.tif"), editTopLeft)
	r.cv("commit", "-m", "ours")
	res := r.run("git", "merge", "--no-edit", "theirs")
	if res.code != 0 {
		t.Fatalf("git merge: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, "merged dem.tif: 2 chunks from theirs") { // z0/r3/c3 and z1/r1/c1
		t.Fatalf("git merge did not merge tiles:\n%s", res.stderr)
	}
	if got := cog(t, "check", r.path("dem.tif"), editTopLeft, editBottomRight); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
		t.Fatalf("merged COG: %s", got)
	}
	if info := formattest.Run1(t, "gdalinfo", "-checksum", r.path("dem.tif")); !strings.Contains(info, "Overviews: 512x512") {
		t.Fatalf("gdalinfo of the merged COG:\n%s", info)
	}
	if !bytes.Equal(r.read("notes.bin"), notes) {
		t.Fatal("notes.bin, changed by their side only, is not theirs after the merge")
	}
	clean(t, r, "after the merge")
	r.cv("fsck")
	// The merge commit's manifest describes the file in the work tree.
	cat := r.cv("cat", "HEAD:dem.tif")
	if !bytes.Equal([]byte(cat), r.read("dem.tif")) {
		t.Fatal("chunkvc cat HEAD:dem.tif differs from the merged work file")
	}
	if log := r.git("log", "--oneline"); strings.Count(log, "\n") != 4 {
		t.Fatalf("history:\n%s", log)
	}
}

// The same tile edited differently on both sides is a conflict naming the
// tile and its bbox; git merge --abort then restores everything.
func TestGitMergeCOGConflictAborts(t *testing.T) {
	formattest.RequireTool(t, "git")
	r, _ := mergeRepo(t, editTopLeftToo)
	cog(t, "edit", r.path("dem.tif"), editTopLeft)
	r.cv("commit", "-m", "ours")
	before, manifest := r.read("dem.tif"), r.read(".chunkvc/manifests/dem.tif")
	res := r.run("git", "merge", "--no-edit", "theirs")
	if res.code == 0 {
		t.Fatalf("git merge of a tile changed on both sides succeeded:\n%s%s", res.stdout, res.stderr)
	}
	text := string(r.read(".chunkvc/manifests/dem.tif"))
	if !strings.Contains(text, "conflict z0/r0/c0 [500000,4597440,502560,4600000]: changed on both sides") ||
		!strings.Contains(text, "conflict z1/r0/c0") || !strings.Contains(res.stderr, "conflict z0/r0/c0") {
		t.Fatalf("conflict not recorded:\n%s\nstderr:\n%s", text, res.stderr)
	}
	if !bytes.Equal(r.read("dem.tif"), before) {
		t.Fatal("a conflicted merge changed the work file")
	}
	r.git("merge", "--abort")
	if !bytes.Equal(r.read(".chunkvc/manifests/dem.tif"), manifest) || !bytes.Equal(r.read("dem.tif"), before) {
		t.Fatal("git merge --abort did not restore our version")
	}
	clean(t, r, "after the abort")
	r.cv("fsck")
	if got := cog(t, "check", r.path("dem.tif"), editTopLeft); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
		t.Fatalf("our COG after the abort: %s", got)
	}
}

// Tiles from a side whose other TIFF tags changed (here a metadata item)
// are not spliced into ours, which would drop that change: a conflict,
// whether or not that side also changed tiles.
func TestGitMergeCOGMetadataConflict(t *testing.T) {
	formattest.RequireTool(t, "git")
	for _, theirs := range [][]string{{editBottomRight, "meta:SOURCE=survey-2"}, {"meta:SOURCE=survey-2"}} {
		t.Run(strings.Join(theirs, "+"), func(t *testing.T) {
			r, _ := mergeRepo(t, theirs...)
			cog(t, "edit", r.path("dem.tif"), editTopLeft)
			r.cv("commit", "-m", "ours")
			before := r.read("dem.tif")
			res := r.run("git", "merge", "--no-edit", "theirs")
			if res.code == 0 || !strings.Contains(string(r.read(".chunkvc/manifests/dem.tif")), "TIFF tags or IFD structure differ") {
				t.Fatalf("git merge: exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
			if !bytes.Equal(r.read("dem.tif"), before) {
				t.Fatal("a conflicted merge changed the work file")
			}
			r.git("merge", "--abort")
			clean(t, r, "after the abort")
		})
	}
}

// A generic file both branches changed is a conflict; keeping their side
// with git checkout --theirs and chunkvc checkout MERGE_HEAD gives their
// bytes, and the merge commits clean.
func TestGitMergeGenericConflictTakeTheirs(t *testing.T) {
	formattest.RequireTool(t, "git")
	r := newRunner(t)
	r.cv("init")
	r.cv("install")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(300000, 1))
	r.cv("commit", "-m", "base")
	main := strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD"))
	r.git("checkout", "-q", "-b", "theirs")
	theirs := randomBytes(300000, 2)
	r.write("a.bin", theirs)
	r.cv("commit", "-m", "theirs")
	r.git("checkout", "-q", main)
	r.cv("checkout", "--force")
	ours := randomBytes(300000, 3)
	r.write("a.bin", ours)
	r.cv("commit", "-m", "ours")
	res := r.run("git", "merge", "--no-edit", "theirs")
	if res.code == 0 || !strings.Contains(res.stderr, "a.bin: conflict: both sides changed this generic file") {
		t.Fatalf("git merge: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !bytes.Equal(r.read("a.bin"), ours) {
		t.Fatal("a conflicted merge changed the work file")
	}
	r.git("checkout", "--theirs", "--", ".chunkvc/manifests/a.bin")
	r.cv("checkout", "MERGE_HEAD", "--", "a.bin")
	r.git("add", ".chunkvc/manifests/a.bin")
	r.git("commit", "-q", "--no-edit")
	if !bytes.Equal(r.read("a.bin"), theirs) {
		t.Fatal("their side was not kept")
	}
	if st := r.cv("status"); strings.Contains(st, "a.bin") {
		t.Fatalf("status after the resolution:\n%s", st)
	}
	r.cv("fsck")
}
