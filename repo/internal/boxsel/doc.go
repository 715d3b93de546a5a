// Package boxsel picks the part of a file version that checkout --bbox
// (and cat/serve by box) reads: the chunks whose footprint meets a
// bounding box, with the box brought into the file's CRS first.
//
// Contract: Plan refuses, before anything is read or written, a format
// without footprints (tiff, parquet and flatgeobuf have them), a file
// none of whose chunks has one, and a CRS it cannot convert from;
// without GDAL only EPSG:4326 ↔ EPSG:3857 (and identity) convert.
// Wanted never fails.
//
// Glossary:
//   - footprint: a chunk's bounding box in the manifest (Chunk.BBox).
//   - file CRS: the manifest summary's "crs" value.
//   - row group: the unit a Parquet reader needs whole; any chunk of a
//     row group meeting the box makes the whole row group wanted.
package boxsel
