package repo

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// The block cache lets a commit of a file edited in a few tiles hash only
// the 1 MiB blocks around them for the file's digest, instead of the whole
// file a second time. For each committed file digest it keeps, in
// .git/chunkvc/blocks/<digest>, the chaining value of every block and a
// fingerprint of the pieces of the layout that cover it. When the next
// version's pieces over a block have the same fingerprint (offsets,
// lengths and IDs), the block's bytes are the same, and so is its chaining
// value.
//
// It also keeps the quick table: the hashing.Quick (XXH3-128 under a
// random seed of the entry's own), length and BLAKE3 ID of the chunk
// pieces of that version of minQuick bytes or more. A commit takes a
// piece's ID from there when the Quick of its bytes is in the table,
// instead of hashing it with BLAKE3: a file edited in a few tiles is then
// read once and checked at XXH3's speed, and only the changed tiles are
// hashed. A record states a fact about bytes, not about a place in a file,
// so a rewritten file whose tiles moved finds them too, and a checkout that
// patches a file keeps the table of the version it patched (the patched
// tiles are hashed by the next commit). A checkout that writes a file
// afresh records the chunks it wrote, and keeps them once the file's
// digest is the manifest's.
//
// What the table rests on: that bytes which changed do not keep their
// Quick. By accident that is 2^-128. On purpose it is XXH3's strength
// against someone who writes the file without knowing the seed: no attack
// on its path for inputs over 240 bytes is known, but one on shorter ones
// is (xxHash issue #1127, about 2^-27 a try), so pieces under minQuick are
// always hashed. A file that did not change at all rests on less: its
// size, times and inode (the stat cache). Whoever can write the cache can
// make a commit record anything, as whoever can write .git can.
//
// File layout, all integers little-endian:
//
//	"chunkvc-blocks 2\n"
//	file size     uint64
//	block count   uint32
//	generation    uint32   commits since the chaining values were all computed
//	per block:    fingerprint [16]byte, chaining value [32]byte
//	quick seed    uint64
//	record count  uint32
//	per record, in increasing order of Quick (each Quick once):
//	              Quick [16]byte, length uint32, ID [32]byte
//	BLAKE3 of everything above [32]byte
//
// It is a cache: written without fsync, and a file that is missing, damaged,
// for another size or whose chaining values do not give its digest is not
// used (the digest and every piece are then hashed, as without it).
//
// A commit takes the fingerprints, the chaining values and the quick table
// from one read of the file (hashing.Scan), so its entry holds together
// even when the file was written meanwhile. A checkout takes the prints
// from the layout it wrote and the values from reading the file back, and
// keeps the entry only when that read gives the manifest's digest. As a
// last guard against a value carried on wrongly, every maxGeneration-th
// commit of a file hashes every piece and computes its digest from every
// byte.
const (
	blocksMagic   = "chunkvc-blocks 2\n"
	maxGeneration = 16
	// minQuick: shorter pieces are always hashed with BLAKE3 (see above).
	minQuick = 1 << 10
)

// testHookBlocksReused, when set, learns how many blocks of file p a
// commit took from the block cache; testHookPiecesKnown, how many pieces
// it took from the quick table instead of hashing them.
var (
	testHookBlocksReused func(p string, reused int)
	testHookPiecesKnown  func(p string, known int)
)

// newQuickSeed returns the seed of a new quick table: random, so that no
// one who writes a file knows which bytes would share a Quick.
func newQuickSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return binary.LittleEndian.Uint64(b[:])
}

// fingerprint identifies the bytes of one block through the pieces that
// cover it; the zero value is never reused.
type fingerprint [16]byte

// piece is one segment of a file as the block cache sees it: its place and
// the BLAKE3 of its bytes.
type piece struct {
	off, len int64
	id       hashing.ID
}

// blockPrints returns the fingerprint of each BlockLen block of a size-byte
// file whose pieces, in file order, cover it exactly.
func blockPrints(pieces []piece, size int64) []fingerprint {
	n := (size + hashing.BlockLen - 1) / hashing.BlockLen
	out := make([]fingerprint, n)
	j := 0
	for b := range n {
		start, end := b*hashing.BlockLen, min((b+1)*hashing.BlockLen, size)
		for j < len(pieces) && pieces[j].off+pieces[j].len <= start {
			j++
		}
		k := j
		for k < len(pieces) && pieces[k].off < end {
			k++
		}
		out[b] = blockPrint(pieces[j:k], start, end)
	}
	return out
}

// blockPrint returns the fingerprint of the block [start, end) from the
// pieces that overlap it, in order; zero if they leave a gap.
func blockPrint(pieces []piece, start, end int64) fingerprint {
	// Every piece that starts before the block's end is in the print, so
	// equal prints mean equal ends too (a short last block that grew
	// gained a piece).
	buf := make([]byte, 0, 48*len(pieces))
	covered := start
	for _, p := range pieces {
		if p.off > covered {
			return fingerprint{} // a gap: cannot happen with a checked layout
		}
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p.off))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p.len))
		buf = append(buf, p.id[:]...)
		covered = p.off + p.len
	}
	if covered < end {
		return fingerprint{}
	}
	var f fingerprint
	id := hashing.Sum(buf)
	copy(f[:], id[:])
	return f
}

// layoutPrints returns the block fingerprints of a size-byte file that lay
// describes, as a commit of its bytes would compute them.
func layoutPrints(lay *manifest.Layout, size int64) []fingerprint {
	if size <= hashing.BlockLen {
		return nil
	}
	pieces := make([]piece, 0, len(lay.Pieces))
	var off int64
	for _, pc := range lay.Pieces {
		if pc.IsInline() {
			// In parts as long as a commit's scan reads them.
			for at := int64(0); at < pc.Len; at += hashing.MaxRange {
				n := min(hashing.MaxRange, pc.Len-at)
				pieces = append(pieces, piece{off + at, n, hashing.Sum(pc.Inline[at : at+n])})
			}
		} else {
			pieces = append(pieces, piece{off, pc.Len, pc.ID}) // a chunk's, or a derived piece's recorded hash
		}
		off += pc.Len
	}
	return blockPrints(pieces, size)
}

// blockSet is one file version's entry in the block cache.
type blockSet struct {
	gen    uint32 // commits whose digests reused values since all were computed
	prints []fingerprint
	cvs    []hashing.CV
	seed   uint64 // of the quick table
	quick  []byte // the quick table's records, as encoded
}

const quickRecordLen = 16 + 4 + 32

// quickRecords gathers the records of a quick table under seed, encoded
// as the table holds them (Quick, length, ID: 52 bytes, where a struct
// and then its encoding would take 108 for each of a commit's 500,000
// tiles); a nil *quickRecords gathers nothing.
type quickRecords struct {
	seed uint64
	recs []byte
}

// add records data, whose ID is id: the caller vouches for that.
func (q *quickRecords) add(data []byte, id hashing.ID) {
	if q == nil || len(data) < minQuick || len(data) > hashing.MaxRange {
		return
	}
	q.put(hashing.QuickSum(q.seed, data), int64(len(data)), id)
}

// put records that n bytes whose Quick is qs have the ID id, if n is a
// length the table takes.
func (q *quickRecords) put(qs hashing.Quick, n int64, id hashing.ID) {
	if n < minQuick || n > hashing.MaxRange {
		return
	}
	q.recs = append(q.recs, qs[:]...)
	q.recs = binary.LittleEndian.AppendUint32(q.recs, uint32(n))
	q.recs = append(q.recs, id[:]...)
}

// recordTable sorts encoded records by Quick.
type recordTable []byte

func (t recordTable) Len() int { return len(t) / quickRecordLen }
func (t recordTable) Less(i, j int) bool {
	return bytes.Compare(t[i*quickRecordLen:i*quickRecordLen+16], t[j*quickRecordLen:j*quickRecordLen+16]) < 0
}
func (t recordTable) Swap(i, j int) {
	var tmp [quickRecordLen]byte
	a, b := t[i*quickRecordLen:(i+1)*quickRecordLen], t[j*quickRecordLen:(j+1)*quickRecordLen]
	copy(tmp[:], a)
	copy(a, b)
	copy(b, tmp[:])
}

// setQuick makes q's records, in any order, s's quick table, sorting them
// where they are. A Quick given with two lengths or IDs (a collision, in
// theory) is left out, so that those bytes are hashed.
func (s *blockSet) setQuick(q *quickRecords) {
	t := recordTable(q.recs[:len(q.recs)/quickRecordLen*quickRecordLen])
	sort.Sort(t)
	w := 0
	for i, n := 0, t.Len(); i < n; {
		rec := t[i*quickRecordLen : (i+1)*quickRecordLen]
		j, clash := i+1, false
		for ; j < n && bytes.Equal(t[j*quickRecordLen:j*quickRecordLen+16], rec[:16]); j++ {
			clash = clash || !bytes.Equal(t[j*quickRecordLen:(j+1)*quickRecordLen], rec)
		}
		if !clash {
			w += copy(t[w:], rec)
		}
		i = j
	}
	s.seed, s.quick = q.seed, t[:w]
}

// known returns the ID of n bytes whose Quick under s.seed is q, if the
// quick table has them.
func (s *blockSet) known(q hashing.Quick, n int64) (hashing.ID, bool) {
	if n < minQuick {
		return hashing.ID{}, false
	}
	recs := len(s.quick) / quickRecordLen
	i := sort.Search(recs, func(i int) bool { return bytes.Compare(s.quick[i*quickRecordLen:i*quickRecordLen+16], q[:]) >= 0 })
	if i == recs {
		return hashing.ID{}, false
	}
	rec := s.quick[i*quickRecordLen : (i+1)*quickRecordLen]
	if hashing.Quick(rec[:16]) != q || int64(binary.LittleEndian.Uint32(rec[16:])) != n {
		return hashing.ID{}, false
	}
	return hashing.ID(rec[20:]), true
}

// reuse returns, for block i of a new version with the given prints, the
// chaining value this set holds for it when the block is unchanged.
func (s *blockSet) reuse(prints []fingerprint) func(i int) (hashing.CV, bool) {
	return func(i int) (hashing.CV, bool) {
		if s == nil || i >= len(s.prints) || i >= len(prints) || prints[i] == (fingerprint{}) || prints[i] != s.prints[i] {
			return hashing.CV{}, false
		}
		return s.cvs[i], true
	}
}

// blocksRel is the block cache entry of a version, relative to .git.
func blocksRel(digest hashing.ID) string { return "chunkvc/blocks/" + digest.String() }

// loadBlocks returns the cached blocks of the version of a size-byte file
// whose digest is digest, or nil when there is no usable entry.
func (r *Repo) loadBlocks(digest hashing.ID, size int64) *blockSet {
	t := r.gitTree()
	defer t.Close()
	data, err := t.ReadFile(blocksRel(digest), confine.NoLimit)
	if err != nil {
		return nil
	}
	s, err := decodeBlocks(data, size)
	if err != nil || s.gen >= maxGeneration-1 {
		return nil
	}
	if root, err := hashing.BlockRoot(s.cvs); err != nil || root != digest {
		return nil
	}
	return s
}

func (r *Repo) blocksPath(digest hashing.ID) string {
	return filepath.Join(r.gitDir(), filepath.FromSlash(blocksRel(digest)))
}

// version names one version of a file: its digest and size.
type version struct {
	digest hashing.ID
	size   int64
}

// saveBlocks caches the blocks of a file version and drops the entries of
// the versions it replaces (zero IDs are skipped). Failures are ignored:
// the cache only saves time.
func (r *Repo) saveBlocks(digest hashing.ID, size int64, s *blockSet, replaced ...hashing.ID) {
	if len(s.cvs) < 2 || len(s.prints) != len(s.cvs) {
		return
	}
	t := r.gitTree()
	defer t.Close()
	_ = t.WriteFile(blocksRel(digest), encodeBlocks(size, s), false)
	for _, old := range replaced {
		if !old.IsZero() && old != digest {
			// Another file with the same bytes loses its entry too;
			// it is hashed whole once, no more.
			_ = t.Remove(blocksRel(old))
		}
	}
}

func encodeBlocks(size int64, s *blockSet) []byte {
	out := make([]byte, 0, len(blocksMagic)+16+len(s.cvs)*48+12+len(s.quick)+32)
	out = append(out, blocksMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(size))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s.cvs)))
	out = binary.LittleEndian.AppendUint32(out, s.gen)
	for i := range s.cvs {
		out = append(out, s.prints[i][:]...)
		out = append(out, s.cvs[i][:]...)
	}
	out = binary.LittleEndian.AppendUint64(out, s.seed)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s.quick)/quickRecordLen))
	out = append(out, s.quick...)
	sum := hashing.Sum(out)
	return append(out, sum[:]...)
}

func decodeBlocks(data []byte, size int64) (*blockSet, error) {
	const head = len(blocksMagic) + 16
	if len(data) < head+32 || !bytes.HasPrefix(data, []byte(blocksMagic)) {
		return nil, errors.New("not a block cache entry")
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if got := hashing.Sum(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("block cache entry: checksum mismatch")
	}
	if got := int64(binary.LittleEndian.Uint64(body[len(blocksMagic):])); got != size {
		return nil, fmt.Errorf("block cache entry for %d bytes, file has %d", got, size)
	}
	n := int64(binary.LittleEndian.Uint32(body[len(blocksMagic)+8:]))
	if want := (size + hashing.BlockLen - 1) / hashing.BlockLen; n != want || int64(len(body)-head) < n*48+12 {
		return nil, fmt.Errorf("block cache entry: %d blocks in %d bytes for a %d-byte file", n, len(body)-head, size)
	}
	table := body[head+int(n)*48:]
	seed, recs := binary.LittleEndian.Uint64(table), int64(binary.LittleEndian.Uint32(table[8:]))
	table = table[12:]
	if int64(len(table)) != recs*quickRecordLen {
		return nil, fmt.Errorf("block cache entry: %d quick records in %d bytes", recs, len(table))
	}
	for i := range recs {
		rec := table[i*quickRecordLen:]
		if n := binary.LittleEndian.Uint32(rec[16:]); n < minQuick || n > hashing.MaxRange {
			return nil, fmt.Errorf("block cache entry: quick record %d for %d bytes", i, n)
		}
		if i > 0 && bytes.Compare(table[(i-1)*quickRecordLen:(i-1)*quickRecordLen+16], rec[:16]) >= 0 {
			return nil, fmt.Errorf("block cache entry: quick record %d out of order", i)
		}
	}
	s := &blockSet{gen: binary.LittleEndian.Uint32(body[len(blocksMagic)+12:]), prints: make([]fingerprint, n), cvs: make([]hashing.CV, n),
		seed: seed, quick: table}
	for i := range n {
		rec := body[head+int(i)*48:]
		copy(s.prints[i][:], rec[:16])
		copy(s.cvs[i][:], rec[16:48])
	}
	return s, nil
}

// pruneBlocks removes the block cache entries of versions that no working
// file has any more (deleted files, commits that failed): gc's job, as the
// entries of replaced versions are removed by the commits that replace
// them.
func (r *Repo) pruneBlocks(current map[hashing.ID]bool) {
	t := r.gitTree()
	defer t.Close()
	names, err := t.List("chunkvc/blocks", "")
	if err != nil {
		return
	}
	for _, n := range names {
		if id, err := hashing.ParseID(n); err == nil && current[id] {
			continue
		}
		_ = t.Remove("chunkvc/blocks/" + n)
	}
}
