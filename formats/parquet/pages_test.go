package parquet

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
)

// The page decoder (pages.go, delta.go) against parquet-go's reader, which
// it replaced in the binary: on files parquet-go writes in every page
// version, value encoding and codec the decoder takes, and on the corpus,
// both must give the same values, in the same order, for every BYTE_ARRAY
// column right under the root.

type plainCol struct {
	Geometry []byte `parquet:"geometry,plain"`
}
type defaultCol struct {
	Geometry []byte `parquet:"geometry"`
}
type dictCol struct {
	Geometry []byte `parquet:"geometry,dict"`
}
type deltaCol struct {
	Geometry []byte `parquet:"geometry,delta"`
}
type optionalCol struct {
	Geometry []byte `parquet:"geometry,optional"`
}
type optionalDictCol struct {
	Geometry []byte `parquet:"geometry,optional,dict"`
}
type optionalDeltaCol struct {
	Geometry []byte `parquet:"geometry,optional,delta"`
}
type repeatedCol struct {
	Geometry [][]byte `parquet:"geometry"`
}

// values makes n byte arrays: some repeated (for dictionaries), some
// sharing prefixes (for DELTA_BYTE_ARRAY), some empty, every tenth nil.
func values(n int, seed int64) [][]byte {
	rng := rand.New(rand.NewSource(seed))
	out := make([][]byte, n)
	for i := range out {
		switch {
		case i%10 == 9:
			out[i] = nil
		case i%7 == 3:
			out[i] = []byte{}
		case i%3 == 0:
			out[i] = fmt.Appendf(nil, "shared-%d", rng.Intn(5))
		default:
			b := fmt.Appendf(nil, "point-%06d-", i)
			for range rng.Intn(40) {
				b = append(b, byte(rng.Intn(256)))
			}
			out[i] = b
		}
	}
	return out
}

func writeRows[T any](t testing.TB, rows []T, opts ...pq.WriterOption) []byte {
	t.Helper()
	var b bytes.Buffer
	w := pq.NewGenericWriter[T](&b, opts...)
	for i := 0; i < len(rows); i += 700 { // several row groups
		if _, err := w.Write(rows[i:min(i+700, len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// compareColumns checks every top-level BYTE_ARRAY column chunk of data
// and returns how many it compared.
func compareColumns(t *testing.T, name string, data []byte) (compared, skipped int) {
	t.Helper()
	foot, _, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	m, err := decodeFooter(foot)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, 1 // not a file parquet-go reads: nothing to compare with
	}
	for i, rg := range m.rowGroups {
		for j := range rg.cols {
			c := &rg.cols[j]
			colName, lv, ok := topByteArray(m, c)
			if !ok {
				continue
			}
			start := c.dataPage
			if c.dictPage > 0 && c.dictPage < c.dataPage {
				start = c.dictPage
			}
			if c.totalCompressed <= 0 || start < 4 || start+c.totalCompressed > int64(len(data)) {
				skipped++
				continue
			}
			chunk := data[start : start+c.totalCompressed]
			var mine [][]byte
			err := byteArrays(chunk, c.codec, lv, func(v []byte) error {
				mine = append(mine, bytes.Clone(v))
				return nil
			})
			if errors.Is(err, errNotDecoded) {
				// Outside the decode limits or codecs: never decoded,
				// by either reader, for a footprint.
				skipped++
				continue
			}
			theirs, perr := pqValues(f, i, j)
			switch {
			case perr != nil && err != nil:
				skipped++
				continue
			case err != nil:
				t.Errorf("%s: row group %d column %s: %v (parquet-go read %d values)", name, i, colName, err, len(theirs))
				continue
			case perr != nil && strings.Contains(perr.Error(), "unsupported compression codec"):
				// The old LZ4 codec: parquet-go has no reader for it;
				// TestCorpusLZ4 checks those values instead.
				skipped++
				continue
			case perr != nil:
				t.Errorf("%s: row group %d column %s: parquet-go failed (%v) where the decoder read %d values", name, i, colName, perr, len(mine))
				continue
			}
			if len(mine) != len(theirs) {
				t.Errorf("%s: row group %d column %s: %d values, parquet-go %d", name, i, colName, len(mine), len(theirs))
				continue
			}
			for k := range mine {
				if !bytes.Equal(mine[k], theirs[k]) {
					t.Errorf("%s: row group %d column %s: value %d differs", name, i, colName, k)
					break
				}
			}
			compared++
		}
	}
	return compared, skipped
}

// topByteArray reports whether c is a BYTE_ARRAY leaf right under the
// root, with its name and levels.
func topByteArray(m *fileMeta, c *column) (string, levelInfo, bool) {
	if c.typ != 6 {
		return "", levelInfo{}, false
	}
	for _, l := range m.top {
		if c.samePath([]string{string(l.name)}) {
			lv, ok := m.levels(string(l.name))
			return string(l.name), lv, ok
		}
	}
	return "", levelInfo{}, false
}

func pqValues(f *pq.File, i, j int) (out [][]byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parquet-go panicked: %v", p)
		}
	}()
	pages := f.RowGroups()[i].ColumnChunks()[j].Pages()
	defer func() { _ = pages.Close() }()
	buf := make([]pq.Value, 64)
	for {
		p, err := pages.ReadPage()
		if err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return nil, err
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				if !v.IsNull() {
					out = append(out, bytes.Clone(v.ByteArray()))
				}
			}
			if err != nil {
				break
			}
		}
		pq.Release(p)
	}
}

func TestPagesMatchParquetGo(t *testing.T) {
	vals := values(3000, 7)
	codecs := map[string]pq.WriterOption{
		"none": pq.Compression(&pq.Uncompressed), "snappy": pq.Compression(&pq.Snappy),
		"gzip": pq.Compression(&pq.Gzip), "zstd": pq.Compression(&pq.Zstd),
		"brotli": pq.Compression(&pq.Brotli),
	}
	type file struct {
		name string
		make func(opts ...pq.WriterOption) []byte
	}
	required := func(v []byte) []byte {
		if v == nil {
			return []byte{}
		}
		return v
	}
	files := []file{
		{"plain", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) plainCol { return plainCol{required(v)} }), o...)
		}},
		{"default", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) defaultCol { return defaultCol{required(v)} }), o...)
		}},
		{"dict", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) dictCol { return dictCol{required(v)} }), o...)
		}},
		{"delta", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) deltaCol { return deltaCol{required(v)} }), o...)
		}},
		{"optional", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) optionalCol { return optionalCol{v} }), o...)
		}},
		{"optional-dict", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) optionalDictCol { return optionalDictCol{v} }), o...)
		}},
		{"optional-delta", func(o ...pq.WriterOption) []byte {
			return writeRows(t, mapRows(vals, func(v []byte) optionalDeltaCol { return optionalDeltaCol{v} }), o...)
		}},
		{"repeated", func(o ...pq.WriterOption) []byte {
			rows := make([]repeatedCol, len(vals)/3)
			for i := range rows {
				rows[i] = repeatedCol{[][]byte{required(vals[3*i]), required(vals[3*i+1])}[:i%3]}
			}
			return writeRows(t, rows, o...)
		}},
	}
	for _, f := range files {
		for cname, codec := range codecs {
			for _, version := range []int{1, 2} {
				name := fmt.Sprintf("%s/%s/v%d", f.name, cname, version)
				data := f.make(codec, pq.DataPageVersion(version), pq.PageBufferSize(2048))
				if n, _ := compareColumns(t, name, data); n == 0 {
					t.Errorf("%s: no column chunk compared", name)
				}
			}
		}
	}
}

func mapRows[T any](vals [][]byte, f func([]byte) T) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = f(v)
	}
	return out
}

// Every BYTE_ARRAY column right under the root of every corpus file.
func TestPagesMatchParquetGoOnCorpus(t *testing.T) {
	files := corpusParquet(t)
	total, skipped := 0, 0
	for _, f := range files {
		n, s := compareColumns(t, f.Name, f.Data)
		total += n
		skipped += s
	}
	t.Logf("%d files: %d column chunks compared, %d skipped (outside the decode limits, or neither reader takes them)", len(files), total, skipped)
	if total == 0 {
		t.Fatal("no corpus column chunk compared")
	}
}

// FuzzByteArrays: any column chunk, codec and levelling; the decoder must
// neither panic nor read past its input. Seeds: chunks parquet-go wrote,
// Brotli and LZ4_RAW among them.
func FuzzByteArrays(f *testing.F) {
	vals := values(300, 3)
	seed := func(data []byte) {
		foot, _, err := readFooter(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			f.Fatal(err)
		}
		m, err := decodeFooter(foot)
		if err != nil {
			f.Fatal(err)
		}
		c := m.rowGroups[0].cols[0]
		start := min(c.dataPage, max(c.dictPage, 4))
		f.Add(data[start:start+c.totalCompressed], c.codec, uint8(1))
	}
	seed(writeRows(f, mapRows(vals, func(v []byte) optionalDictCol { return optionalDictCol{v} }), pq.Compression(&pq.Snappy), pq.DataPageVersion(1)))
	seed(writeRows(f, mapRows(vals, func(v []byte) optionalDeltaCol { return optionalDeltaCol{v} }), pq.DataPageVersion(2)))
	seed(writeRows(f, mapRows(vals, func(v []byte) plainCol { return plainCol{append([]byte{}, v...)} }), pq.Compression(&pq.Zstd)))
	seed(writeRows(f, mapRows(vals, func(v []byte) optionalDictCol { return optionalDictCol{v} }), pq.Compression(&pq.Brotli)))
	seed(writeRows(f, mapRows(vals, func(v []byte) plainCol { return plainCol{append([]byte{}, v...)} }), pq.Compression(&pq.Lz4Raw)))
	f.Fuzz(func(t *testing.T, chunk []byte, codec int32, levels uint8) {
		lv := levelInfo{maxRep: int(levels>>4) & 1, maxDef: int(levels) & 3}
		_ = byteArrays(chunk, codec, lv, func(v []byte) error {
			if len(v) > len(chunk)*4+(64<<20) {
				t.Fatalf("a value of %d bytes from a chunk of %d", len(v), len(chunk))
			}
			return nil
		})
	})
}

// The decode limits hold before a page is decoded, and no codec writes
// more than its header says: over the limits is errNotDecoded (no
// footprint, as before), a page past its chunk or a body that decompresses
// to another size is an error.
func TestPageLimits(t *testing.T) {
	for name, c := range map[string]struct {
		p     pageInfo
		total int64 // uncompressed bytes of the chunk's pages before it
	}{
		"too large":  {pageInfo{size: 10, uncompressed: maxDecodePage + 1}, 0},
		"too many":   {pageInfo{size: 10, uncompressed: 10, values: maxPageValues + 1}, 0},
		"over total": {pageInfo{size: 10, uncompressed: maxDecodePage}, maxDecodeBytes - maxDecodePage + 1},
	} {
		total := c.total
		if err := checkPage(c.p, 100, &total); !errors.Is(err, errNotDecoded) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var total int64
	if err := checkPage(pageInfo{size: 101, uncompressed: 10}, 100, &total); err == nil || errors.Is(err, errNotDecoded) {
		t.Errorf("a page past its chunk: %v", err)
	}
	if err := checkPage(pageInfo{size: 100, uncompressed: 100, levels: 101}, 100, &total); err == nil {
		t.Error("levels longer than the page were accepted")
	}
	raw := bytes.Repeat([]byte("wkb "), 1000)
	for codec, enc := range map[int32]interface {
		Encode(dst, src []byte) ([]byte, error)
	}{1: &pq.Snappy, 2: &pq.Gzip, 4: &pq.Brotli, 6: &pq.Zstd, 7: &pq.Lz4Raw} {
		comp, err := enc.Encode(nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := decompress(codec, comp, int32(len(raw))); err != nil || !bytes.Equal(out, raw) {
			t.Errorf("codec %d: %v", codec, err)
		}
		if _, err := decompress(codec, comp, int32(len(raw)-1)); err == nil {
			t.Errorf("codec %d: a body larger than its header was accepted", codec)
		}
	}
	if _, err := decompress(3, nil, 0); !errors.Is(err, errNotDecoded) || !strings.Contains(err.Error(), "LZO") {
		t.Errorf("LZO: %v", err)
	}
}
