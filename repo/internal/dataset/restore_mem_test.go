package dataset

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// wideVersion is a version of a v2 store of one array of n chunk files.
func wideVersion(t *testing.T, n int) Version {
	t.Helper()
	meta := `{"zarr_format": 2, "shape": [` + strconv.Itoa(n) + `], "chunks": [1], "dtype": "|u1", "compressor": null,
 "fill_value": 0, "order": "C", "filters": null}`
	var l manifest.Layout
	l.Append(manifest.Piece{Len: int64(len(meta)), Inline: []byte(meta)})
	layout, err := manifest.EncodeDataset([]manifest.Member{{Path: zarr.ZArray, Role: manifest.RoleDocument, Layout: &l}})
	if err != nil {
		t.Fatal(err)
	}
	v := Version{Layout: layout, Chunks: make([]manifest.Chunk, n)}
	for i := range v.Chunks {
		key, err := zarr.ChunkKey("", []int64{int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		v.Chunks[i] = manifest.Chunk{Key: key, Size: 1, ID: hashing.Sum([]byte(key))}
	}
	return v
}

// A checkout of a version of a million chunk files lists the files of
// the version it writes and of the one the store holds: what Update holds
// of each is its path, size and ID (88 bytes), where a map of
// targets, each with a list of pieces, held 237.
func TestUpdateListBytesPerFile(t *testing.T) {
	const n = 100_000
	v := wideVersion(t, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	files, err := fileList(v)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil || len(files) != n+1 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	if tg, ok := find(files, "99999"); !ok || tg.sum != v.Chunks[99999].ID {
		t.Fatalf("file 99999: %v %v", tg, ok)
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes a file", per)
	if per > 110 {
		t.Errorf("the list holds %d bytes a file, want at most 110", per)
	}
	runtime.KeepAlive(files)
}
