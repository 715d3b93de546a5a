package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// snapshot maps each file of the array to its bytes.
func snapshot(t *testing.T, arr string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(arr)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(arr, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func TestZarrEditAppendRechunk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cube.zarr")
	arr := filepath.Join(dir, "t2m")
	if err := zarrNew(dir, 1, 3); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, arr)
	if got := len(before); got != 3*zarrPerStep+2 { // chunks + .zarray + .zattrs
		t.Fatalf("new store: %d files, want %d", got, 3*zarrPerStep+2)
	}
	if err := zarrEdit(dir, 7, 5); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for name, b := range snapshot(t, arr) {
		if !bytes.Equal(before[name], b) {
			changed++
		}
	}
	if changed != 5 {
		t.Fatalf("-edit 5 changed %d files", changed)
	}
	if err := zarrAppend(dir, 1, 1); err != nil {
		t.Fatal(err)
	}
	z, err := readZarray(arr)
	if err != nil || z.Shape[0] != 4 || len(snapshot(t, arr)) != 4*zarrPerStep+2 {
		t.Fatalf("after -append 1: %+v, %v, %d files", z, err, len(snapshot(t, arr)))
	}
	last, err := readChunk(arr, 3, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := zarrRechunk(dir); err != nil {
		t.Fatal(err)
	}
	z, err = readZarray(arr)
	if err != nil || z.Chunks[0] != 2 || len(snapshot(t, arr)) != 2*zarrPerStep+2 {
		t.Fatalf("after -rechunk: %+v, %v, %d files", z, err, len(snapshot(t, arr)))
	}
	pair, err := readChunk(arr, 1, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range last {
		if w := pair[len(last)+k]; w != v && !(math.IsNaN(float64(v)) && math.IsNaN(float64(w))) {
			t.Fatalf("re-chunked value %d: %v, want %v", k, w, v)
		}
	}
}
