package zarr

import (
	"errors"
	"strings"
	"testing"
)

const goodZArray = `{"zarr_format": 2, "shape": [20, 30], "chunks": [8, 16], "dtype": "<f4",
 "compressor": {"id": "zlib", "level": 1}, "fill_value": "NaN", "order": "F",
 "filters": [{"id": "delta", "dtype": "<f4"}], "dimension_separator": "/", "extra": 1}`

func TestParseZArray(t *testing.T) {
	a, err := ParseZArray("g/t2m/.zarray", []byte(goodZArray))
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != "g/t2m" || a.Version != 2 || a.Order != 'F' || a.Keys.Separator != '/' || a.Keys.Default ||
		a.Compressor.Name != "zlib" || len(a.Filters) != 1 || a.Filters[0].Name != "delta" ||
		string(a.DType) != `"<f4"` || string(a.FillValue) != `"NaN"` {
		t.Errorf("%+v", a)
	}
	if g := a.Grid(); g[0] != 3 || g[1] != 2 {
		t.Errorf("grid %v", g)
	}
	if err := a.WithAttrs("g/t2m/.zattrs", []byte(`{"_ARRAY_DIMENSIONS": ["lat", "lon"], "units": "K"}`)); err != nil {
		t.Fatal(err)
	}
	if len(a.DimNames) != 2 || a.DimNames[1] != "lon" {
		t.Errorf("dims %v", a.DimNames)
	}
	if err := a.WithAttrs("g/t2m/.zattrs", []byte(`{"_ARRAY_DIMENSIONS": ["lat"]}`)); err == nil {
		t.Error("one dimension name for two dimensions")
	}
	null, err := ParseZArray(".zarray", []byte(`{"zarr_format":2,"shape":[],"chunks":[],"dtype":"|u1","compressor":null,"fill_value":null,"order":"C","filters":null}`))
	if err != nil || null.Rank() != 0 || null.Compressor != nil || string(null.FillValue) != "null" || null.Keys.Separator != '.' {
		t.Errorf("rank 0, nulls: %+v %v", null, err)
	}
}

// TestMetadataErrors: malformed documents are errors that wrap ErrMetadata
// and name the file and the fault.
func TestMetadataErrors(t *testing.T) {
	zarray := func(old, new string) string { return strings.Replace(goodZArray, old, new, 1) }
	v2 := map[string]struct{ doc, want string }{
		"not json":       {`{"zarr_format": 2,`, "unexpected end"},
		"array":          {`[1]`, "not a JSON object"},
		"empty":          {``, "not a JSON object"},
		"format":         {zarray(`"zarr_format": 2`, `"zarr_format": 3`), "zarr_format 3 is not 2"},
		"no format":      {zarray(`"zarr_format": 2,`, ``), "no zarr_format"},
		"negative":       {zarray(`[20, 30]`, `[20, -1]`), "shape[1] = -1"},
		"zero chunk":     {zarray(`[8, 16]`, `[8, 0]`), "chunks[1] = 0"},
		"rank":           {zarray(`[8, 16]`, `[8]`), "chunks has rank 1, shape has rank 2"},
		"float dim":      {zarray(`[20, 30]`, `[20, 30.5]`), "cannot unmarshal"},
		"huge dim":       {zarray(`[20, 30]`, `[20, 99999999999999999999]`), "cannot unmarshal"},
		"huge grid":      {zarray(`"shape": [20, 30], "chunks": [8, 16]`, `"shape": [4503599627370496, 4503599627370496], "chunks": [1, 1]`), "over 2^48"},
		"no shape":       {zarray(`"shape": [20, 30],`, ``), "no shape"},
		"no dtype":       {zarray(`"dtype": "<f4",`, ``), "no dtype"},
		"no fill":        {zarray(`"fill_value": "NaN",`, ``), "no fill_value"},
		"order":          {zarray(`"order": "F"`, `"order": "X"`), "order \"X\""},
		"separator":      {zarray(`"dimension_separator": "/"`, `"dimension_separator": "-"`), "dimension_separator"},
		"compressor":     {zarray(`{"id": "zlib", "level": 1}`, `{"level": 1}`), "compressor has no id"},
		"filter":         {zarray(`[{"id": "delta", "dtype": "<f4"}]`, `[3]`), "filters[0]"},
		"rank too large": {zarray(`"shape": [20, 30], "chunks": [8, 16]`, `"shape": [`+strings.Repeat("1,", 32)+`1], "chunks": [`+strings.Repeat("1,", 32)+`1]`), "rank 33"},
	}
	for name, c := range v2 {
		_, err := ParseZArray("t2m/.zarray", []byte(c.doc))
		if !errors.Is(err, ErrMetadata) || !strings.Contains(err.Error(), "t2m/.zarray") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrMetadata naming t2m/.zarray and %q", name, err, c.want)
		}
	}
	base := shardedArrayJSON(shardOpts{})
	v3 := func(old, new string) string { return strings.Replace(base, old, new, 1) }
	cases3 := map[string]struct{ doc, want string }{
		"format":      {v3(`"zarr_format": 3`, `"zarr_format": 2`), "zarr_format 2 is not 3"},
		"node type":   {v3(`"node_type": "array"`, `"node_type": "table"`), "node_type \"table\""},
		"grid":        {v3(`"name": "regular"`, `"name": "rectilinear"`), "chunk_grid \"rectilinear\""},
		"chunk rank":  {v3(`"chunk_shape": [4, 8]`, `"chunk_shape": [4]`), "chunk_shape has rank 1"},
		"key enc":     {v3(`"name": "default"`, `"name": "custom"`), "chunk_key_encoding \"custom\""},
		"key sep":     {v3(`"separator": "/"`, `"separator": ":"`), "separator \":\""},
		"dim names":   {v3(`["y", "x"]`, `["y"]`), "dimension_names has 1 names"},
		"no codecs":   {v3(`"codecs": [{"name": "sharding_indexed"`, `"codecs": [], "x": [{"name": "sharding_indexed"`), "no codecs"},
		"no dtype":    {v3(`"data_type": "uint8",`, ``), "no data_type"},
		"attributes":  {v3(`"fill_value": 0,`, `"fill_value": 0, "attributes": [1],`), "attributes is not an object"},
		"transformer": {v3(`"fill_value": 0,`, `"fill_value": 0, "storage_transformers": [{"name": "x"}],`), "storage_transformers"},
		"index loc":   {v3(`"index_location": "end"`, `"index_location": "middle"`), "index_location \"middle\""},
	}
	for name, c := range cases3 {
		_, _, err := ParseZarrJSON("a/zarr.json", []byte(c.doc))
		if !errors.Is(err, ErrMetadata) || !strings.Contains(err.Error(), "a/zarr.json") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("v3 %s: got %v, want ErrMetadata naming a/zarr.json and %q", name, err, c.want)
		}
	}
	if _, _, err := ParseZarrJSON("zarr.json", []byte(base)); err != nil {
		t.Fatalf("the undamaged document: %v", err)
	}
}

func TestParseGroupsAndConsolidated(t *testing.T) {
	g, err := ParseZGroup("a/b/.zgroup", []byte(`{"zarr_format": 2}`))
	if err != nil || g.Path != "a/b" || g.Version != 2 {
		t.Errorf("%+v %v", g, err)
	}
	if _, err := ParseZGroup(".zgroup", []byte(`{"zarr_format": "2"}`)); err == nil {
		t.Error("a string zarr_format")
	}
	_, g, err = ParseZarrJSON("zarr.json", []byte(`{"zarr_format": 3, "node_type": "group", "attributes": {"a": 1}, "consolidated_metadata": null}`))
	if err != nil || g == nil || string(g.Attrs) != `{"a": 1}` {
		t.Errorf("v3 group: %+v %v", g, err)
	}
	m, err := ParseZMetadata(".zmetadata", []byte(`{"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}, "t/.zarray": {}}}`))
	if err != nil || len(m) != 2 || m["t/.zarray"] == nil {
		t.Errorf("consolidated: %v %v", m, err)
	}
	if _, err := ParseZMetadata(".zmetadata", []byte(`{"zarr_consolidated_format": 2, "metadata": {}}`)); err == nil {
		t.Error("consolidated format 2")
	}
	if _, err := ParseZAttrs("x/.zattrs", []byte(`{"_ARRAY_DIMENSIONS": "time"}`)); err == nil || !strings.Contains(err.Error(), "x/.zattrs") {
		t.Errorf("a string _ARRAY_DIMENSIONS: %v", err)
	}
}

func TestIsDraftV3(t *testing.T) {
	draft := `{"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0", "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0", "metadata_key_suffix": ".json", "extensions": []}`
	if !IsDraftV3([]byte(draft)) {
		t.Error("GDAL 3.6's entry point not detected")
	}
	if IsDraftV3([]byte(`{"zarr_format": 3, "node_type": "group"}`)) || IsDraftV3([]byte(`nonsense`)) {
		t.Error("a v3 group taken for the draft")
	}
}
