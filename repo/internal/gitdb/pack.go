package gitdb

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

	"github.com/klauspost/compress/zlib"
)

// packIndexMagic starts a pack index of version 2 or later (doc.go draws
// the pack and its index).
const packIndexMagic = "\xfftOc"

// PackedBlob is a blob for PutBlobsPacked: its name (NewBlob's) and bytes.
type PackedBlob struct {
	Blob
	Data []byte
}

// PutBlobsPacked writes blobs as one new pack in the objects folder, the
// pack first and its index after it (git looks packs up by their index),
// each complete under a temp name before it is renamed. An object that is
// stored already is stored again: a pack of it is as fresh as the commit
// about to refer to it, so git gc does not prune it meanwhile. Without an
// objects folder on disk, each blob is written loose by go-git.
func (g *Repo) PutBlobsPacked(blobs []PackedBlob) error {
	if len(blobs) == 0 {
		return nil
	}
	objects, ok := g.objectsDir()
	if !ok {
		for _, b := range blobs {
			if err := g.PutBlob(b.Blob, b.Data); err != nil {
				return err
			}
		}
		return nil
	}
	blobs = slices.Clone(blobs)
	slices.SortFunc(blobs, func(a, b PackedBlob) int { return bytes.Compare(a.Hash[:], b.Hash[:]) })
	blobs = slices.CompactFunc(blobs, func(a, b PackedBlob) bool { return a.Hash == b.Hash })
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
	g.Reload()
	return nil
}

// writePack writes the pack of blobs to w and returns each one's offset,
// the CRC-32 of its bytes in the pack, and the pack's checksum.
func writePack(w io.Writer, blobs []PackedBlob) (offsets []uint32, crcs []uint32, sum [sha1.Size]byte, err error) {
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
		n := uint64(len(b.Data))
		head := []byte{3<<4 | byte(n&0x0f)}
		for n >>= 4; n > 0; n >>= 7 {
			head[len(head)-1] |= 0x80
			head = append(head, byte(n&0x7f))
		}
		cw.Write(head) //nolint:errcheck // as above
		zw.Reset(cw)
		if _, err := zw.Write(b.Data); err != nil {
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
func writePackIndex(w io.Writer, blobs []PackedBlob, offsets, crcs []uint32, sum [sha1.Size]byte) error {
	b := make([]byte, 0, 8+256*4+len(blobs)*(sha1.Size+8)+2*sha1.Size)
	b = append(b, packIndexMagic...)
	b = binary.BigEndian.AppendUint32(b, 2)
	var fan [256]uint32
	for _, o := range blobs {
		fan[o.Hash[0]]++
	}
	var total uint32
	for _, n := range fan {
		total += n
		b = binary.BigEndian.AppendUint32(b, total)
	}
	for _, o := range blobs {
		b = append(b, o.Hash[:]...)
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
