// Package tiff is the TIFF-family adapter (classic TIFF, BigTIFF, GeoTIFF,
// COG; both byte orders): every tile or strip is a chunk keyed by where it
// sits in the raster, with its footprint in the file's CRS.
//
// What the reader walks (a GDAL COG; other writers differ in order only):
//
//	0     II*\0 | MM\0*  + first IFD offset     (BigTIFF: 43, 8, 0, u64)  inline
//	8     ghost: GDAL_STRUCTURAL_METADATA_SIZE=…  LAYOUT=… lines         inline
//	      IFD0 (full res) + its tag values (GeoKeys, scale, JPEGTables) inline
//	      mask IFD0, IFD1..n (overviews), mask IFDs → next IFD offset 0    inline
//	      TileOffsets / TileByteCounts arrays                             inline
//	      [u32 LE size][tile bytes][last 4 bytes again] …                 chunk
//	      smallest overview first … full resolution last, row-major,
//	      mask tile right after its image tile
//	      dead bytes after in-place edits (> GapMin)                   CDC chunks
//
// Keys (natural numeric order): "z0/r12/c7" full resolution, "z2/r0/c1"
// overview level round(log2(W0/Wl)), "mask/z0/r3/c4" masks, "z0/s5" strip 5,
// "…/p1" plane 1 of PlanarConfiguration 2, "ifd5/z0/…" a further page (and
// "ifd5/r0/c0" for an IFD whose level key is taken), "gap/0@" dead bytes.
// IFDs listed in a SubIFDs tag (330) are walked right after their parent,
// as libtiff does, so reduced resolutions and masks kept there key like
// those of the main chain; IFD numbers count every IFD in that order.
// A block over SplitMin is cut by content into "<key>@" chunks.
//
// Anything not fully understood — blocks past EOF, partial overlaps, IFD
// loops, absurd counts — is an error, and the caller falls back to the
// generic chunker: the layout must be byte-exact, so guessing is worse than
// giving up. Exact duplicate blocks (GDAL writes identical empty tiles at one
// offset) are one chunk plus Aliases.
package tiff
