package georef

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/formats/zarr/codec"
)

// dirSource reads the arrays of a Zarr v2 group directory, decoding 1-D
// coordinate arrays with package codec: what a caller of Locate does.
type dirSource struct{ dir string }

func (s dirSource) Attrs(name string) (map[string]json.RawMessage, bool, error) {
	if _, err := os.Stat(filepath.Join(s.dir, name, ".zarray")); err != nil {
		return nil, false, nil
	}
	attrs := map[string]json.RawMessage{}
	b, err := os.ReadFile(filepath.Join(s.dir, name, ".zattrs"))
	if errors.Is(err, fs.ErrNotExist) {
		return attrs, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return attrs, true, json.Unmarshal(b, &attrs)
}

func (s dirSource) Coord(name string) ([]float64, bool, error) {
	dir := filepath.Join(s.dir, name)
	b, err := os.ReadFile(filepath.Join(dir, ".zarray"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var z struct {
		Shape      []int           `json:"shape"`
		Chunks     []int           `json:"chunks"`
		Compressor json.RawMessage `json:"compressor"`
		Filters    json.RawMessage `json:"filters"`
		DType      json.RawMessage `json:"dtype"`
		Order      string          `json:"order"`
		Fill       json.RawMessage `json:"fill_value"`
	}
	if err := json.Unmarshal(b, &z); err != nil {
		return nil, false, err
	}
	if len(z.Shape) != 1 {
		return nil, false, fmt.Errorf("%s is %d-D", name, len(z.Shape))
	}
	p, err := codec.NewV2(z.Compressor, z.Filters, z.DType, z.Order, z.Chunks)
	if err != nil {
		return nil, false, err
	}
	var out []float64
	for i := 0; len(out) < z.Shape[0]; i++ {
		stored, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(i)))
		if errors.Is(err, fs.ErrNotExist) { // a missing chunk is all fill value
			fill := math.NaN() // also what "NaN" and null say
			_ = json.Unmarshal(z.Fill, &fill)
			for range z.Chunks[0] {
				out = append(out, fill)
			}
			continue
		}
		if err != nil {
			return nil, false, err
		}
		raw, err := p.Decode(stored)
		if err != nil {
			return nil, false, fmt.Errorf("%s/%d: %w", name, i, err)
		}
		v, err := raw.Float64()
		if err != nil {
			return nil, false, err
		}
		out = append(out, v...)
	}
	return out[:z.Shape[0]], true, nil
}

// locateDir runs Locate on the v2 array name of the group in dir.
func locateDir(t *testing.T, dir, name string) (*Grid, Array, error) {
	t.Helper()
	var z struct {
		Shape  []int `json:"shape"`
		Chunks []int `json:"chunks"`
	}
	b, err := os.ReadFile(filepath.Join(dir, name, ".zarray"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &z); err != nil {
		t.Fatal(err)
	}
	src := dirSource{dir}
	attrs, _, err := src.Attrs(name)
	if err != nil {
		t.Fatal(err)
	}
	a := Array{Shape: z.Shape, ChunkShape: z.Chunks, Attrs: attrs}
	g, err := Locate(a, src)
	return g, a, err
}

// near compares boxes to a relative 1e-9.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
