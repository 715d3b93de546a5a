// Package derived checks, at commit, the derived segments a format
// adapter declares (bytes it regenerates from the rest of the file, a
// FlatGeobuf index): a segment is stored as a recipe only if the
// adapter's Deriver gives back its bytes exactly, as checkout will need.
//
// Contract: Check changes l only by replacing a segment that does not
// derive with content-defined chunks over the same bytes; it fails only
// when reading f fails or ctx ends. A StreamDeriver's output is compared
// as it is written, without a copy of the segment; a write outside the
// segment or over bytes already written makes it not derive.
//
// Glossary:
//   - derived segment: a formats.Segment with a recipe (IsDerived).
//   - Deriver, StreamDeriver: an adapter's regeneration of a segment,
//     whole or written through an io.WriterAt.
//   - part: hashing.MaxRange bytes of a long segment, as the scan reads
//     it; Hash holds one id per part besides the whole's.
package derived
