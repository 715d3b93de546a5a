package blockcache

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// blocksMagic begins an entry; the package doc gives its layout.
const blocksMagic = "chunkvc-blocks 2\n"

// MaxGeneration bounds how long chaining values are carried on: an entry
// of generation MaxGeneration-1 or more is not used (Load), so every
// MaxGeneration-th commit of a file hashes every byte. A writer that
// trusts its values less (a checkout that copied runs checked by the
// digest only) starts at a higher generation.
const MaxGeneration = 16

// minQuick: shorter pieces are always hashed with BLAKE3 (see the package
// doc).
const minQuick = 1 << 10

// NewQuickSeed returns the seed of a new quick table: random, so that no
// one who writes a file knows which bytes would share a Quick.
func NewQuickSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return binary.LittleEndian.Uint64(b[:])
}

// Fingerprint identifies the bytes of one block through the pieces that
// cover it; the zero value is never reused.
type Fingerprint [16]byte

// Piece is one segment of a file as the block cache sees it: its place and
// the BLAKE3 of its bytes.
type Piece struct {
	Off, Len int64
	ID       hashing.ID
}

// blockPrints returns the fingerprint of each BlockLen block of a size-byte
// file whose pieces, in file order, cover it exactly.
func blockPrints(pieces []Piece, size int64) []Fingerprint {
	p := newPrinter(size)
	for _, pc := range pieces {
		p.add(pc)
	}
	return p.finish()
}

// printer computes block prints from a file's pieces given one at a time,
// holding only those of the block it is at: a layout of a million pieces
// is not turned into a million Pieces at once.
type printer struct {
	size   int64
	out    []Fingerprint
	b      int64   // the next block to print
	window []Piece // pieces that may overlap block b and after, in order
}

func newPrinter(size int64) *printer {
	return &printer{size: size, out: make([]Fingerprint, (size+hashing.BlockLen-1)/hashing.BlockLen)}
}

// add takes the next piece; every block that ends at or before its start
// has all its pieces then, and is printed.
func (p *printer) add(pc Piece) {
	for p.b < int64(len(p.out)) && pc.Off >= min((p.b+1)*hashing.BlockLen, p.size) {
		p.print()
	}
	p.window = append(p.window, pc)
}

// print prints block b from the window and moves on to the next block.
func (p *printer) print() {
	start, end := p.b*hashing.BlockLen, min((p.b+1)*hashing.BlockLen, p.size)
	j := 0
	for j < len(p.window) && p.window[j].Off+p.window[j].Len <= start {
		j++
	}
	if j > 0 { // drop what no later block overlaps, reusing the space
		p.window = p.window[:copy(p.window, p.window[j:])]
	}
	k := 0
	for k < len(p.window) && p.window[k].Off < end {
		k++
	}
	p.out[p.b] = BlockPrint(p.window[:k], start, end)
	p.b++
}

// finish prints the blocks left and returns every print.
func (p *printer) finish() []Fingerprint {
	for p.b < int64(len(p.out)) {
		p.print()
	}
	return p.out
}

// BlockPrint returns the fingerprint of the block [start, end) from the
// pieces that overlap it, in order; zero if they leave a gap.
func BlockPrint(pieces []Piece, start, end int64) Fingerprint {
	// Every piece that starts before the block's end is in the print, so
	// equal prints mean equal ends too (a short last block that grew
	// gained a piece).
	buf := make([]byte, 0, 48*len(pieces))
	covered := start
	for _, p := range pieces {
		if p.Off > covered {
			return Fingerprint{} // a gap: cannot happen with a checked layout
		}
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p.Off))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p.Len))
		buf = append(buf, p.ID[:]...)
		covered = p.Off + p.Len
	}
	if covered < end {
		return Fingerprint{}
	}
	var f Fingerprint
	id := hashing.Sum(buf)
	copy(f[:], id[:])
	return f
}

// LayoutPrints returns the block fingerprints of a size-byte file that
// lay describes, as a commit of its bytes would compute them; nil for a
// file of one block or less.
func LayoutPrints(lay *manifest.Layout, size int64) []Fingerprint {
	if size <= hashing.BlockLen {
		return nil
	}
	p := newPrinter(size)
	var off int64
	for _, pc := range lay.All() {
		if pc.IsInline() {
			// In parts as long as a commit's scan reads them.
			for at := int64(0); at < pc.Len; at += hashing.MaxRange {
				n := min(hashing.MaxRange, pc.Len-at)
				p.add(Piece{off + at, n, hashing.Sum(pc.Inline[at : at+n])})
			}
		} else {
			p.add(Piece{off, pc.Len, pc.ID}) // a chunk's, or a derived piece's recorded hash
		}
		off += pc.Len
	}
	return p.finish()
}

// Set is one file version's entry in the block cache.
type Set struct {
	// Gen counts the commits whose digests reused values since all were
	// computed (see MaxGeneration).
	Gen uint32
	// Prints and CVs are the fingerprint and the chaining value of each
	// block, in order; Save keeps only sets of two blocks or more whose
	// slices are as long.
	Prints []Fingerprint
	CVs    []hashing.CV
	seed   uint64 // of the quick table
	quick  []byte // the quick table's records, as encoded
}

const quickRecordLen = 16 + 4 + 32

// Records gathers the records of a quick table under seed, encoded as
// the table holds them (Quick, length, ID: 52 bytes, where a struct and
// then its encoding would take 108 for each of a commit's 500,000
// tiles); a nil *Records gathers nothing.
type Records struct {
	seed uint64
	recs []byte
}

// NewRecords returns an empty set of records under seed, with room for n.
func NewRecords(seed uint64, n int) *Records {
	return &Records{seed: seed, recs: make([]byte, 0, n*quickRecordLen)}
}

// Add records data, whose ID is id: the caller vouches for that.
func (q *Records) Add(data []byte, id hashing.ID) {
	if q == nil || len(data) < minQuick || len(data) > hashing.MaxRange {
		return
	}
	q.Put(hashing.QuickSum(q.seed, data), int64(len(data)), id)
}

// Put records that n bytes whose Quick is qs have the ID id, if n is a
// length the table takes. The caller vouches for the ID.
func (q *Records) Put(qs hashing.Quick, n int64, id hashing.ID) {
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

// SetQuick makes q's records, in any order, s's quick table, sorting them
// where they are. A Quick given with two lengths or IDs (a collision, in
// theory) is left out, so that those bytes are hashed.
func (s *Set) SetQuick(q *Records) {
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

// KeepQuick makes prev's quick table s's: the records state facts about
// bytes, so they hold for any version.
func (s *Set) KeepQuick(prev *Set) { s.seed, s.quick = prev.seed, prev.quick }

// QuickSeed returns the seed of s's quick table, and whether the table
// holds any record (a nil set holds none).
func (s *Set) QuickSeed() (uint64, bool) {
	if s == nil {
		return 0, false
	}
	return s.seed, len(s.quick) > 0
}

// Known returns the ID of n bytes whose Quick under s's seed is q, if the
// quick table has them.
func (s *Set) Known(q hashing.Quick, n int64) (hashing.ID, bool) {
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

// Reuse returns, for block i of a new version with the given prints, the
// chaining value this set holds for it when the block is unchanged. A nil
// set reuses nothing.
func (s *Set) Reuse(prints []Fingerprint) func(i int) (hashing.CV, bool) {
	return func(i int) (hashing.CV, bool) {
		if s == nil || i >= len(s.Prints) || i >= len(prints) || prints[i] == (Fingerprint{}) || prints[i] != s.Prints[i] {
			return hashing.CV{}, false
		}
		return s.CVs[i], true
	}
}

// dir holds the entries, relative to .git.
const dir = "chunkvc/blocks"

// Rel is the entry of the version whose digest is digest, relative to
// .git.
func Rel(digest hashing.ID) string { return dir + "/" + digest.String() }

// Load returns the cached blocks of the version of a size-byte file whose
// digest is digest, from git (.git), or nil when there is no usable entry:
// missing, damaged, for another size, of generation MaxGeneration-1 or
// more, or whose chaining values do not give digest.
func Load(git *confine.Tree, digest hashing.ID, size int64) *Set {
	defer git.Close()
	data, err := git.ReadFile(Rel(digest), confine.NoLimit)
	if err != nil {
		return nil
	}
	s, err := decode(data, size)
	if err != nil || s.Gen >= MaxGeneration-1 {
		return nil
	}
	if root, err := hashing.BlockRoot(s.CVs); err != nil || root != digest {
		return nil
	}
	return s
}

// Save caches s, the blocks of the version of a size-byte file whose
// digest is digest, in git (.git), and drops the entries of the versions
// it replaces (zero IDs are skipped). A set of fewer than two blocks is
// not kept. Failures are ignored: the cache only saves time.
func Save(git *confine.Tree, digest hashing.ID, size int64, s *Set, replaced ...hashing.ID) {
	if len(s.CVs) < 2 || len(s.Prints) != len(s.CVs) {
		return
	}
	defer git.Close()
	_ = git.WriteFile(Rel(digest), encode(size, s), false)
	for _, old := range replaced {
		if !old.IsZero() && old != digest {
			// Another file with the same bytes loses its entry too;
			// it is hashed whole once, no more.
			_ = git.Remove(Rel(old))
		}
	}
}

// encode returns the entry of s for a size-byte file (see the package doc).
func encode(size int64, s *Set) []byte {
	out := make([]byte, 0, len(blocksMagic)+16+len(s.CVs)*48+12+len(s.quick)+32)
	out = append(out, blocksMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(size))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s.CVs)))
	out = binary.LittleEndian.AppendUint32(out, s.Gen)
	for i := range s.CVs {
		out = append(out, s.Prints[i][:]...)
		out = append(out, s.CVs[i][:]...)
	}
	out = binary.LittleEndian.AppendUint64(out, s.seed)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s.quick)/quickRecordLen))
	out = append(out, s.quick...)
	sum := hashing.Sum(out)
	return append(out, sum[:]...)
}

// decode returns the set an entry holds for a size-byte file, or an error
// if it is not one, whole and undamaged, for that size.
func decode(data []byte, size int64) (*Set, error) {
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
	s := &Set{Gen: binary.LittleEndian.Uint32(body[len(blocksMagic)+12:]), Prints: make([]Fingerprint, n), CVs: make([]hashing.CV, n),
		seed: seed, quick: table}
	for i := range n {
		rec := body[head+int(i)*48:]
		copy(s.Prints[i][:], rec[:16])
		copy(s.CVs[i][:], rec[16:48])
	}
	return s, nil
}

// Prune removes from git (.git) the entries of versions not in current,
// those that no working file has any more (deleted files, commits that
// failed): gc's job, as the entries of replaced versions are removed by
// the commits that replace them.
func Prune(git *confine.Tree, current map[hashing.ID]bool) {
	defer git.Close()
	names, err := git.List(dir, "")
	if err != nil {
		return
	}
	for _, n := range names {
		if id, err := hashing.ParseID(n); err == nil && current[id] {
			continue
		}
		_ = git.Remove(dir + "/" + n)
	}
}
