package hashing

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"lukechampine.com/blake3/guts"
)

// SumMany sets out[i] to the ID of pieces[i], as Sum would, and is faster
// when the pieces are many and small (a COG's tiles): Sum hashes one piece
// at a time, 16 BLAKE3 chunks a step, so the last step of each piece runs
// partly empty and its last partial chunk goes through scalar code. SumMany
// fills the 16 lanes of each step with chunks of any pieces, then merges
// their chaining values into each piece's tree with the parent nodes of all
// pieces 16 at a time. It runs on the caller's goroutine; len(out) must be
// at least len(pieces).
func SumMany(pieces [][]byte, out []ID) {
	m := manyPool.Get().(*many)
	m.sum(pieces, out)
	manyPool.Put(m)
}

var manyPool = sync.Pool{New: func() any { return new(many) }}

// BLAKE3's domain flags.
const (
	flagChunkStart = 1 << 0
	flagChunkEnd   = 1 << 1
	flagParent     = 1 << 2
	flagRoot       = 1 << 3
)

// lanes16 is what x16 reads: 16 independent chains of BLAKE3
// compressions, lane l compressing blocks 0..last[l] of the 64-byte blocks
// at ptr[l] (all of blocks·64 bytes must be readable, whatever last is),
// starting from the IV, and writing its chaining value to dst[l]. Block b
// of lane l gets counter ctr, length 64 (lastLen[l] for its last block)
// and flags base | start (b = 0) | end (b = last). x16 writes the results
// once it has read every block: a dst may be another lane's input. Keep in
// step with x16gen.
type lanes16 struct {
	ptr     [16]unsafe.Pointer
	dst     [16]*[8]uint32
	ctrLo   [16]uint32
	ctrHi   [16]uint32
	last    [16]uint32
	lastLen [16]uint32
	base    [16]uint32
	start   [16]uint32
	end     [16]uint32
	blocks  uint64 // 1..16: blocks to run, more than every lane's last
}

// maxManyChunks bounds the chunk chaining values SumMany holds at once
// (32 bytes each); a piece of more chunks goes to guts (subtree), for
// which it is long enough that the partly empty last step costs little.
const maxManyChunks = 4096

// many is the state of one SumMany call.
type many struct {
	j    lanes16
	n    int                // lanes filled
	sink [8]uint32          // the results of idle lanes
	pad  [16][chunkLen]byte // partial last chunks, zero-padded
	cvs  [][8]uint32        // the nodes of the pieces being merged
	todo []manyPiece
}

type manyPiece struct {
	i     int    // index in pieces
	at, n int    // its nodes: cvs[at : at+n]
	root  uint32 // flagRoot, or 0 for a subtree's chaining value
}

// subtreeCV returns the chaining value of b as the subtree of a larger
// message whose first chunk has index counter (see subtree for what b and
// counter must be); b must be at most maxManyChunks chunks and not empty.
// Without x16 it is guts' subtree.
func (m *many) subtreeCV(b []byte, counter uint64) [8]uint32 {
	if !haveX16 {
		return guts.ChainingValue(subtree(b, counter))
	}
	if m.cvs == nil {
		m.cvs = make([][8]uint32, 0, maxManyChunks)
	}
	n := (len(b) + chunkLen - 1) / chunkLen
	m.n, m.cvs, m.todo = 0, m.cvs[:0], m.todo[:0] // a fault on b may have left lanes
	m.chunks(b, 0, counter, 0)
	m.todo = append(m.todo, manyPiece{n: n})
	m.flush()
	m.parents()
	return m.cvs[0]
}

// sum is SumMany with m's state; without x16 it is Sum of each piece.
func (m *many) sum(pieces [][]byte, out []ID) {
	if !haveX16 {
		for i, p := range pieces {
			out[i] = Sum(p)
		}
		return
	}
	if m.cvs == nil {
		m.cvs = make([][8]uint32, 0, maxManyChunks)
	}
	m.n = 0
	for i := 0; i < len(pieces); {
		// A group of pieces whose chunks fit in cvs.
		m.cvs, m.todo = m.cvs[:0], m.todo[:0]
		for ; i < len(pieces); i++ {
			n := (len(pieces[i]) + chunkLen - 1) / chunkLen
			if n > maxManyChunks {
				out[i] = rootID(subtree(pieces[i], 0))
				continue
			}
			if len(m.cvs)+max(n, 1) > maxManyChunks {
				break
			}
			m.chunks(pieces[i], len(m.cvs), 0, flagRoot)
			m.todo = append(m.todo, manyPiece{i: i, at: len(m.cvs) - max(n, 1), n: max(n, 1), root: flagRoot})
		}
		m.flush()
		m.parents()
		for _, p := range m.todo {
			out[p.i] = idOf(&m.cvs[p.at])
		}
	}
}

// chunks queues the chunks of p, whose chaining values go to cvs[at:];
// its first chunk has index counter, and root is the flag its last node
// gets.
func (m *many) chunks(p []byte, at int, counter uint64, root uint32) {
	n := max((len(p)+chunkLen-1)/chunkLen, 1)
	m.cvs = m.cvs[:at+n]
	end := uint32(flagChunkEnd)
	if n == 1 {
		end |= root
	}
	for c := range n {
		l := m.n
		rest := p[c*chunkLen:]
		if len(rest) >= chunkLen {
			m.j.ptr[l] = unsafe.Pointer(&rest[0])
			m.j.last[l], m.j.lastLen[l] = 15, 64
		} else { // the last, short chunk (or the empty one), zero-padded
			pad := &m.pad[l]
			k := copy(pad[:], rest)
			blocks := max((k+63)/64, 1)
			clear(pad[k : blocks*64])
			m.j.ptr[l] = unsafe.Pointer(pad)
			m.j.last[l], m.j.lastLen[l] = uint32(blocks-1), uint32(k-(blocks-1)*64)
		}
		ctr := counter + uint64(c)
		m.j.ctrLo[l], m.j.ctrHi[l] = uint32(ctr), uint32(ctr>>32)
		m.j.base[l], m.j.start[l], m.j.end[l] = 0, flagChunkStart, end
		m.j.dst[l] = &m.cvs[at+c]
		if m.n++; m.n == 16 {
			m.flush()
		}
	}
}

// parents merges each piece's nodes, a level at a time, into its root.
func (m *many) parents() {
	for {
		more := false
		for _, p := range m.todo {
			if p.n < 2 {
				continue
			}
			more = true
			var end uint32
			if p.n == 2 {
				end = p.root
			}
			for k := range p.n / 2 {
				l := m.n
				m.j.ptr[l] = unsafe.Pointer(&m.cvs[p.at+2*k])
				m.j.ctrLo[l], m.j.ctrHi[l] = 0, 0
				m.j.last[l], m.j.lastLen[l] = 0, 64
				m.j.base[l], m.j.start[l], m.j.end[l] = flagParent, 0, end
				m.j.dst[l] = &m.cvs[p.at+k]
				if m.n++; m.n == 16 {
					m.flush()
				}
			}
		}
		if !more {
			return
		}
		m.flush()
		for t := range m.todo { // an odd last node moves up as it is
			p := &m.todo[t]
			if p.n >= 2 {
				if p.n%2 == 1 {
					m.cvs[p.at+p.n/2] = m.cvs[p.at+p.n-1]
				}
				p.n = (p.n + 1) / 2
			}
		}
	}
}

// flush runs the filled lanes, which store their results.
func (m *many) flush() {
	if m.n == 0 {
		return
	}
	blocks := uint32(0)
	for l := range m.n {
		blocks = max(blocks, m.j.last[l]+1)
	}
	for l := m.n; l < 16; l++ { // idle lanes read a pad and go nowhere
		m.j.ptr[l], m.j.dst[l] = unsafe.Pointer(&m.pad[l]), &m.sink
		m.j.last[l] = 0
	}
	m.j.blocks = uint64(blocks)
	x16(&m.j)
	m.n = 0
	// A pooled many must not keep its last pieces alive.
	clear(m.j.ptr[:])
	clear(m.j.dst[:])
}

func idOf(cv *[8]uint32) ID {
	var id ID
	for w, v := range cv {
		binary.LittleEndian.PutUint32(id[4*w:], v)
	}
	return id
}
