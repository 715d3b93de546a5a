package parquet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/pierrec/lz4/v4"

	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// LZ4_RAW pages parquet-go writes decode to the values written. They are
// checked against the values, not parquet-go's reader: v0.32 misreads its
// own LZ4_RAW pages (it reports truncated values on every one of them).
func TestPagesLZ4Raw(t *testing.T) {
	vals := values(3000, 11)
	for _, version := range []int{1, 2} {
		for _, name := range []string{"plain", "optional-dict", "optional-delta"} {
			var data []byte
			opts := []pq.WriterOption{pq.Compression(&pq.Lz4Raw), pq.DataPageVersion(version), pq.PageBufferSize(2048)}
			var want [][]byte
			switch name {
			case "plain":
				data = writeRows(t, mapRows(vals, func(v []byte) plainCol { return plainCol{append([]byte{}, v...)} }), opts...)
				for _, v := range vals {
					want = append(want, append([]byte{}, v...))
				}
			case "optional-dict":
				data = writeRows(t, mapRows(vals, func(v []byte) optionalDictCol { return optionalDictCol{v} }), opts...)
			case "optional-delta":
				data = writeRows(t, mapRows(vals, func(v []byte) optionalDeltaCol { return optionalDeltaCol{v} }), opts...)
			}
			if want == nil {
				for _, v := range vals {
					if v != nil {
						want = append(want, v)
					}
				}
			}
			t.Run(fmt.Sprintf("%s/v%d", name, version), func(t *testing.T) {
				got := decodeAll(t, data, 7)
				if len(got) != len(want) {
					t.Fatalf("%d values, wrote %d", len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("value %d differs", i)
					}
				}
			})
		}
	}
}

// decodeAll decodes the first column of every row group of data, which
// must be compressed with codec.
func decodeAll(t *testing.T, data []byte, codec int32) [][]byte {
	t.Helper()
	foot, _, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeFooter(foot)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, rg := range m.rowGroups {
		c := &rg.cols[0]
		if c.codec != codec {
			t.Fatalf("codec %s, want %s", codecName(c.codec), codecName(codec))
		}
		_, lv, _ := topByteArray(m, c)
		start := c.dataPage
		if c.dictPage > 0 && c.dictPage < start {
			start = c.dictPage
		}
		err := byteArrays(data[start:start+c.totalCompressed], c.codec, lv, func(v []byte) error {
			out = append(out, bytes.Clone(v))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The old LZ4 codec (5) comes in Hadoop's framing (parquet-mr) or as a
// bare block (older Arrow): both decode, as Arrow reads them; a frame
// that claims more than the page is an error, never a larger buffer.
func TestDecompressLZ4(t *testing.T) {
	page := bytes.Repeat([]byte("geometry-bytes-"), 400)
	block := make([]byte, lz4.CompressBlockBound(len(page)))
	k, err := lz4.CompressBlock(page, block, nil)
	if err != nil || k == 0 {
		t.Fatalf("compress: %d, %v", k, err)
	}
	block = block[:k]
	half := len(page) / 2
	b1 := make([]byte, lz4.CompressBlockBound(half))
	k1, _ := lz4.CompressBlock(page[:half], b1, nil)
	b2 := make([]byte, lz4.CompressBlockBound(len(page)-half))
	k2, _ := lz4.CompressBlock(page[half:], b2, nil)
	frame := func(parts ...[]byte) []byte {
		var out []byte
		for i := 0; i < len(parts); i += 2 {
			out = binary.BigEndian.AppendUint32(out, uint32(len(parts[i])))
			out = binary.BigEndian.AppendUint32(out, uint32(len(parts[i+1])))
			out = append(out, parts[i+1]...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		codec int32
		src   []byte
	}{
		{"lz4 bare block", 5, block},
		{"lz4 hadoop one block", 5, frame(page, block)},
		{"lz4 hadoop two blocks", 5, frame(page[:half], b1[:k1], page[half:], b2[:k2])},
		{"lz4_raw", 7, block},
	} {
		got, err := decompress(tc.codec, tc.src, int32(len(page)))
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("%s: %d bytes, %v", tc.name, len(got), err)
		}
	}
	if _, err := decompress(5, block, int32(len(page)-1)); err == nil {
		t.Error("a block longer than the page header says decoded")
	}
	if _, err := decompress(5, frame(append(page, page...), block), int32(len(page))); err == nil {
		t.Error("a frame claiming more than the page decoded")
	}
}

// TestCorpusLZ4 reads the corpus files in the old LZ4 codec, which
// parquet-go does not read, against the values parquet-testing documents
// for them (its data/README.md): column c1 is "abc", "def", "abc", "def".
func TestCorpusLZ4(t *testing.T) {
	found := 0
	for _, f := range corpusParquet(t) {
		if !strings.Contains(f.Name, "lz4") || strings.Contains(f.Name, "lz4_raw") {
			continue
		}
		foot, _, err := readFooter(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		m, err := decodeFooter(foot)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		for _, rg := range m.rowGroups {
			for j := range rg.cols {
				c := &rg.cols[j]
				if !c.samePath([]string{"c1"}) || c.codec != 5 {
					continue
				}
				start := c.dataPage
				if c.dictPage > 0 && c.dictPage < start {
					start = c.dictPage
				}
				var got []string
				err := byteArrays(f.Data[start:start+c.totalCompressed], c.codec, levelInfo{maxDef: 1}, func(v []byte) error {
					got = append(got, string(v))
					return nil
				})
				if err != nil || strings.Join(got, ",") != "abc,def,abc,def" {
					t.Errorf("%s: c1 %q, %v", f.Name, got, err)
				}
				found++
			}
		}
	}
	if found == 0 {
		t.Fatal("no LZ4 (codec 5) column c1 in the corpus")
	}
}

// An LZO geometry column (no decoder: see decompress) stays native, its
// row groups carry the file bbox, and the summary says why.
func TestLZOFootprintFallback(t *testing.T) {
	c := pqgen.Config{Rows: 900, RowGroups: 3, Seed: 4, NoCovering: true, Codec: "snappy"}
	data := relabelLZO(t, genFile(t, c))
	if _, err := openPQ(data); err != nil {
		t.Fatal(err)
	}
	l := layoutWith(t, Adapter{Footprints: NewFootprintCache(8)}, data)
	why := summaryValue(l, "footprint_fallback")
	if !strings.HasPrefix(why, "3 of 3 row groups: rg0: ") || !strings.Contains(why, "codec LZO") {
		t.Errorf("footprint_fallback %q", why)
	}
	if summaryValue(layoutWith(t, Adapter{}, genFile(t, c)), "footprint_fallback") != "" {
		t.Error("an uncompressed file reports a fallback")
	}
}
