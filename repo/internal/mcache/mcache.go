// Package mcache keeps the chunk lines of split manifests, decoded once,
// under .git/chunkvc/mcache, so that the next command that needs the same
// manifest (the commit after a commit, status, diff) reads them in one
// pass instead of inflating, parsing and re-encoding every shard.
//
// Contract: the cache is only ever a shortcut. A file is trusted for a
// manifest whose root blob is the one it names, and only if its checksum
// holds, its count is the root's and its keys are in natural order;
// anything else (damaged, truncated, another root, another version) is a
// miss, never an error, and the caller decodes the shards as before. A
// root blob's text binds every shard's bytes through its shards digest,
// so the chunk lines of one root are always the same.
//
// Glossary: root is the Git blob hash of a split manifest's root; a slot
// is the one file kept per data path (the latest written wins).
//
// Format: "chunkvc-mcache 1\n", the root (20 bytes), the chunk count and
// the total length of the keys (uvarints); per chunk, in natural key
// order: the length of the prefix shared with the previous key and the
// rest (uvarint and bytes), the size (uvarint), the 32-byte ID, a flag
// byte (1: a bbox follows as four little-endian float64, 0: none); then a
// BLAKE3 checksum of all that comes before.
package mcache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/binrec"
)

const magic = "chunkvc-mcache 1\n"

// Root is the Git blob hash of a split manifest's root.
type Root = [20]byte

// errBad marks a file that is not a cache of the root asked for.
var errBad = errors.New("not a manifest cache of this root")

// Slot is the cache file of data path p under dir (.git/chunkvc/mcache).
func Slot(dir, p string) string {
	return filepath.Join(dir, hashing.Sum([]byte(p)).String()[:16])
}

// Save writes chunks, the chunk lines of the split manifest whose root is
// root, to file through a temporary file renamed over it (a reader sees
// the old file or the new one). It streams: memory does not grow with the
// chunk count. Not synced: a cache lost in a crash is rebuilt.
func Save(file string, root Root, chunks []manifest.Chunk) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".tmp*")
	if err != nil {
		return err
	}
	err = write(f, root, chunks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// write writes the cache text to w, in blocks of about 64 KiB.
func write(w io.Writer, root Root, chunks []manifest.Chunk) error {
	keys := 0
	for _, c := range chunks {
		keys += len(c.Key)
	}
	sum := hashing.New()
	b := append([]byte(magic), root[:]...)
	b = binary.AppendUvarint(b, uint64(len(chunks)))
	b = binary.AppendUvarint(b, uint64(keys))
	prev := ""
	for i, c := range chunks {
		b = appendChunk(b, prev, c)
		prev = c.Key
		if len(b) >= 64<<10 || i == len(chunks)-1 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			_, _ = sum.Write(b)
			b = b[:0]
		}
	}
	if _, err := w.Write(b); err != nil { // the header, when there are no chunks
		return err
	}
	_, _ = sum.Write(b)
	id := sum.ID()
	_, err := w.Write(id[:])
	return err
}

// appendChunk appends the record of c, whose key follows prev.
func appendChunk(b []byte, prev string, c manifest.Chunk) []byte {
	b = binrec.AppendShared(b, prev, c.Key)
	b = binary.AppendUvarint(b, uint64(c.Size))
	b = append(b, c.ID[:]...)
	if c.BBox == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	for _, v := range [4]float64{c.BBox.MinX, c.BBox.MinY, c.BBox.MaxX, c.BBox.MaxY} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// Load returns the chunk lines file holds for root, which must number
// count (the root's chunks line); ok is false on any miss.
func Load(file string, root Root, count int) (chunks []manifest.Chunk, ok bool) {
	sum := hashing.New()
	sf, f, ok := binrec.OpenSummed(file, sum)
	if !ok {
		return nil, false
	}
	defer f.Close()
	chunks, err := decode(sf, sum, root, count)
	return chunks, err == nil
}

// Decode reads a cache of size bytes from r, checking it against root and
// count as Load does. Memory beyond the chunks returned is a read buffer.
func Decode(r io.ReaderAt, size int64, root Root, count int) ([]manifest.Chunk, error) {
	sum := hashing.New()
	sf, ok := binrec.NewSummed(r, size, sum)
	if !ok {
		return nil, errBad
	}
	return decode(sf, sum, root, count)
}

// decode reads a cache whose body sf yields (and writes to sum).
func decode(sf *binrec.Summed, sum *hashing.Digest, root Root, count int) ([]manifest.Chunk, error) {
	head := int64(len(magic) + len(root))
	// A record takes at least 35 bytes: no cache claims more chunks than
	// its size allows, whatever the root says.
	if sf.Size < head+2 || count < 0 || int64(count) > (sf.Size-head)/35 {
		return nil, errBad
	}
	rd := sf.R
	var top [len(magic) + len(Root{})]byte
	if _, err := io.ReadFull(rd, top[:]); err != nil || string(top[:len(magic)]) != magic || !bytes.Equal(top[len(magic):], root[:]) {
		return nil, errBad
	}
	n, err1 := binary.ReadUvarint(rd)
	keys, err2 := binary.ReadUvarint(rd)
	if err1 != nil || err2 != nil || n != uint64(count) || keys > uint64(sf.Size) {
		return nil, errBad
	}
	chunks, err := decodeChunks(rd, count, int(keys))
	if err != nil {
		return nil, err
	}
	if id := sum.ID(); !sf.Whole(id[:]) {
		return nil, errBad
	}
	return chunks, nil
}

// decodeChunks reads count records whose keys total keys bytes.
func decodeChunks(rd *bufio.Reader, count, keys int) ([]manifest.Chunk, error) {
	chunks := make([]manifest.Chunk, count)
	var all strings.Builder
	all.Grow(keys)
	var key, rest []byte
	var boxes []geom.BBox
	var raw [32]byte
	// The keys are made into one string at the end (one allocation, not
	// one per chunk); until then each chunk's key length is kept here.
	lens := make([]int32, count)
	for i := range chunks {
		shared, err1 := binary.ReadUvarint(rd)
		more, err2 := binary.ReadUvarint(rd)
		if err1 != nil || err2 != nil || shared > uint64(len(key)) || more > uint64(keys-all.Len()) || shared+more == 0 {
			return nil, errBad
		}
		rest = slices.Grow(rest[:0], int(more))[:more]
		if _, err := io.ReadFull(rd, rest); err != nil {
			return nil, errBad
		}
		key = append(key[:shared], rest...)
		all.Write(key)
		c := &chunks[i]
		size, err := binary.ReadUvarint(rd)
		if err != nil || size > math.MaxInt64 {
			return nil, errBad
		}
		c.Size = int64(size)
		if _, err := io.ReadFull(rd, c.ID[:]); err != nil {
			return nil, errBad
		}
		switch flag, err := rd.ReadByte(); {
		case err != nil || flag > 1:
			return nil, errBad
		case flag == 1:
			if _, err := io.ReadFull(rd, raw[:]); err != nil {
				return nil, errBad
			}
			if len(boxes) == cap(boxes) {
				// Boxes in slabs: one allocation per 1,024, not per chunk.
				boxes = make([]geom.BBox, 0, min(1024, count-i))
			}
			var v [4]float64
			for j := range v {
				v[j] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*j:]))
			}
			boxes = append(boxes, geom.BBox{MinX: v[0], MinY: v[1], MaxX: v[2], MaxY: v[3]})
			c.BBox = &boxes[len(boxes)-1]
		}
		lens[i] = int32(len(key))
	}
	if all.Len() != keys {
		return nil, errBad
	}
	s := all.String()
	for i := range chunks {
		n := int(lens[i])
		chunks[i].Key, s = s[:n], s[n:]
		if i > 0 && !manifest.NaturalLess(chunks[i-1].Key, chunks[i].Key) {
			return nil, fmt.Errorf("%w: keys out of order", errBad)
		}
	}
	return chunks, nil
}
