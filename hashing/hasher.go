package hashing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// MaxRange is the largest range HashRanges accepts. Adapters split anything
// larger, so a worker buffer never exceeds it.
const MaxRange = 32 << 20

// Range is a byte range of a file.
type Range struct {
	Off, Len int64
}

// Options tunes HashRanges. The zero value means GOMAXPROCS workers.
type Options struct {
	Workers int
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// HashRanges reads every range of r with ReadAt, hashes it on a bounded pool
// of workers and calls fn(i, id, data) for ranges[i].
//
// fn runs on worker goroutines, possibly concurrently with itself, in no
// particular order; data is only valid until fn returns. The first error
// from reading or from fn cancels the rest and is returned. Memory is bounded
// by one buffer of the largest range per worker.
func HashRanges(ctx context.Context, r io.ReaderAt, ranges []Range, opt Options, fn func(i int, id ID, data []byte) error) error {
	return hashRanges(ctx, r, ranges, opt, Sum, fn)
}

// hashRanges is HashRanges with the hash function as a parameter, so that
// benchmarks can compare hash implementations.
func hashRanges(ctx context.Context, r io.ReaderAt, ranges []Range, opt Options, sum func([]byte) ID, fn func(i int, id ID, data []byte) error) error {
	for i, rg := range ranges {
		if rg.Off < 0 || rg.Len < 0 || rg.Len > MaxRange {
			return fmt.Errorf("range %d (offset %d, length %d): outside 0..%d bytes", i, rg.Off, rg.Len, MaxRange)
		}
	}
	workers := min(opt.workers(), max(len(ranges), 1))
	g, ctx := errgroup.WithContext(ctx)
	pool := sync.Pool{New: func() any { return new([]byte) }}
	// Workers take the next range from a counter: a goroutine handing out
	// indexes through a channel has to be scheduled for every range, and
	// with every core hashing it waits for one (25,000 tiles a gigabyte).
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			bp := pool.Get().(*[]byte)
			defer pool.Put(bp)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ranges) {
					return nil
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				rg := ranges[i]
				if int64(cap(*bp)) < rg.Len {
					*bp = make([]byte, rg.Len)
				}
				buf := (*bp)[:rg.Len]
				if err := readFull(r, buf, rg.Off); err != nil {
					return fmt.Errorf("read bytes %d..%d: %w", rg.Off, rg.Off+rg.Len, err)
				}
				if err := fn(i, sum(buf), buf); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// readFull is ReadAt that treats a short read as io.ErrUnexpectedEOF.
func readFull(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// blockLen is SumReaderAt's unit of work: 1024 chunks, a complete subtree
// when it starts at a multiple of 1 MiB.
const blockLen = 1 << 20

type block = [blockLen]byte

// blocks recycles SumReaderAt's read buffers across calls.
var blocks = sync.Pool{New: func() any { return new(block) }}

// SumReaderAt returns the ID of size bytes of r from offset 0. It hashes
// 1 MiB blocks on GOMAXPROCS goroutines, each holding one block: mapped into
// memory if r is an *os.File on a Unix system, else read with ReadAt into a
// buffer. A read error is wrapped with the byte range; cancelling ctx stops
// the work and returns ctx.Err().
func SumReaderAt(ctx context.Context, r io.ReaderAt, size int64) (ID, error) {
	id, _, err := sumReaderAt(ctx, r, size, runtime.GOMAXPROCS(0), nil, false)
	return id, err
}

// BlockLen is the span of the blocks whose chaining values SumBlocks
// returns and reuses: 1 MiB, a complete BLAKE3 subtree when aligned.
const BlockLen = blockLen

// CV is the BLAKE3 chaining value of one block of a file: it stands for the
// block's bytes at the block's place in the file's tree. The digest of a
// file follows from the CVs of its blocks (BlockRoot).
type CV [32]byte

// SumBlocks is SumReaderAt that also returns the CV of every BlockLen block
// of a file of more than one block (the last one may be short); files of
// one block or less return no CVs. For block i with reuse(i) true it takes
// the CV reuse gives instead of reading the block: the caller vouches that
// the block's bytes are those that CV was computed from, at the same
// offset. reuse may be nil.
func SumBlocks(ctx context.Context, r io.ReaderAt, size int64, reuse func(i int) (CV, bool)) (ID, []CV, error) {
	var have func(i int64) ([8]uint32, bool)
	if reuse != nil {
		have = func(i int64) ([8]uint32, bool) {
			cv, ok := reuse(int(i))
			return cv.words(), ok
		}
	}
	return sumReaderAt(ctx, r, size, runtime.GOMAXPROCS(0), have, true)
}

// BlockRoot returns the digest of a file of more than one block from the CVs
// of all its blocks, as SumBlocks returned them.
func BlockRoot(cvs []CV) (ID, error) {
	if len(cvs) < 2 {
		return ID{}, fmt.Errorf("a digest from %d block CVs: need 2 or more", len(cvs))
	}
	var s cvStack
	for _, cv := range cvs[:len(cvs)-1] {
		s.push(cv.words())
	}
	return rootID(s.foldCV(cvs[len(cvs)-1].words())), nil
}

func blocksOf(size int64) int64 { return (size + blockLen - 1) / blockLen }

func (c CV) words() (w [8]uint32) {
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(c[4*i:])
	}
	return w
}

func cvOf(w [8]uint32) (c CV) {
	for i, x := range w {
		binary.LittleEndian.PutUint32(c[4*i:], x)
	}
	return c
}

// sumReaderAt is SumReaderAt on workers goroutines. For a file of more than
// one block, have (when not nil) gives the chaining values of blocks it
// need not read, and with wantCVs every block's CV is returned.
func sumReaderAt(ctx context.Context, r io.ReaderAt, size int64, workers int, have func(i int64) ([8]uint32, bool), wantCVs bool) (ID, []CV, error) {
	if size <= 0 {
		return Sum(nil), nil, nil
	}
	if err := ctx.Err(); err != nil {
		return ID{}, nil, err
	}
	if size <= blockLen {
		br := blockReader{r: r, size: size}
		defer br.close()
		b, err := br.read(0)
		if err != nil {
			return ID{}, nil, err
		}
		return Sum(b), nil, nil
	}
	nblocks := blocksOf(size)
	m := newMapper(r)
	// cv returns block i's chaining value, from have or hashed.
	cv := func(br *blockReader, i int64) ([8]uint32, error) {
		if have != nil {
			if w, ok := have(i); ok {
				return w, nil
			}
		}
		return br.cv(i)
	}
	// The last block's CV stands in for its node: with more than one block
	// it is a child of a parent, never the root.
	if workers <= 1 {
		var cvs []CV
		if wantCVs {
			cvs = make([]CV, nblocks)
		}
		br := blockReader{r: r, size: size, m: m}
		defer br.close()
		var s cvStack
		for i := int64(0); ; i++ {
			if err := ctx.Err(); err != nil {
				return ID{}, nil, err
			}
			w, err := cv(&br, i)
			if err != nil {
				return ID{}, nil, err
			}
			if cvs != nil {
				cvs[i] = cvOf(w)
			}
			if i == nblocks-1 {
				return rootID(s.foldCV(w)), cvs, nil
			}
			s.push(w)
		}
	}

	// Workers take block numbers from a counter and leave each block's
	// chaining value in its slot; the tree over them is folded at the end
	// (a parent compression per block, next to 1024 chunk compressions).
	// No goroutine hands out work or collects it in order: with every core
	// hashing, such a goroutine would wait to be scheduled for each block.
	if int64(workers) > nblocks {
		workers = int(nblocks)
	}
	words := make([][8]uint32, nblocks)
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range workers {
		g.Go(func() error {
			br := blockReader{r: r, size: size, m: m}
			defer br.close()
			for {
				i := next.Add(1) - 1
				if i >= nblocks {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				w, err := cv(&br, i)
				if err != nil {
					return err
				}
				words[i] = w
			}
		})
	}
	if err := g.Wait(); err != nil {
		return ID{}, nil, err
	}
	id, all := foldBlocks(words, wantCVs)
	return id, all, nil
}

// foldBlocks returns the digest of a file of two or more blocks from their
// chaining values, and with wantCVs those values as CVs.
func foldBlocks(words [][8]uint32, wantCVs bool) (ID, []CV) {
	var cvs []CV
	if wantCVs {
		cvs = make([]CV, len(words))
		for i, w := range words {
			cvs[i] = cvOf(w)
		}
	}
	var st cvStack
	for _, w := range words[:len(words)-1] {
		st.push(w)
	}
	return rootID(st.foldCV(words[len(words)-1])), cvs
}

// blockReader gets the blocks of a size-byte file for one goroutine.
type blockReader struct {
	r    io.ReaderAt
	size int64
	m    *mapper // nil: read every block
	buf  *block  // from blocks, taken when first needed
	x    *many   // from manyPool, taken when first needed
}

// blockHash returns the chaining value of b as the subtree whose first
// chunk has index counter (see subtree).
type blockHash func(b []byte, counter uint64) [8]uint32

// cv returns the chaining value of block i.
func (br *blockReader) cv(i int64) ([8]uint32, error) {
	counter := uint64(i) * (blockLen / chunkLen)
	if br.m != nil {
		off := i * blockLen
		if w, ok := br.m.cv(off, int(min(blockLen, br.size-off)), counter, br.hash); ok {
			return w, nil
		}
	}
	b, err := br.read(i)
	if err != nil {
		return [8]uint32{}, err
	}
	return br.hash(b, counter), nil
}

func (br *blockReader) hash(b []byte, counter uint64) [8]uint32 {
	if br.x == nil {
		br.x = manyPool.Get().(*many)
	}
	return br.x.subtreeCV(b, counter)
}

// read reads block i into br's buffer.
func (br *blockReader) read(i int64) ([]byte, error) {
	if br.buf == nil {
		br.buf = blocks.Get().(*block)
	}
	off := i * blockLen
	b := br.buf[:min(blockLen, br.size-off)]
	if err := readFull(br.r, b, off); err != nil {
		return nil, fmt.Errorf("read bytes %d..%d: %w", off, off+int64(len(b)), err)
	}
	return b, nil
}

func (br *blockReader) close() {
	if br.buf != nil {
		blocks.Put(br.buf)
		br.buf = nil
	}
	if br.x != nil {
		manyPool.Put(br.x)
		br.x = nil
	}
}
