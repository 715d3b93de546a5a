package repo

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/klauspost/compress/zlib"
)

// packBlobsFrom: a commit that writes at least this many manifests puts
// them in one Git pack rather than a loose object each. Git keeps a loose
// object per file it adds; a commit of 20,000 new files spent a third of
// its CPU creating, writing and renaming 20,000 of them.
const packBlobsFrom = 64

// Pack (version 2) and its index (version 2), as git reads them:
//
//	pack: "PACK", version, object count (32 bits, big-endian); per object
//	      a header (type 3 = blob in bits 4-6 of the first byte, the size
//	      in its low 4 bits and 7 bits more per byte while the high bit is
//	      set) and the zlib stream of its bytes; the SHA-1 of all that.
//	index: "\xfftOc", version; 256 counts of ids whose first byte is at
//	      most i; the ids, sorted; the CRC-32 of each object's bytes in
//	      the pack; each one's offset (31 bits: packs stay below 2 GiB);
//	      the pack's SHA-1; the SHA-1 of the index before it.
const packIndexMagic = "\xfftOc"

// packedBlob is a blob for putBlobsPacked: its id (newBlob's) and bytes.
type packedBlob struct {
	blob
	data []byte
}

// putBlobsPacked writes blobs as one new pack in the objects folder, the
// pack first and its index after it (git looks packs up by their index),
// each complete under a temp name before it is renamed. An object that is
// stored already is stored again: a pack of it is as fresh as the commit
// about to refer to it, so git gc does not prune it meanwhile. Without an
// objects folder on disk, each blob is written loose by go-git.
func (g *gitRepo) putBlobsPacked(blobs []packedBlob) error {
	if len(blobs) == 0 {
		return nil
	}
	objects, ok := g.objectsDir()
	if !ok {
		for _, b := range blobs {
			if err := g.putBlob(b.blob, b.data); err != nil {
				return err
			}
		}
		return nil
	}
	blobs = slices.Clone(blobs)
	slices.SortFunc(blobs, func(a, b packedBlob) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	blobs = slices.CompactFunc(blobs, func(a, b packedBlob) bool { return a.hash == b.hash })
	dir := filepath.Join(objects, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pack, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return err
	}
	defer os.Remove(pack.Name()) // fails harmlessly once renamed
	offsets, crcs, sum, err := writePack(pack, blobs)
	if cerr := pack.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write git pack %s: %w", pack.Name(), err)
	}
	idx, err := os.CreateTemp(dir, "tmp_idx_")
	if err != nil {
		return err
	}
	defer os.Remove(idx.Name())
	err = writePackIndex(idx, blobs, offsets, crcs, sum)
	if cerr := idx.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write git pack index %s: %w", idx.Name(), err)
	}
	name := filepath.Join(dir, fmt.Sprintf("pack-%x", sum))
	for _, mv := range [][2]string{{pack.Name(), name + ".pack"}, {idx.Name(), name + ".idx"}} {
		if err := os.Chmod(mv[0], 0o444); err != nil {
			return err
		}
		if err := os.Rename(mv[0], mv[1]); err != nil {
			return fmt.Errorf("git pack %s: %w", mv[1], err)
		}
	}
	// go-git lists the packs once, when it first looks into one.
	if fsys, ok := g.r.Storer.(*filesystem.Storage); ok {
		g.mu.Lock()
		fsys.Reindex()
		g.mu.Unlock()
	}
	return nil
}

// writePack writes the pack of blobs to w and returns each one's offset,
// the CRC-32 of its bytes in the pack, and the pack's checksum.
func writePack(w io.Writer, blobs []packedBlob) (offsets []uint32, crcs []uint32, sum [sha1.Size]byte, err error) {
	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(blobs)))
	bw.Write(hdr[:]) //nolint:errcheck // bufio keeps the first error for Flush
	cw := &countingCRC{w: bw, n: int64(len(hdr))}
	zw := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(zw)
	for _, b := range blobs {
		if cw.n >= 1<<31 {
			return nil, nil, sum, fmt.Errorf("pack of %d manifests passes 2 GiB", len(blobs))
		}
		offsets = append(offsets, uint32(cw.n))
		cw.crc = 0
		n := uint64(len(b.data))
		head := []byte{3<<4 | byte(n&0x0f)}
		for n >>= 4; n > 0; n >>= 7 {
			head[len(head)-1] |= 0x80
			head = append(head, byte(n&0x7f))
		}
		cw.Write(head) //nolint:errcheck // as above
		zw.Reset(cw)
		if _, err := zw.Write(b.data); err != nil {
			return nil, nil, sum, err
		}
		if err := zw.Close(); err != nil {
			return nil, nil, sum, err
		}
		crcs = append(crcs, cw.crc)
	}
	if err := bw.Flush(); err != nil {
		return nil, nil, sum, err
	}
	copy(sum[:], h.Sum(nil))
	_, err = w.Write(sum[:])
	return offsets, crcs, sum, err
}

// countingCRC counts and CRCs what goes through it.
type countingCRC struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (c *countingCRC) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
	return n, err
}

// writePackIndex writes the index of the pack whose checksum is sum, of
// blobs sorted by id.
func writePackIndex(w io.Writer, blobs []packedBlob, offsets, crcs []uint32, sum [sha1.Size]byte) error {
	b := make([]byte, 0, 8+256*4+len(blobs)*(sha1.Size+8)+2*sha1.Size)
	b = append(b, packIndexMagic...)
	b = binary.BigEndian.AppendUint32(b, 2)
	var fan [256]uint32
	for _, o := range blobs {
		fan[o.hash[0]]++
	}
	var total uint32
	for _, n := range fan {
		total += n
		b = binary.BigEndian.AppendUint32(b, total)
	}
	for _, o := range blobs {
		b = append(b, o.hash[:]...)
	}
	for _, c := range crcs {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	for _, off := range offsets {
		b = binary.BigEndian.AppendUint32(b, off)
	}
	b = append(b, sum[:]...)
	self := sha1.Sum(b)
	b = append(b, self[:]...)
	_, err := w.Write(b)
	return err
}
