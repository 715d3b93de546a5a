package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// The spatial grid of the generated array: 25 × 40 chunks of 16² cells
// per time step (1,000 chunk files a step), so -chunks N gives N/1000
// time steps: a 400 × 640 grid of 2 m temperature, hourly.
const (
	zarrRows, zarrCols = 25, 40
	zarrSide           = 16
	zarrPerStep        = zarrRows * zarrCols
)

// zarray is the part of a v2 .zarray the generator reads back (-append,
// -rechunk); the rest is written as is.
type zarray struct {
	Shape  []int `json:"shape"`
	Chunks []int `json:"chunks"`
}

func zarrMain(args []string) {
	fs := flag.NewFlagSet("zarr", flag.ExitOnError)
	dir := fs.String("dir", "", "the store to write (required)")
	chunks := fs.Int("chunks", 100000, "chunk files of a new store (rounded up to whole time steps of 1,000)")
	seed := fs.Uint64("seed", 1, "seed")
	edit := fs.Int("edit", 0, "rewrite this many chunk files of the existing store")
	appendT := fs.Int("append", 0, "append this many time steps to the existing store")
	rechunk := fs.Bool("rechunk", false, "rewrite the existing array with 2×16×16 chunks")
	_ = fs.Parse(args) // ExitOnError: exits on a bad flag
	if *dir == "" || *chunks <= 0 || *edit < 0 || *appendT < 0 {
		fmt.Fprintln(os.Stderr, "bench zarr: -dir is required, -chunks must be > 0")
		os.Exit(2)
	}
	var err error
	switch {
	case *edit > 0:
		err = zarrEdit(*dir, *seed, *edit)
	case *appendT > 0:
		err = zarrAppend(*dir, *seed, *appendT)
	case *rechunk:
		err = zarrRechunk(*dir)
	default:
		err = zarrNew(*dir, *seed, (*chunks+zarrPerStep-1)/zarrPerStep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench zarr:", err)
		os.Exit(1)
	}
}

// zarrNew writes a v2 group holding one array t2m of steps time steps.
func zarrNew(dir string, seed uint64, steps int) error {
	arr := filepath.Join(dir, "t2m")
	if err := os.MkdirAll(arr, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ".zgroup"), []byte("{\n    \"zarr_format\": 2\n}"), 0o644); err != nil {
		return err
	}
	attrs := `{"_ARRAY_DIMENSIONS": ["time", "lat", "lon"], "units": "K", "long_name": "2 metre temperature"}`
	if err := os.WriteFile(filepath.Join(arr, ".zattrs"), []byte(attrs), 0o644); err != nil {
		return err
	}
	if err := writeZarray(arr, steps, 1); err != nil {
		return err
	}
	return writeSteps(arr, seed, 0, steps)
}

func writeZarray(arr string, steps, tchunk int) error {
	meta := map[string]any{
		"zarr_format": 2, "dtype": "<f4", "order": "C", "fill_value": "NaN", "filters": nil,
		"compressor": map[string]any{"id": "zlib", "level": 6},
		"shape":      []int{steps, zarrRows * zarrSide, zarrCols * zarrSide},
		"chunks":     []int{tchunk, zarrSide, zarrSide},
	}
	b, err := json.MarshalIndent(meta, "", "    ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(arr, ".zarray"), b, 0o644); err != nil {
		return fmt.Errorf("write %s/.zarray: %w", arr, err)
	}
	return nil
}

func readZarray(arr string) (zarray, error) {
	var z zarray
	b, err := os.ReadFile(filepath.Join(arr, ".zarray"))
	if err != nil {
		return z, err
	}
	if err := json.Unmarshal(b, &z); err != nil || len(z.Shape) != 3 || len(z.Chunks) != 3 {
		return z, fmt.Errorf("%s/.zarray: not a 3-d array written by bench zarr (%v)", arr, err)
	}
	return z, nil
}

// writeSteps writes the chunk files of time steps from..to-1.
func writeSteps(arr string, seed uint64, from, to int) error {
	var cw chunkWriter
	for t := from; t < to; t++ {
		for i := range zarrRows {
			for j := range zarrCols {
				if err := cw.write(arr, cellValues(seed, 0, t, i, j), t, i, j); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cellValues is one 16² chunk of time step t: a smooth field (latitude
// gradient, a daily cycle, a wave) plus seeded noise, rounded to 1/64 K
// as packed model output is, so that zlib finds something to squeeze.
// salt > 0 gives an edited version of the chunk.
func cellValues(seed, salt uint64, t, i, j int) []float32 {
	rng := rand.New(rand.NewPCG(seed^salt<<32, uint64((t*zarrRows+i)*zarrCols+j)))
	v := make([]float32, zarrSide*zarrSide)
	for y := range zarrSide {
		for x := range zarrSide {
			lat, lon := float64(i*zarrSide+y), float64(j*zarrSide+x)
			f := 300 - lat/10 + 5*math.Sin(2*math.Pi*float64(t)/24+lon/100) + 2*math.Sin(lat/17+lon/23) + rng.NormFloat64()*0.7
			if salt > 0 {
				f += 3
			}
			v[y*zarrSide+x] = float32(math.Round(f*64) / 64)
		}
	}
	return v
}

// chunkWriter compresses chunk files with one zlib.Writer: a new one
// per chunk allocates more than the chunk's whole work.
type chunkWriter struct {
	raw, z bytes.Buffer
	zw     *zlib.Writer
}

func (c *chunkWriter) write(arr string, v []float32, key ...int) error {
	c.raw.Reset()
	c.z.Reset()
	if c.zw == nil {
		c.zw = zlib.NewWriter(&c.z)
	} else {
		c.zw.Reset(&c.z)
	}
	_ = binary.Write(&c.raw, binary.LittleEndian, v) // a bytes.Buffer never fails
	_, _ = c.zw.Write(c.raw.Bytes())
	_ = c.zw.Close()
	name := filepath.Join(arr, fmt.Sprintf("%d.%d.%d", key[0], key[1], key[2]))
	if err := os.WriteFile(name, c.z.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write chunk %s: %w", name, err)
	}
	return nil
}

func readChunk(arr string, key ...int) ([]float32, error) {
	name := filepath.Join(arr, fmt.Sprintf("%d.%d.%d", key[0], key[1], key[2]))
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := zlib.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", name, err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", name, err)
	}
	v := make([]float32, len(raw)/4)
	_ = binary.Read(bytes.NewReader(raw), binary.LittleEndian, v) // sized to raw
	return v, nil
}

// zarrEdit rewrites edit chunk files spread over the array (1×16×16
// chunks), with values that differ from every earlier version's.
func zarrEdit(dir string, seed uint64, edit int) error {
	arr := filepath.Join(dir, "t2m")
	z, err := readZarray(arr)
	if err != nil {
		return err
	}
	if z.Chunks[0] != 1 {
		return errors.New("-edit needs 1×16×16 chunks")
	}
	var cw chunkWriter
	total := z.Shape[0] * zarrPerStep
	n := min(edit, total)
	for k := range n {
		c := k*total/n + int(seed)%max(total/n, 1) // another chunk for each seed
		t, i, j := c/zarrPerStep, c%zarrPerStep/zarrCols, c%zarrCols
		if err := cw.write(arr, cellValues(seed, seed+1, t, i, j), t, i, j); err != nil {
			return err
		}
	}
	return nil
}

// zarrAppend adds steps time steps: new chunk files, and the new shape.
func zarrAppend(dir string, seed uint64, steps int) error {
	arr := filepath.Join(dir, "t2m")
	z, err := readZarray(arr)
	if err != nil {
		return err
	}
	if z.Chunks[0] != 1 {
		return errors.New("-append needs 1×16×16 chunks")
	}
	if err := writeSteps(arr, seed, z.Shape[0], z.Shape[0]+steps); err != nil {
		return err
	}
	return writeZarray(arr, z.Shape[0]+steps, 1)
}

// zarrRechunk rewrites t2m with 2×16×16 chunks holding the same values
// (an odd last step padded with the fill value), as a re-chunking tool
// writes a new array and replaces the old one.
func zarrRechunk(dir string) error {
	arr := filepath.Join(dir, "t2m")
	z, err := readZarray(arr)
	if err != nil {
		return err
	}
	if z.Chunks[0] != 1 {
		return errors.New("-rechunk needs 1×16×16 chunks")
	}
	tmp := arr + ".rechunk"
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	var cw chunkWriter
	nan := make([]float32, zarrSide*zarrSide)
	for k := range nan {
		nan[k] = float32(math.NaN())
	}
	for t := 0; t < z.Shape[0]; t += 2 {
		for i := range zarrRows {
			for j := range zarrCols {
				a, err := readChunk(arr, t, i, j)
				if err != nil {
					return err
				}
				b := nan
				if t+1 < z.Shape[0] {
					if b, err = readChunk(arr, t+1, i, j); err != nil {
						return err
					}
				}
				if err := cw.write(tmp, append(a, b...), t/2, i, j); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range []string{".zattrs"} {
		if err := os.Rename(filepath.Join(arr, f), filepath.Join(tmp, f)); err != nil {
			return err
		}
	}
	if err := writeZarray(tmp, z.Shape[0], 2); err != nil {
		return err
	}
	if err := os.RemoveAll(arr); err != nil {
		return err
	}
	return os.Rename(tmp, arr)
}
