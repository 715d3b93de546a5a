// Package manifest is the text file Git holds for every tracked data file,
// and the binary layout blob the store holds beside the chunks.
//
// A manifest has exactly one valid encoding (Decode refuses anything that
// Encode would not have written), so the same file gives the same bytes on
// every machine and a reviewer's diff shows only what changed:
//
//	chunkvc-manifest 1
//	path data/dem.tif
//	format tiff 1
//	params <adapter parameters>            (only when non-empty)
//	fallback <why the native adapter failed> (only when non-empty)
//	size 7638345
//	digest blake3:<64 hex>                 BLAKE3 of the whole file (b3sum agrees)
//	layout blake3:<64 hex> 9214            layout blob id and length
//	summary <name> <value>                 zero or more, adapter order
//	chunks 85
//	<key> <size> <64 hex> [minx,miny,maxx,maxy]
//
// Chunk lines are sorted by key in natural numeric order (z0/r2 < z0/r10)
// and carry no file offsets: offsets live in the layout blob, so one resized
// tile changes one chunk line, not every line after it.
//
// Layout blob (content-addressed, in the store):
//
//	"chunkvc-layout 1\n"
//	uvarint file size
//	uvarint piece count
//	piece*: kind byte (0 inline, 1 chunk) | uvarint length | inline bytes or 32-byte chunk id
package manifest
