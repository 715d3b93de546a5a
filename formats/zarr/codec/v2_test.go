package codec

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zarray is the part of a .zarray the tests read.
type zarray struct {
	Chunks     []int           `json:"chunks"`
	Compressor json.RawMessage `json:"compressor"`
	Filters    json.RawMessage `json:"filters"`
	DType      json.RawMessage `json:"dtype"`
	Order      string          `json:"order"`
}

// openV2 builds the pipeline of the v2 array stored in dir.
func openV2(t *testing.T, dir string) (*Pipeline, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".zarray"))
	if err != nil {
		t.Fatal(err)
	}
	var z zarray
	if err := json.Unmarshal(b, &z); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return NewV2(z.Compressor, z.Filters, z.DType, z.Order, z.Chunks)
}

// chunkKeys lists the chunk files of a v2 store directory.
func chunkKeys(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
			keys = append(keys, e.Name())
		}
	}
	return keys
}

// sameFloats compares decoded values with little-endian float64 bytes.
func sameFloats(t *testing.T, what string, got []float64, want []byte) {
	t.Helper()
	if len(got)*8 != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want)/8)
		return
	}
	for i, g := range got {
		w := math.Float64frombits(binary.LittleEndian.Uint64(want[8*i:]))
		if g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
			t.Errorf("%s: value %d is %v, want %v", what, i, g, w)
			return
		}
	}
}

// TestV2Arrays decodes every chunk of Zarr v2 arrays zarr-python wrote
// with each compressor, filters, dtype and order, and compares the values
// with what zarr-python decodes the same chunk to.
func TestV2Arrays(t *testing.T) {
	dir := t.TempDir()
	runPython(t, "v2_arrays.py", dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	arrays, chunks := 0, 0
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".expect") {
			continue
		}
		store := filepath.Join(dir, name)
		p, err := openV2(t, store)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, key := range chunkKeys(t, store) {
			stored, err := os.ReadFile(filepath.Join(store, key))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(store+".expect", key))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := p.Decode(stored)
			if err != nil {
				t.Errorf("%s/%s: %v", name, key, err)
				continue
			}
			got, err := raw.Float64()
			if err != nil {
				t.Errorf("%s/%s: %v", name, key, err)
				continue
			}
			sameFloats(t, name+"/"+key, got, want)
			chunks++
		}
		arrays++
	}
	t.Logf("%d arrays, %d chunks decoded", arrays, chunks)
	if arrays < 150 || chunks < 150*9 {
		t.Errorf("%d arrays and %d chunks decoded; the script writes over 180 arrays of 9 chunks", arrays, chunks)
	}
}
