package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestBloscMatrix decodes chunks numcodecs' Blosc wrote with every
// internal codec, shuffle, typesize and size, and compares them with the
// bytes it was given.
func TestBloscMatrix(t *testing.T) {
	dir := t.TempDir()
	runPython(t, "blosc_matrix.py", dir)
	var m struct {
		Cases  []string `json:"cases"`
		CNames []string `json:"cnames"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.CNames) < 5 {
		t.Fatalf("numcodecs offers %v; want blosclz, lz4, lz4hc, zlib, zstd at least", m.CNames)
	}
	seen := map[string]int{}
	memcpyed := 0
	for _, name := range m.Cases {
		enc, err := os.ReadFile(filepath.Join(dir, name+".enc"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, name+".raw"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeBlosc(enc, MaxDecoded)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, raw) {
			t.Errorf("%s: decoded %d bytes differ from the %d written (first at %d)", name, len(got), len(raw), firstDiff(got, raw))
			continue
		}
		h, _ := ParseBloscHeader(enc)
		if h.Flags&bloscMemcpyed != 0 {
			memcpyed++
			continue
		}
		key := strings.Join(strings.Split(name, "-")[:2], "-")
		if h.Flags&bloscNoSplit == 0 && h.TypeSize > 1 {
			key += "-split"
		}
		seen[key]++
	}
	keys := make([]string, 0, len(seen))
	for k, n := range seen {
		keys = append(keys, fmt.Sprintf("%s:%d", k, n))
	}
	sort.Strings(keys)
	t.Logf("%d chunks decoded (%d memcpyed); compressed ones per codec-shuffle: %v", len(m.Cases), memcpyed, keys)
	// Every codec x shuffle pair must have compressed chunks, not only
	// memcpyed ones, and blosclz and snappy must have split blocks.
	for _, c := range m.CNames {
		for s := range 3 {
			if seen[fmt.Sprintf("%s-s%d", c, s)]+seen[fmt.Sprintf("%s-s%d-split", c, s)] == 0 {
				t.Errorf("no compressed chunk of %s with shuffle %d", c, s)
			}
		}
	}
	for _, k := range []string{"blosclz-s1-split", "snappy-s2-split"} {
		if seen[k] == 0 {
			t.Errorf("no chunk for %s", k)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkBloscUnshuffle reads an 8 MiB chunk of raw streams: the
// reader and the byte and bit unshuffles, without a codec. MB/s are
// decoded bytes.
func BenchmarkBloscUnshuffle(b *testing.B) {
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 2654435761 >> 13)
	}
	for _, s := range []struct {
		name string
		flag byte
	}{{"byte", bloscShuffle}, {"bit", bloscBitShuffle}} {
		chunk := bloscRaw(data, 8, 256<<10, s.flag)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := DecodeBlosc(chunk, MaxDecoded); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
