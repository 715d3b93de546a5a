package hashing

import (
	"math/bits"
	"slices"

	"github.com/zeebo/blake3"
	"lukechampine.com/blake3/guts"
)

const (
	chunkLen = guts.ChunkSize                // one BLAKE3 chunk, a leaf of the tree
	bufLen   = guts.MaxSIMD * guts.ChunkSize // 16 chunks, one guts.CompressBuffer call

	// Inputs shorter than smallLimit are hashed by zeebo/blake3 instead of
	// the guts tree code: CompressBuffer always does 16 lanes of work and
	// guts hashes a partial last chunk in pure Go, so below about 10 KiB
	// zeebo's AVX2 and SSE4.1 code is faster (BenchmarkSumSmall).
	smallLimit = 10 << 10
)

// buffer is what guts.CompressBuffer reads: all of it, even past its buflen.
type buffer = [bufLen]byte

// Sum returns the ID of b. It runs on the caller's goroutine and allocates
// nothing itself, but b escapes to the heap: x16's lanes point at it while
// they run (they are cleared before Sum returns).
func Sum(b []byte) ID {
	switch {
	case len(b) < smallLimit:
		return ID(blake3.Sum256(b))
	case haveX16 && len(b) <= maxManyChunks*chunkLen:
		m := manyPool.Get().(*many)
		var out [1]ID
		m.sum([][]byte{b}, out[:])
		manyPool.Put(m)
		return out[0]
	}
	return rootID(subtree(b, 0))
}

// rootID finalizes n, the last node of a message, as the root.
func rootID(n guts.Node) ID {
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return ID(out[:32])
}

// subtree returns the uncompressed top node of the BLAKE3 tree over b, whose
// first chunk has index counter. Finalized as root it gives the hash of b if
// counter is 0; otherwise its chaining value stands for b's chunks in a
// larger tree, which requires counter to be a multiple of the power of two
// at or above b's chunk count (b must be one aligned subtree, or the final
// chunks of a message starting at such a boundary).
func subtree(b []byte, counter uint64) guts.Node {
	var s cvStack
	for len(b) > bufLen { // hold back the last buffer: it holds the last chunk
		n := guts.CompressBuffer((*buffer)(b), bufLen, &guts.IV, counter, 0)
		s.push(guts.ChainingValue(n))
		b = b[bufLen:]
		counter += guts.MaxSIMD
	}
	return s.fold(lastBuffer(b, counter))
}

// lastBuffer returns the node over the final 0..16 chunks of a tree. Their
// counter is 16-aligned, so CompressBuffer's merge of them has the shape
// BLAKE3 gives the last chunks (the eigentrees of the tail, folded from the
// right).
func lastBuffer(b []byte, counter uint64) guts.Node {
	switch {
	case len(b) <= chunkLen: // also the empty message's single empty chunk
		return guts.CompressChunk(b, &guts.IV, counter, 0)
	case len(b) == bufLen:
		return guts.CompressBuffer((*buffer)(b), bufLen, &guts.IV, counter, 0)
	default: // CompressBuffer reads 16 chunks: pad
		var scratch buffer
		copy(scratch[:], b)
		return guts.CompressBuffer(&scratch, len(b), &guts.IV, counter, 0)
	}
}

// cvStack is BLAKE3's lazy merge stack over complete subtrees that all have
// the same power-of-two number of chunks: push merges two equal subtrees
// into their parent wherever adding one to count carries, so the entries are
// the subtrees of count's set bits, largest first.
type cvStack struct {
	cvs   [54][8]uint32 // 2^54 chunks is BLAKE3's maximum input
	n     int           // entries in cvs
	count uint64        // subtrees pushed
}

func (s *cvStack) push(cv [8]uint32) { s.pushAt(cv, 0) }

// pushAt pushes the chaining value of a subtree of 1<<level subtrees of
// the stack's unit; count must be a multiple of that.
func (s *cvStack) pushAt(cv [8]uint32, level int) {
	for c := s.count >> level; c&1 == 1; c >>= 1 {
		s.n--
		cv = guts.ChainingValue(guts.ParentNode(s.cvs[s.n], cv, &guts.IV, 0))
	}
	s.cvs[s.n] = cv
	s.n++
	s.count += 1 << level
}

// fold returns the node over everything pushed followed by last, the node of
// the chunks that end the tree. It does not change s.
func (s *cvStack) fold(last guts.Node) guts.Node {
	for i := s.n - 1; i >= 0; i-- {
		last = guts.ParentNode(s.cvs[i], guts.ChainingValue(last), &guts.IV, 0)
	}
	return last
}

// foldTop returns the node over the k smallest (last pushed) entries
// followed by last; it does not change s.
func (s *cvStack) foldTop(k int, last guts.Node) guts.Node {
	for i := s.n - 1; i >= s.n-k; i-- {
		last = guts.ParentNode(s.cvs[i], guts.ChainingValue(last), &guts.IV, 0)
	}
	return last
}

// foldCV returns the node over everything pushed followed by the subtree
// whose chaining value is last; s must hold at least one entry, as then last
// is a child and its CV all its parent needs.
func (s *cvStack) foldCV(last [8]uint32) guts.Node {
	i := s.n - 1
	n := guts.ParentNode(s.cvs[i], last, &guts.IV, 0)
	for i--; i >= 0; i-- {
		n = guts.ParentNode(s.cvs[i], guts.ChainingValue(n), &guts.IV, 0)
	}
	return n
}

func (s *cvStack) reset() { s.n, s.count = 0, 0 }

// New returns a streaming BLAKE3-256 hasher whose Sum is an ID.
func New() *Digest { return new(Digest) }

// NewBlocks returns a streaming hasher that also keeps the chaining value of
// every BlockLen block, for SumBlocks.
func NewBlocks() *Digest { return &Digest{record: true} }

// Digest is a streaming hasher; the zero value is ready to use. It gives the
// same IDs as Sum at about the same speed when written in large pieces.
type Digest struct {
	stack  cvStack // one entry per 16-chunk buffer compressed
	buf    buffer
	n      int   // bytes in buf
	record bool  // keep block CVs
	blocks []CV  // of the complete blocks so far, when recording
	x      *many // for x16, taken when first needed
}

// buffersPerBlock is how many 16-chunk buffers make a BlockLen block.
const buffersPerBlock = blockLen / bufLen

// blockLevels is how many merges of buffer subtrees make one block.
const blockLevels = 6 // 1 << 6 == buffersPerBlock

// Write adds p to the hash; it never fails.
func (d *Digest) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		if d.n == bufLen { // more follows, so buf does not hold the last chunk
			d.compress(&d.buf)
			d.n = 0
		}
		for d.n == 0 && len(p) > bufLen {
			if haveX16 {
				p = d.compressRun(p)
				continue
			}
			d.compress((*buffer)(p))
			p = p[bufLen:]
		}
		c := copy(d.buf[d.n:], p)
		d.n += c
		p = p[c:]
	}
	return written, nil
}

func (d *Digest) compress(b *buffer) {
	n := guts.CompressBuffer(b, bufLen, &guts.IV, d.stack.count*guts.MaxSIMD, 0)
	cv := guts.ChainingValue(n)
	if d.record && (d.stack.count+1)%buffersPerBlock == 0 {
		// This buffer completes a block: the block's subtree is it
		// merged with the stack's blockLevels smallest entries.
		d.blocks = append(d.blocks, cvOf(guts.ChainingValue(d.stack.foldTop(blockLevels, n))))
	}
	d.stack.push(cv)
}

// compressRun hashes, with x16, the longest run of whole buffers at the
// start of p that is one subtree of the tree being built (aligned to its
// size, at most a block) and leaves at least one byte of p, which may end
// the message; it returns the rest of p.
func (d *Digest) compressRun(p []byte) []byte {
	level := 0
	for level < blockLevels && d.stack.count%(2<<level) == 0 && (2<<level)*bufLen < len(p) {
		level++
	}
	k := 1 << level
	if d.x == nil {
		d.x = new(many)
	}
	cv := d.x.subtreeCV(p[:k*bufLen], d.stack.count*guts.MaxSIMD)
	if d.record && (d.stack.count+uint64(k))%buffersPerBlock == 0 {
		// This run completes a block: the block's subtree is it merged
		// with the stack's entries below the block's size.
		w := cv
		for i, m := d.stack.n-1, bits.OnesCount64(d.stack.count%buffersPerBlock); m > 0; i, m = i-1, m-1 {
			w = guts.ChainingValue(guts.ParentNode(d.stack.cvs[i], w, &guts.IV, 0))
		}
		d.blocks = append(d.blocks, cvOf(w))
	}
	d.stack.pushAt(cv, level)
	return p[k*bufLen:]
}

// SumBlocks returns the digest of everything written, as ID does, and the
// chaining values of its BlockLen blocks, as hashing.SumBlocks does (none
// for one block or less). The Digest must come from NewBlocks.
func (d *Digest) SumBlocks() (ID, []CV) {
	id := d.ID()
	total := d.stack.count*bufLen + uint64(d.n)
	if !d.record || total <= blockLen {
		return id, nil
	}
	// The last block: the buffers pushed since the last complete block,
	// then the held-back last one.
	last := d.lastNode()
	tail := d.stack.foldTop(bits.OnesCount64(d.stack.count%buffersPerBlock), last)
	return id, append(slices.Clone(d.blocks), cvOf(guts.ChainingValue(tail)))
}

// ID returns the digest of everything written so far.
func (d *Digest) ID() ID {
	if d.stack.count == 0 && d.n < smallLimit {
		return ID(blake3.Sum256(d.buf[:d.n]))
	}
	return rootID(d.stack.fold(d.lastNode()))
}

// lastNode returns the node over the held-back last buffer.
func (d *Digest) lastNode() guts.Node {
	counter := d.stack.count * guts.MaxSIMD
	if d.n <= chunkLen {
		return guts.CompressChunk(d.buf[:d.n], &guts.IV, counter, 0)
	}
	return guts.CompressBuffer(&d.buf, d.n, &guts.IV, counter, 0)
}

// Reset forgets everything written.
func (d *Digest) Reset() {
	d.stack.reset()
	d.n = 0
	d.blocks = d.blocks[:0]
}
