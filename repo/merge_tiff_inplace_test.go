package repo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// spliceInPlaceAlways lets the corpus's small COGs be spliced in place.
func spliceInPlaceAlways(t *testing.T) {
	t.Helper()
	oldMin := inPlaceMin
	inPlaceMin = 0
	t.Cleanup(func() { inPlaceMin = oldMin })
}

// workStat is the working file's stat.
func workStat(t *testing.T, r *Repo) statcache.Stat {
	t.Helper()
	fi, err := os.Stat(filepath.Join(r.Root, "dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	return statcache.StatOf(fi)
}

// The merge splices their tile into our working file where it is (the
// same inode), not into a new copy of the whole file: the bytes written
// are the header's and those from their tile on. The result is the
// file a whole splice makes, the journal is gone, and the stat cache
// vouches for the merged file.
func TestMergeSplicesInPlace(t *testing.T) {
	spliceInPlaceAlways(t)
	c := findCOG(t)
	r, files, theirTile := cogMerge(t, c)
	ourBytes, err := os.ReadFile(filepath.Join(r.Root, "dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	before := workStat(t, r)
	res, err := r.MergeDriver(context.Background(), files[0], files[1], files[2], ManifestDir+"/dem.tif")
	if err != nil || res.Outcome != MergedChunks || res.FromTheirs != 1 {
		t.Fatalf("merge: %+v, %v", res, err)
	}
	after := workStat(t, r)
	if after.Ino != before.Ino {
		t.Fatalf("the merged file is a new file (inode %d, ours was %d), not ours spliced in place", after.Ino, before.Ino)
	}
	text, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.ReadFile(filepath.Join(r.Root, "dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	ourSeg := chunkSegmentOf(t, ourBytes, c.k2.Key)
	if want := spliceBytes(t, ourBytes, ourSeg, theirTile); !bytes.Equal(work, want) {
		t.Fatal("the file spliced in place differs from the whole splice's")
	}
	if hashing.Sum(work) != m.Digest {
		t.Fatal("the merged manifest does not describe the working file")
	}
	if r.hasJournal() {
		t.Fatal("the splice's journal is left behind")
	}
	if e, ok := r.loadStatCache().LayoutOf("dem.tif", after); !ok || e.Digest != m.Digest {
		t.Fatalf("stat cache after the merge: %+v, %v", e, ok)
	}
}

// A merge spliced in place that fails afterwards (here the check of the
// merged chunks) puts our bytes back from the journal, in the same
// inode, and drops the journal.
func TestMergeInPlaceUndoneOnError(t *testing.T) {
	spliceInPlaceAlways(t)
	c := findCOG(t)
	r, files, theirTile := cogMerge(t, c)
	path := filepath.Join(r.Root, "dem.tif")
	ourBytes, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := workStat(t, r)
	text, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	ours, err := manifest.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	seg := chunkSegmentOf(t, ourBytes, c.k2.Key)
	sp, err := tiff.PlanSplice(a, ours.Size, []tiff.Replacement{{Off: seg.Off, Src: bytes.NewReader(theirTile), N: int64(len(theirTile))}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := r.spliceInPlace(context.Background(), ours, a, sp)
	if err != nil || in == nil {
		t.Fatalf("not spliced in place: %v", err)
	}
	if now, _ := os.ReadFile(path); bytes.Equal(now, ourBytes) || !r.hasJournal() {
		t.Fatal("spliced in place: the file is unchanged, or there is no journal")
	}
	refused := errors.New("refused")
	ch, err := r.storeMergedUndo(context.Background(), ours, func(*chunked) error { return refused }, nil, in)
	if ch != nil || !errors.Is(err, refused) {
		t.Fatalf("store of a refused merge: %v, %v", ch, err)
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, ourBytes) {
		t.Fatal("our bytes are not back after the failed merge")
	}
	if workStat(t, r).Ino != before.Ino || r.hasJournal() {
		t.Fatal("our file was not put back in place, or the journal is left")
	}
}

// chunkSegmentOf is the segment of data's chunk key.
func chunkSegmentOf(t *testing.T, data []byte, key string) formats.Segment {
	t.Helper()
	l, err := formattest.Layout(tiff.Adapter{}, data)
	if err != nil {
		t.Fatal(err)
	}
	seg, ok := chunkSegments(l)[key]
	if !ok {
		t.Fatalf("no chunk %s", key)
	}
	return seg
}
