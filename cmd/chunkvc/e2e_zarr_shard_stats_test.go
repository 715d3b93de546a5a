package main

import (
	"bytes"
	"compress/gzip"
	bin "encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
)

// shardedArray is a 2-D Zarr v3 array held in memory and written in
// shards by the sharding_indexed spec: the test computes the expected
// statistics from these values, not from anything chunkvc decodes.
type shardedArray struct {
	name    string
	h, w    int
	v       []float64 // row-major, h×w
	fill    float64
	dtype   string // float32 or int16
	big     bool   // inner chunks big-endian
	gzip    bool   // inner chunks gzip-compressed
	atStart bool   // shard index first, without a crc32c (else last, with one)
	shard   [2]int // shard shape
	inner   [2]int // inner chunk shape
}

func (a *shardedArray) clone() *shardedArray {
	c := *a
	c.v = append([]float64(nil), a.v...)
	return &c
}

func (a *shardedArray) at(y, x int) float64 {
	if y >= a.h || x >= a.w {
		return a.fill // outside the array: what a writer pads with
	}
	return a.v[y*a.w+x]
}

func (a *shardedArray) metadata() string {
	fill := fmt.Sprint(a.fill)
	if math.IsNaN(a.fill) {
		fill = `"NaN"`
	}
	endian := "little"
	if a.big {
		endian = "big"
	}
	codecs := fmt.Sprintf(`{"name": "bytes", "configuration": {"endian": %q}}`, endian)
	if a.gzip {
		codecs += `, {"name": "gzip", "configuration": {"level": 5}}`
	}
	index, loc := `{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}`, "end"
	if a.atStart {
		index, loc = `{"name": "bytes", "configuration": {"endian": "little"}}`, "start"
	}
	return fmt.Sprintf(`{"zarr_format": 3, "node_type": "array", "shape": [%d, %d], "data_type": %q,
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [%d, %d]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": %s,
 "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [%d, %d],
   "codecs": [%s], "index_codecs": [%s], "index_location": %q}}]}`,
		a.h, a.w, a.dtype, a.shard[0], a.shard[1], fill, a.inner[0], a.inner[1], codecs, index, loc)
}

// innerChunk encodes inner chunk (gy, gx) of the global inner grid, or
// returns nil when all its elements are the fill value (stored as empty).
func (a *shardedArray) innerChunk(t *testing.T, gy, gx int) []byte {
	var order bin.AppendByteOrder = bin.LittleEndian
	if a.big {
		order = bin.BigEndian
	}
	var raw []byte
	allFill := true
	for y := gy * a.inner[0]; y < (gy+1)*a.inner[0]; y++ {
		for x := gx * a.inner[1]; x < (gx+1)*a.inner[1]; x++ {
			v := a.at(y, x)
			allFill = allFill && (v == a.fill || math.IsNaN(v) && math.IsNaN(a.fill))
			if a.dtype == "float32" {
				raw = order.AppendUint32(raw, math.Float32bits(float32(v)))
			} else {
				raw = order.AppendUint16(raw, uint16(int16(v)))
			}
		}
	}
	if allFill {
		return nil
	}
	if !a.gzip {
		return raw
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, 5)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// write writes the array's metadata and shard files under store, leaving
// out a shard whose inner chunks are all empty and removing any older
// file of it.
func (a *shardedArray) write(t *testing.T, store string) {
	t.Helper()
	put := func(p string, b []byte) {
		full := filepath.Join(store, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("zarr.json", []byte(`{"zarr_format": 3, "node_type": "group", "attributes": {}}`))
	put(a.name+"/zarr.json", []byte(a.metadata()))
	per := [2]int{a.shard[0] / a.inner[0], a.shard[1] / a.inner[1]}
	for sy := 0; sy*a.shard[0] < a.h; sy++ {
		for sx := 0; sx*a.shard[1] < a.w; sx++ {
			entries := per[0] * per[1]
			indexLen := 16 * entries
			if !a.atStart {
				indexLen += 4
			}
			base := 0
			if a.atStart {
				base = indexLen
			}
			var body, index []byte
			for e := range entries {
				c := a.innerChunk(t, sy*per[0]+e/per[1], sx*per[1]+e%per[1])
				if c == nil {
					index = bin.LittleEndian.AppendUint64(index, math.MaxUint64)
					index = bin.LittleEndian.AppendUint64(index, math.MaxUint64)
					continue
				}
				index = bin.LittleEndian.AppendUint64(index, uint64(base+len(body)))
				index = bin.LittleEndian.AppendUint64(index, uint64(len(c)))
				body = append(body, c...)
			}
			p := fmt.Sprintf("%s/c/%d/%d", a.name, sy, sx)
			if len(body) == 0 {
				if err := os.Remove(filepath.Join(store, filepath.FromSlash(p))); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				continue
			}
			if a.atStart {
				put(p, append(index, body...))
				continue
			}
			index = bin.LittleEndian.AppendUint32(index, crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)))
			put(p, append(body, index...))
		}
	}
}

// expectedInner measures old → cur per inner chunk, straight from the
// values, as numpy would over the chunk's slice of the array (clipped to
// its shape): the changed chunks by key.
func expectedInner(old, cur *shardedArray) map[string]diff.ZarrChunkStats {
	out := map[string]diff.ZarrChunkStats{}
	ih, iw := cur.inner[0], cur.inner[1]
	for gy := 0; gy*ih < cur.h; gy++ {
		for gx := 0; gx*iw < cur.w; gx++ {
			c := diff.ZarrChunkStats{Key: fmt.Sprintf("%s/c/%d/%d", cur.name, gy, gx)}
			var sum float64
			c.Min, c.Max = math.Inf(1), math.Inf(-1)
			for y := gy * ih; y < min(cur.h, (gy+1)*ih); y++ {
				for x := gx * iw; x < min(cur.w, (gx+1)*iw); x++ {
					c.Elements++
					o, v := old.at(y, x), cur.at(y, x)
					if o == v || math.IsNaN(o) && math.IsNaN(v) {
						continue
					}
					c.Changed++
					if d := v - o; !math.IsNaN(d) {
						c.Numeric++
						sum += d
						c.Min, c.Max = min(c.Min, d), max(c.Max, d)
					}
				}
			}
			if c.Changed == 0 {
				continue
			}
			if c.Numeric == 0 {
				c.Min, c.Max = 0, 0
			} else {
				c.Mean = sum / float64(c.Numeric)
			}
			out[c.Key] = c
		}
	}
	return out
}

// diff --stats of a Zarr v3 store with sharded arrays measures each
// changed inner chunk (a chunk of its own in chunkvc) exactly as the
// values written give: float32 with gzip and a NaN fill, index last with
// a crc32c; big-endian int16 with the index first; edge chunks clipped
// to the shape; an empty inner chunk written (added), one made all fill
// (removed, empty in its shard), a shard file that appears, a NaN turned
// into a number, an inner chunk over 16 MiB that chunkvc keeps in pieces;
// in the work tree and between commits.
func TestDiffStatsZarrSharded(t *testing.T) {
	r := newRunner(t)
	r.git("init", "-q")
	r.cv("init")
	store := r.path("cube.zarr")
	h := &shardedArray{name: "h", h: 9, w: 11, fill: math.NaN(), dtype: "float32", gzip: true,
		shard: [2]int{4, 8}, inner: [2]int{2, 4}}
	n := &shardedArray{name: "n", h: 9, w: 11, fill: 0, dtype: "int16", big: true, atStart: true,
		shard: [2]int{4, 8}, inner: [2]int{2, 4}}
	for y := range 9 {
		for x := range 11 {
			h.v = append(h.v, float64(y*11+x)/4+1)
			n.v = append(n.v, float64((y*37+x*101)%2000-1000))
		}
	}
	for y := 4; y < 6; y++ { // h's inner chunk (2, 2) all fill: stored empty
		for x := 8; x < 11; x++ {
			h.v[y*11+x] = math.NaN()
		}
	}
	h.v[3*11+5] = math.NaN()
	for y := range 9 { // n's shard (0..3, 8..10) all fill: no shard file
		for x := 8; x < 11; x++ {
			if y < 4 {
				n.v[y*11+x] = 0
			}
		}
	}
	// One inner chunk of 2048×2100 float32, over formats.MaxChunk (16
	// MiB), which chunkvc cuts into pieces.
	big := &shardedArray{name: "big", h: 2048, w: 2100, fill: 0, dtype: "float32",
		shard: [2]int{2048, 2100}, inner: [2]int{2048, 2100}}
	big.v = make([]float64, big.h*big.w)
	for i := range big.v {
		big.v[i] = float64(i%1000) + 0.5
	}
	h.write(t, store)
	n.write(t, store)
	big.write(t, store)
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "cube")

	h2, n2 := h.clone(), n.clone()
	h2.v[1*11+2] += 2.5      // inner (0, 0)
	h2.v[0] = -1.25          // inner (0, 0)
	h2.v[3*11+5] = 4         // inner (1, 1): NaN → 4
	h2.v[4*11+9] = 7.5       // inner (2, 2): was empty, added
	h2.v[8*11+10] = -3       // inner (4, 2): the corner, clipped to 1×3
	for y := 6; y < 8; y++ { // inner (3, 0) all fill: removed
		for x := range 4 {
			h2.v[y*11+x] = math.NaN()
		}
	}
	n2.v[2*11+3] -= 250 // inner (1, 0)
	n2.v[1*11+9] = 17   // inner (0, 2): its shard file appears
	n2.v[8*11+0] = 1000 // inner (4, 0), clipped to 1×4
	big2 := big.clone()
	big2.v[1500*2100+2000] = -7.25 // in the second piece
	h2.write(t, store)
	n2.write(t, store)
	big2.write(t, store)
	want := expectedInner(h, h2)
	for _, e := range []map[string]diff.ZarrChunkStats{expectedInner(n, n2), expectedInner(big, big2)} {
		for k, v := range e {
			want[k] = v
		}
	}
	if len(want) != 9 {
		t.Fatalf("fixture: %d inner chunks changed, want 9: %v", len(want), want)
	}
	if w := zarrStatsOf(t, r, "work tree", want); len(w) != 0 {
		t.Errorf("work tree: warnings %q", w)
	}
	r.cv("commit", "-q", "-m", "edit")
	if w := zarrStatsOf(t, r, "HEAD~1..HEAD", want, "HEAD~1", "HEAD"); len(w) != 0 {
		t.Errorf("HEAD~1..HEAD: warnings %q", w)
	}
}
