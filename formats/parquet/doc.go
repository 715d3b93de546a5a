// Package parquet is the Parquet / GeoParquet adapter: every page of every
// column chunk is a chunk keyed by row group and column path, with the row
// group's footprint.
//
// What the adapter reads (parquet-go's order; other writers differ only in
// where indexes and bloom filters sit):
//
//	0      "PAR1"                                                    inline
//	4      row group 0:
//	         column chunk: [dict page][data page]…  rg0/<path>/p0, /p1, …
//	         (pages = PageHeader + compressed body; no file offsets)
//	         [Arrow: ColumnMetaData copy after each chunk]      inline (gap)
//	         bloom filters (header + bitset)              rg0/<path>/bloom
//	       row group 1 …
//	       ColumnIndex of every (rg, column)                 rg<i>/<path>/ci
//	       OffsetIndex of every (rg, column) (absolute offsets)      inline
//	size-8-n FileMetaData, Thrift compact, n bytes                   inline
//	size-8 u32 LE n | "PAR1"                                         inline
//
// Before anything is decoded the footer is checked: magic at both ends
// ("PARE", an encrypted footer, is refused), n ≤ size−12 and ≤ MaxFooter,
// and a Thrift walk over the whole FileMetaData with every list, set, map
// and string length bounded by the bytes left and nesting ≤ 64 (an empty
// list may have element type 0, as fastparquet writes it). The
// adapter then decodes the fields it needs itself (parquet-go's decoder
// allocates whole slices of large structs from counts, see FORMATS.md §2.5).
//
// A column chunk is [dictionary_page_offset or data_page_offset,
// +total_compressed_size); file_offset is ignored, as readers do (writers
// set it to 0 or to where they wrote the metadata). Walking its page
// headers must land exactly on
// its end; otherwise it is one chunk "rg<i>/<path>". Pages and unwalkable
// chunks over SplitMin are cut by content into "<key>@" chunks; gaps over
// GapMin become "gap@" chunks, smaller ones stay inline. file_path
// (external chunks), encrypted columns, ranges outside [4, size-8-n) and
// overlapping ranges are errors: the caller falls back to the generic
// adapter with the reason.
//
// Column paths in keys: components joined by ".", bytes outside
// [A-Za-z0-9_-] as %XX; a spelling over 80 bytes is cut and ends in "~"
// plus 12 hex digits of the BLAKE3 of the raw path.
//
// Footprints: per row group, from the GeoParquet 1.1 bbox covering
// columns' statistics (min xmin, min ymin, max xmax, max ymax), else the
// primary column's Parquet GeospatialStatistics bbox, else the X/Y extent
// of the row group's WKB values, else the file-level geo bbox. Without geo
// metadata the first top-level GEOMETRY or GEOGRAPHY column (Parquet's
// own logical types) is the primary one; GEOGRAPHY WKB is never decoded
// (its edges can leave its vertices' extent). Every chunk
// of a row group carries it. WKB (wkb.go: ISO and EWKB, Z/M/ZM, all seven
// types plus TIN/triangle; NaN and empty skipped) is decoded only after
// every range has been checked, by the adapter's own page decoder
// (pages.go, delta.go: data pages v1 and v2, dictionary pages; PLAIN,
// dictionary, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY values), once
// page headers pass size/count limits and compressed bodies are proven to
// decompress within their declared size (UNCOMPRESSED, SNAPPY, GZIP, ZSTD,
// BROTLI, LZ4 and LZ4_RAW; LZO and other encodings get no decoded
// footprint, and the summary's footprint_fallback says why). parquet-go is
// a test dependency only: the tests check the decoder against it.
// The same decoder, extended to every physical type and to BOOLEAN RLE,
// DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT values and nested levels
// (leaves.go, values.go), reads rows for package rows (diff --features).
// Decoded footprints are cached in
// Adapter.Footprints by the hash of the geometry column chunk, so an edit
// decodes only the row groups whose geometry chunk changed.
package parquet
