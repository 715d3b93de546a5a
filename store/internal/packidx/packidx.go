package packidx

import "github.com/chunkvc/chunkvc/hashing"

// Version is the version of both pack and index files.
const Version = 1

// Sizes of the parts of an index file, and of a pack's header.
const (
	HeaderSize     = 20
	EntrySize      = 90
	ChecksumSize   = 32
	PackHeaderSize = 8
)

// PackHeader starts every pack file.
const PackHeader = "CVCP\x01\x00\x00\x00"

// magic starts every index file.
const magic = "CVCX"

// Delta segmentation (see the package documentation).
const (
	DeltaSegment = 2 << 20
	DeltaMargin  = 1 << 20
)

// MaxSize bounds an entry's raw and stored sizes.
const MaxSize = 1 << 30

// Encoding says how an object's bytes are stored.
type Encoding uint8

// The encodings.
const (
	Raw   Encoding = 0 // the object's bytes as they are
	Zstd  Encoding = 1 // one zstd frame
	Delta Encoding = 2 // zstd frames with the base object's bytes as dictionaries
)

func (e Encoding) String() string {
	switch e {
	case Raw:
		return "raw"
	case Zstd:
		return "zstd"
	case Delta:
		return "delta"
	}
	return "unknown encoding"
}

// Entry locates one object in a pack.
type Entry struct {
	ID       hashing.ID
	Offset   int64 // of the stored bytes in the pack
	Stored   int64 // length of the stored bytes
	Size     int64 // length of the raw object
	Encoding Encoding
	Depth    uint8      // delta chain length; 0 unless Encoding is Delta
	Base     hashing.ID // delta base; zero unless Encoding is Delta
}

// Index is the content of an index file.
type Index struct {
	PackSize int64   // length of the pack file
	Entries  []Entry // sorted by ID, no duplicates
}
