package zarr

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkSummary checks a store's summary fields: the version, the array
// count, and one "array" field per array in path order that reads back
// exactly and says what the array's metadata says.
func checkSummary(t *testing.T, st *Store) {
	t.Helper()
	fields := Summary(st)
	if len(fields) < 2 || fields[0].Name != "zarr" || fields[0].Value != strconv.Itoa(st.Version) || fields[1].Name != "arrays" {
		t.Fatalf("summary head %q", fields)
	}
	var arrays []*Array
	for _, n := range st.Nodes {
		if n.Array != nil {
			arrays = append(arrays, n.Array)
		}
	}
	if fields[1].Value != strconv.Itoa(len(arrays)) || len(fields) != 2+len(arrays) {
		t.Fatalf("summary of %d arrays: %q", len(arrays), fields)
	}
	for i, a := range arrays {
		f := fields[2+i]
		if f.Name != "array" {
			t.Fatalf("field %q", f)
		}
		s := checkArraySummary(t, a)
		if f.Value != s.String() {
			t.Errorf("field %q, array spells %q", f.Value, s.String())
		}
	}
}

// checkArraySummary checks that a's summary value is one short printable
// line that ParseSummaryArray reads back to the same value, whose grid is
// a's key grid.
func checkArraySummary(t *testing.T, a *Array) ArraySummary {
	t.Helper()
	v := SummarizeArray(a).String()
	if len(v) > 2000 || !utf8.ValidString(v) || strings.TrimSpace(v) != v || strings.ContainsAny(v, "\t\n\r\x00\x7f") {
		t.Fatalf("array %q: summary %q is not a short printable line", a.Path, v)
	}
	s, err := ParseSummaryArray(v)
	if err != nil {
		t.Fatalf("array %q: %v", a.Path, err)
	}
	if s.String() != v || s.Prefix != KeyPrefix(a.Path) || !slices.Equal(s.KeyGrid(), a.KeyGrid()) {
		t.Fatalf("array %q: %q read back as %+v (key grid %v, want %v)", a.Path, v, s, s.KeyGrid(), a.KeyGrid())
	}
	if names := s.DimNames(); names != nil && !slices.Equal(names, a.DimNames) {
		t.Fatalf("array %q: dims %q, want %q", a.Path, names, a.DimNames)
	}
	return s
}

func TestSummaryValues(t *testing.T) {
	v2 := testArray("t2m", KeyEncoding{Separator: '.'}, []int64{365, 721, 1440}, []int64{1, 721, 1440})
	v2.DType, v2.FillValue, v2.Order = json.RawMessage(`"<f4"`), json.RawMessage(`"NaN"`), 'C'
	v2.Compressor = &Codec{Name: "blosc", Config: json.RawMessage(`{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`)}
	v2.DimNames = []string{"time", "lat", "lon"}

	odd := testArray("a b/x@y", KeyEncoding{Default: true, Separator: '/'}, []int64{}, []int64{})
	odd.DType = json.RawMessage(`{"name": "struct", "configuration": {"f": "a b"}}`)
	odd.FillValue, odd.Order = json.RawMessage(` [0, "%#"] `), 'C'
	odd.Codecs = []Codec{{Name: "bytes", Config: json.RawMessage(`{"endian": "big"}`)}, {Name: "zstd"}}

	sharded := testArray("", KeyEncoding{Default: true, Separator: '/'}, []int64{100, 64}, []int64{50, 32})
	sharded.DType, sharded.FillValue, sharded.Order = json.RawMessage(`"uint16"`), json.RawMessage(`0`), 'C'
	sharded.Codecs = []Codec{{Name: ShardingCodec, Config: json.RawMessage(`{"chunk_shape": [10, 16], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip"}]}`)}}
	sharded.Sharding = &Sharding{InnerShape: []int64{10, 16}, PerShard: []int64{5, 2}}
	sharded.DimNames = []string{"y,1", ""}

	long := testArray("l", KeyEncoding{Separator: '.'}, []int64{3}, []int64{2})
	long.DType, long.FillValue, long.Order = json.RawMessage(`"true"`), json.RawMessage(`"`+strings.Repeat("x", 300)+`"`), 'F'
	long.Filters = []Codec{{Name: "delta"}}
	long.Compressor = &Codec{Name: "zlib"}
	long.DimNames = []string{strings.Repeat("n", 200)}

	cases := []struct {
		a    *Array
		want string
	}{
		{v2, `t2m dtype=<f4 shape=365x721x1440 chunks=1x721x1440 dims=time,lat,lon order=C codecs=blosc/lz4/shuffle fill="NaN"`},
		{odd, `~` + KeyPrefix("a b/x@y")[1:] + ` dtype={"name":"struct","configuration":{"f":"a%20b"}} shape=() chunks=() order=C codecs=bytes/be+zstd fill=[0,"%25%23"]`},
		{sharded, `/ dtype=uint16 shape=100x64 chunks=50x32 inner=10x16 dims=y%2C1, order=C codecs=sharding[bytes/le+gzip] fill=0`},
		{long, `l dtype="true" shape=3 chunks=2 dims=#` + capToken(strings.Repeat("n", 200))[1:] + ` order=F codecs=delta+zlib fill=#` + capToken(`"` + strings.Repeat("x", 300) + `"`)[1:]},
	}
	for _, tc := range cases {
		s := checkArraySummary(t, tc.a)
		if got := s.String(); got != tc.want {
			t.Errorf("summary\n got %s\nwant %s", got, tc.want)
		}
	}
	if s := SummarizeArray(sharded); s.GridChunks() != 40 || !slices.Equal(s.DimNames(), []string{"y,1", ""}) {
		t.Errorf("sharded: %d chunks, dims %q", s.GridChunks(), s.DimNames())
	}
	if s := SummarizeArray(long); s.DimNames() != nil || s.GridChunks() != 2 {
		t.Errorf("long: dims %q, %d chunks", s.DimNames(), s.GridChunks())
	}
}

func TestParseSummaryArrayRejects(t *testing.T) {
	good := `t2m dtype=<f4 shape=10x12 chunks=4x4 dims=lat,lon order=C codecs=zlib fill=0`
	if _, err := ParseSummaryArray(good); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		"",
		strings.Replace(good, "t2m", "", 1),
		strings.Replace(good, "t2m", "a@b", 1),
		strings.Replace(good, "t2m", "~abc", 1),
		strings.Replace(good, " order=C", "", 1),
		strings.Replace(good, "order=C", "order=X", 1),
		strings.Replace(good, "chunks=4x4", "chunks=4", 1),
		strings.Replace(good, "chunks=4x4", "chunks=0x4", 1),
		strings.Replace(good, "shape=10x12", "shape=010x12", 1),
		strings.Replace(good, "shape=10x12", "shape=", 1),
		strings.Replace(good, "dims=lat,lon", "dims=lat", 1),
		strings.Replace(good, "dims=lat,lon", "dims=,", 1),
		strings.Replace(good, "dims=lat,lon", "dims=l%2ct,lon", 1),
		strings.Replace(good, "dims=lat,lon", "dims=l%2", 1),
		strings.Replace(good, "fill=0", "fill=", 1),
		strings.Replace(good, "fill=0", "fill=0 fill=0", 1),
		strings.Replace(good, "fill=0", "fill=0 extra=1", 1),
		strings.Replace(good, "codecs=zlib fill=0", "fill=0 codecs=zlib", 1),
		strings.Replace(good, "chunks=4x4", "chunks=4x4 inner=3x4", 1),
		good + " ",
		strings.Replace(good, " ", "  ", 1),
	} {
		if s, err := ParseSummaryArray(v); err == nil || !errors.Is(err, ErrSummary) {
			t.Errorf("%q: accepted as %+v (%v)", v, s, err)
		}
	}
}

// FuzzParseSummaryArray: the parser never panics, and what it accepts
// spells back exactly and has a bounded grid.
func FuzzParseSummaryArray(f *testing.F) {
	f.Add(`t2m dtype=<f4 shape=365x721x1440 chunks=1x721x1440 dims=time,lat,lon order=C codecs=blosc/lz4/shuffle fill="NaN"`)
	f.Add(`/ dtype=uint16 shape=100x64 chunks=50x32 inner=10x16 dims=y%2C1, order=C codecs=sharding[bytes/le+gzip] fill=0`)
	f.Add(`x dtype=|b1 shape=() chunks=() order=F codecs=none fill=null`)
	f.Add(`~0123456789abcdef dtype=i4 shape=3 chunks=2 dims=#0123456789abcdef order=C codecs=#0123456789abcdef fill=1`)
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseSummaryArray(v)
		if err != nil {
			return
		}
		if got := s.String(); got != v {
			t.Fatalf("%q read back as %q", v, got)
		}
		if n := s.GridChunks(); n < 0 {
			t.Fatalf("%q: %d chunks", v, n)
		}
		if names := s.DimNames(); names != nil && len(names) != len(s.Shape) {
			t.Fatalf("%q: %d names for rank %d", v, len(names), len(s.Shape))
		}
	})
}
