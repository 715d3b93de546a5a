package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/manifest"
)

// writeV2Store writes a Zarr v2 store by hand: a root group and array
// "t" of 8×8 one-byte values in 2×2 chunks, uncompressed, so that each
// chunk file's bytes are known (chunk i.j holds seed+i*4+j).
func writeV2Store(t *testing.T, dir string, seed byte) {
	t.Helper()
	files := map[string]string{
		".zgroup":   `{"zarr_format":2}`,
		"t/.zarray": `{"chunks":[2,2],"compressor":null,"dtype":"|u1","fill_value":0,"filters":null,"order":"C","shape":[8,8],"zarr_format":2}`,
		"t/.zattrs": `{"_ARRAY_DIMENSIONS":["y","x"]}`,
	}
	for i := range 4 {
		for j := range 4 {
			v := seed + byte(i*4+j)
			files[fmt.Sprintf("t/%d.%d", i, j)] = string([]byte{v, v, v, v})
		}
	}
	for p, data := range files {
		name := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newDatasetRepo(t *testing.T) (*Repo, string) {
	t.Helper()
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	dir := t.TempDir()
	r, err := Init(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

// Tracking a directory: a Zarr store is a dataset, any other directory is
// refused, and a store chunkvc cannot read as Zarr is tracked as files.
func TestTrackDataset(t *testing.T) {
	r, dir := newDatasetRepo(t)
	writeV2Store(t, filepath.Join(dir, "data", "cube.zarr"), 1)
	if err := os.MkdirAll(filepath.Join(dir, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track([]string{"plain"}); err == nil || !strings.Contains(err.Error(), "not a Zarr store") {
		t.Errorf("track of a plain directory: %v", err)
	}
	added, err := r.Track([]string{"data/cube.zarr/"})
	if err != nil || len(added) != 1 || added[0] != "data/cube.zarr" || !r.Config.IsDataset("data/cube.zarr") {
		t.Fatalf("track of a store: %v %v %v", added, err, r.Config.Datasets)
	}
	if added, _ := r.Track([]string{"data/cube.zarr"}); len(added) != 0 {
		t.Errorf("tracked twice: %v", added)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, ConfigPath))
	if err != nil || !strings.Contains(string(cfg), "dataset = data/cube.zarr\n") {
		t.Errorf("config: %q %v", cfg, err)
	}
	back, err := ParseConfig(cfg)
	if err != nil || !back.IsDataset("data/cube.zarr") {
		t.Errorf("config does not parse back: %v", err)
	}
	ign, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if !strings.Contains(string(ign), "/data/cube.zarr/\n") {
		t.Errorf(".gitignore: %q", ign)
	}
	// GDAL 3.6's pre-release v3 layout: files, with the reason.
	draft := filepath.Join(dir, "draft.zarr")
	if err := os.MkdirAll(filepath.Join(draft, "meta", "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(draft, "zarr.json"), []byte(`{"zarr_format":"https://purl.org/zarr/spec/protocol/core/3.0","metadata_encoding":"https://purl.org/zarr/spec/protocol/core/3.0","metadata_key_suffix":".json","extensions":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !zarr.IsDraftV3(mustRead(t, filepath.Join(draft, "zarr.json"))) {
		t.Fatal("test store is not the draft layout")
	}
	added, notes, err := r.TrackWithNotes([]string{"draft.zarr"})
	if err != nil || len(added) != 1 || added[0] != "draft.zarr/**" || len(notes) != 1 || !strings.Contains(notes[0], "plain files") {
		t.Errorf("draft store: %v %v %v", added, notes, err)
	}
	for _, bad := range []string{"dataset = ../x", "dataset = .chunkvc/x", "dataset = a\ndataset = a/b"} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("config %q accepted", bad)
		}
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A dataset commits as one path with a split manifest keyed by grid
// coordinates; status and commit of an untouched store read nothing; an
// edit of one chunk file reads that file alone and changes one chunk.
func TestCommitDataset(t *testing.T) {
	ctx := context.Background()
	r, dir := newDatasetRepo(t)
	store := filepath.Join(dir, "cube.zarr")
	writeV2Store(t, store, 1)
	// A pattern that matches files inside the store must not track them
	// one by one.
	if _, err := r.Track([]string{"cube.zarr", "*.zattrs", "**"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, CommitOptions{Message: "v1", Paths: []string{"cube.zarr/t/0.0"}}); err == nil || !strings.Contains(err.Error(), "file of dataset cube.zarr") {
		t.Fatalf("commit of a member: %v", err)
	}
	// Named, a dataset not yet committed is committed.
	res, err := r.Commit(ctx, CommitOptions{Message: "v1", Paths: []string{"cube.zarr"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "cube.zarr" || res.Files[0].Status != FileAdded || res.Files[0].Chunks != 16 {
		t.Fatalf("commit: %+v", res.Files)
	}
	m, err := r.Manifest("", "cube.zarr")
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != zarr.Format || len(m.Chunks) != 16 || m.Chunks[0].Key != "t/c/0/0" || m.SummaryValue("arrays") != "1" {
		t.Fatalf("manifest: %s %d %v", m.Format, len(m.Chunks), m.Summary)
	}
	root := mustRead(t, filepath.Join(dir, ManifestDir, "cube.zarr"))
	if !manifest.IsSplit(root) {
		t.Fatal("a dataset's manifest is not split")
	}
	if _, err := os.Stat(filepath.Join(dir, manifest.ShardDir, "cube.zarr", "t", "b0", "0")); err != nil {
		t.Fatalf("shard of array t: %v", err)
	}
	// Past the racy window, an untouched store is neither read by status
	// nor by commit.
	time.Sleep(100 * time.Millisecond)
	if st, err := r.Status(ctx); err != nil || len(st) != 0 {
		t.Fatalf("status of an untouched store: %v %v", st, err)
	}
	if _, err := r.Commit(ctx, CommitOptions{Message: "again"}); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("commit of an untouched store: %v", err)
	}
	if err := os.WriteFile(filepath.Join(store, "t", "1.2"), []byte{99, 99, 99, 99}, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := r.Status(ctx)
	if err != nil || len(st) != 1 || st[0].Status != FileModified {
		t.Fatalf("status of an edited store: %v %v", st, err)
	}
	if a := st[0].Arrays; len(a) != 1 || a[0].Array != "t" || a[0].Changed != 1 || a[0].Total != 16 {
		t.Errorf("status of an edited store, arrays: %+v", a)
	}
	d, err := r.Diff(ctx, DiffOptions{})
	if err != nil || len(d.Files) != 1 || d.Files[0].Chunks.Changed != 1 || d.Files[0].Zarr == nil {
		t.Fatalf("diff of the work tree: %+v %v", d, err)
	}
	ch, err := r.chunkDataset(ctx, "cube.zarr", nil, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch.read != 1 {
		t.Errorf("hashing a store with one file edited read %d chunks", ch.read)
	}
	res, err = r.Commit(ctx, CommitOptions{Message: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Files[0]; f.Status != FileModified || f.Changed != 1 || f.NewChunks != 1 {
		t.Fatalf("commit of one edited chunk: %+v", f)
	}
	if st, err := r.Status(ctx); err != nil || len(st) != 0 {
		t.Fatalf("status after the commit: %v %v", st, err)
	}
	// A file added to the store is a member (and a chunk in the grid).
	if err := os.WriteFile(filepath.Join(store, "README"), []byte("about"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := r.Status(ctx); err != nil || len(st) != 1 || st[0].Status != FileModified {
		t.Fatalf("status with a file added to the store: %v %v", st, err)
	}
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if st, err := r.Status(ctx); err != nil || len(st) != 1 || st[0].Status != FileDeleted {
		t.Fatalf("status with the store removed: %v %v", st, err)
	}
	res, err = r.Commit(ctx, CommitOptions{Message: "gone"})
	if err != nil || res.Files[0].Status != FileDeleted {
		t.Fatalf("commit of the removed store: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, manifest.ShardDir, "cube.zarr")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("shards of a deleted dataset left: %v", err)
	}
}

// A symbolic link in a store is refused with its path: nothing outside
// the store is read through it.
func TestCommitDatasetSymlinkRefused(t *testing.T) {
	r, dir := newDatasetRepo(t)
	store := filepath.Join(dir, "cube.zarr")
	writeV2Store(t, store, 1)
	if _, err := r.Track([]string{"cube.zarr"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(store, "t", "3.3x")); err != nil {
		t.Fatal(err)
	}
	_, err := r.Commit(context.Background(), CommitOptions{Message: "v1"})
	if err == nil || !strings.Contains(err.Error(), "3.3x") {
		t.Fatalf("commit of a store holding a link: %v", err)
	}
}
