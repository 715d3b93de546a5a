package zarr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// ErrShard is wrapped by every error about a shard file whose index does
// not describe it.
var ErrShard = errors.New("invalid zarr shard")

// emptyEntry is the offset and length the sharding spec gives an inner
// chunk that is not stored (all fill value).
const emptyEntry = math.MaxUint64

// InnerChunk is one entry of a shard's index.
type InnerChunk struct {
	Coords   []int64 // inner coordinates within the shard
	Off, Len int64   // byte range in the shard file (0, 0 when Empty)
	Empty    bool    // not stored: the fill value
}

// ShardIndex is a parsed shard index: where it sits in the shard file and
// its entries in index order (C order over Sharding.PerShard).
type ShardIndex struct {
	Off, Len int64
	Chunks   []InnerChunk
}

// ReadIndex reads and checks the index of the shard file r of size bytes;
// name (the file's store path) is used in errors.
func (s *Sharding) ReadIndex(name string, r io.ReaderAt, size int64) (*ShardIndex, error) {
	n := s.IndexSize()
	if size < n {
		return nil, fmt.Errorf("%w: %s: %d bytes, shorter than its %d-byte index", ErrShard, name, size, n)
	}
	off := size - n
	if s.IndexAtStart {
		off = 0
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%w: %s: reading the index: %w", ErrShard, name, err)
	}
	return s.DecodeIndex(name, buf, size)
}

// DecodeIndex decodes index, the index bytes of a shard file of size
// bytes, verifies its crc32c (Castagnoli) when the index codecs have one,
// and checks that every stored inner chunk lies inside the file, outside
// the index, and overlaps no other.
func (s *Sharding) DecodeIndex(name string, index []byte, size int64) (*ShardIndex, error) {
	n := s.IndexSize()
	if int64(len(index)) != n {
		return nil, fmt.Errorf("%w: %s: index of %d bytes, want %d", ErrShard, name, len(index), n)
	}
	if size < n {
		return nil, fmt.Errorf("%w: %s: %d bytes, shorter than its %d-byte index", ErrShard, name, size, n)
	}
	x := &ShardIndex{Off: size - n, Len: n}
	if s.IndexAtStart {
		x.Off = 0
	}
	body := index
	if s.Checksum {
		body = index[:len(index)-4]
		want := binary.LittleEndian.Uint32(index[len(index)-4:])
		if got := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); got != want {
			return nil, fmt.Errorf("%w: %s: index crc32c %08x, stored %08x", ErrShard, name, got, want)
		}
	}
	order := s.byteOrder()
	entries := int(s.Entries())
	rank := len(s.PerShard)
	coords := make([]int64, entries*rank)
	x.Chunks = make([]InnerChunk, entries)
	for i := range x.Chunks {
		c := &x.Chunks[i]
		c.Coords = coords[i*rank : (i+1)*rank : (i+1)*rank]
		s.unravel(int64(i), c.Coords)
		off, ln := order.Uint64(body[16*i:]), order.Uint64(body[16*i+8:])
		switch {
		case off == emptyEntry && ln == emptyEntry:
			c.Empty = true
		case off == emptyEntry || ln == emptyEntry:
			return nil, fmt.Errorf("%w: %s: inner chunk %v has offset %d and length %d: half empty", ErrShard, name, c.Coords, int64(off), int64(ln))
		case off > uint64(size) || ln > uint64(size)-off:
			return nil, fmt.Errorf("%w: %s: inner chunk %v at bytes %d..+%d runs past the %d-byte file", ErrShard, name, c.Coords, off, ln, size)
		default:
			c.Off, c.Len = int64(off), int64(ln)
		}
	}
	if err := x.checkOverlaps(name); err != nil {
		return nil, err
	}
	return x, nil
}

func (s *Sharding) byteOrder() binary.ByteOrder {
	if s.BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// unravel writes the inner coordinates of entry i (C order) to out.
func (s *Sharding) unravel(i int64, out []int64) {
	for d := len(s.PerShard) - 1; d >= 0; d-- {
		out[d] = i % s.PerShard[d]
		i /= s.PerShard[d]
	}
}

// entryOf is the index position of inner coordinates, -1 when outside.
func (s *Sharding) entryOf(coords []int64) int64 {
	if len(coords) != len(s.PerShard) {
		return -1
	}
	var i int64
	for d, c := range coords {
		if c < 0 || c >= s.PerShard[d] {
			return -1
		}
		i = i*s.PerShard[d] + c
	}
	return i
}

// checkOverlaps refuses stored inner chunks that overlap each other or the
// index. Zero-length chunks occupy no bytes and overlap nothing.
func (x *ShardIndex) checkOverlaps(name string) error {
	stored := make([]*InnerChunk, 0, len(x.Chunks))
	for i := range x.Chunks {
		if c := &x.Chunks[i]; !c.Empty && c.Len > 0 {
			if c.Off < x.Off+x.Len && x.Off < c.Off+c.Len {
				return fmt.Errorf("%w: %s: inner chunk %v at bytes %d..+%d overlaps the index at %d..+%d", ErrShard, name, c.Coords, c.Off, c.Len, x.Off, x.Len)
			}
			stored = append(stored, c)
		}
	}
	slices.SortFunc(stored, func(a, b *InnerChunk) int { return cmpInt(a.Off, b.Off) })
	for i := 1; i < len(stored); i++ {
		a, b := stored[i-1], stored[i]
		if b.Off < a.Off+a.Len {
			return fmt.Errorf("%w: %s: inner chunks %v (bytes %d..+%d) and %v (bytes %d..+%d) overlap", ErrShard, name, a.Coords, a.Off, a.Len, b.Coords, b.Off, b.Len)
		}
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EncodeIndex writes the index bytes that describe chunks, each inner chunk
// given once by its inner coordinates (entries not given are empty): the
// inverse of DecodeIndex, so that a shard's index can be checked to be
// derivable from the places of its inner chunks.
func (s *Sharding) EncodeIndex(chunks []InnerChunk) ([]byte, error) {
	out := make([]byte, s.IndexSize())
	body := out[:16*s.Entries()]
	for i := range body {
		body[i] = 0xff
	}
	seen := make([]bool, s.Entries())
	order := s.byteOrder()
	for _, c := range chunks {
		i := s.entryOf(c.Coords)
		if i < 0 {
			return nil, fmt.Errorf("%w: inner coordinates %v outside a shard of %v", ErrShard, c.Coords, s.PerShard)
		}
		if seen[i] {
			return nil, fmt.Errorf("%w: inner chunk %v given twice", ErrShard, c.Coords)
		}
		seen[i] = true
		if c.Empty {
			continue
		}
		if c.Off < 0 || c.Len < 0 {
			return nil, fmt.Errorf("%w: inner chunk %v at bytes %d..+%d", ErrShard, c.Coords, c.Off, c.Len)
		}
		order.PutUint64(body[16*i:], uint64(c.Off))
		order.PutUint64(body[16*i+8:], uint64(c.Len))
	}
	if s.Checksum {
		binary.LittleEndian.PutUint32(out[len(body):], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	}
	return out, nil
}

// PieceKind tells the parts of a shard file apart.
type PieceKind int

// Kinds of shard file pieces.
const (
	PieceIndex PieceKind = iota + 1 // the shard index
	PieceChunk                      // a stored inner chunk
	PieceGap                        // bytes no entry points at
)

// Piece is one byte range of a shard file.
type Piece struct {
	Off, Len int64
	Kind     PieceKind
	Chunk    int // PieceChunk: index of the entry in ShardIndex.Chunks
}

// Pieces lists the byte ranges of the shard file of size bytes that x was
// decoded from, in file order, covering it exactly once: the index, each
// stored inner chunk of nonzero length, and the gaps between them.
func (x *ShardIndex) Pieces(size int64) []Piece {
	ps := []Piece{{Off: x.Off, Len: x.Len, Kind: PieceIndex, Chunk: -1}}
	for i, c := range x.Chunks {
		if !c.Empty && c.Len > 0 {
			ps = append(ps, Piece{Off: c.Off, Len: c.Len, Kind: PieceChunk, Chunk: i})
		}
	}
	slices.SortFunc(ps, func(a, b Piece) int { return cmpInt(a.Off, b.Off) })
	out := make([]Piece, 0, 2*len(ps)+1)
	var pos int64
	for _, p := range ps {
		if p.Off > pos {
			out = append(out, Piece{Off: pos, Len: p.Off - pos, Kind: PieceGap, Chunk: -1})
		}
		if p.Len > 0 {
			out = append(out, p)
		}
		pos = p.Off + p.Len
	}
	if pos < size {
		out = append(out, Piece{Off: pos, Len: size - pos, Kind: PieceGap, Chunk: -1})
	}
	return out
}
