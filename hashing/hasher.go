package hashing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"
	"lukechampine.com/blake3/guts"
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
// by (workers+1) buffers of the largest range.
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
	workers := opt.workers()
	g, ctx := errgroup.WithContext(ctx)
	jobs := make(chan int)
	pool := sync.Pool{New: func() any { return new([]byte) }}
	g.Go(func() error {
		defer close(jobs)
		for i := range ranges {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			bp := pool.Get().(*[]byte)
			defer pool.Put(bp)
			for i := range jobs {
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
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			return nil
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
	return sumReaderAt(ctx, r, size, runtime.GOMAXPROCS(0))
}

func sumReaderAt(ctx context.Context, r io.ReaderAt, size int64, workers int) (ID, error) {
	if size <= 0 {
		return Sum(nil), nil
	}
	if err := ctx.Err(); err != nil {
		return ID{}, err
	}
	if size <= blockLen {
		br := blockReader{r: r, size: size}
		defer br.close()
		b, err := br.read(0)
		if err != nil {
			return ID{}, err
		}
		return Sum(b), nil
	}
	nblocks := (size + blockLen - 1) / blockLen
	m := newMapper(r)
	if workers <= 1 {
		br := blockReader{r: r, size: size, m: m}
		defer br.close()
		var s cvStack
		for i := int64(0); ; i++ {
			if err := ctx.Err(); err != nil {
				return ID{}, err
			}
			n, err := br.node(i)
			if err != nil {
				return ID{}, err
			}
			if i == nblocks-1 {
				return rootID(s.fold(n)), nil
			}
			s.push(guts.ChainingValue(n))
		}
	}

	// A producer hands block numbers to the workers and, in the same order,
	// to the collector, which pushes the chaining values onto the tree as
	// they complete. order's capacity bounds how far the workers run ahead
	// of the slowest block.
	type job struct {
		i    int64
		cv   [8]uint32 // chaining value of block i, or
		last guts.Node // its top node if it is the last block
		done chan struct{}
	}
	if int64(workers) > nblocks {
		workers = int(nblocks)
	}
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan *job)
	order := make(chan *job, 2*workers)
	g.Go(func() error {
		defer close(jobs)
		defer close(order)
		for i := int64(0); i < nblocks; i++ {
			j := &job{i: i, done: make(chan struct{})}
			select {
			case order <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
			select {
			case jobs <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for range workers {
		g.Go(func() error {
			br := blockReader{r: r, size: size, m: m}
			defer br.close()
			for j := range jobs {
				n, err := br.node(j.i)
				if err != nil {
					return err
				}
				if j.i == nblocks-1 {
					j.last = n
				} else {
					j.cv = guts.ChainingValue(n)
				}
				close(j.done)
				if err := gctx.Err(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var id ID
	g.Go(func() error {
		var s cvStack
		for j := range order {
			select {
			case <-j.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			if j.i == nblocks-1 {
				id = rootID(s.fold(j.last))
				return nil
			}
			s.push(j.cv)
		}
		return gctx.Err()
	})
	if err := g.Wait(); err != nil {
		return ID{}, err
	}
	return id, nil
}

// blockReader gets the blocks of a size-byte file for one goroutine.
type blockReader struct {
	r    io.ReaderAt
	size int64
	m    *mapper // nil: read every block
	buf  *block  // from blocks, taken when first needed
}

// node returns the top node of block i's subtree.
func (br *blockReader) node(i int64) (guts.Node, error) {
	counter := uint64(i) * (blockLen / chunkLen)
	if br.m != nil {
		off := i * blockLen
		if n, ok := br.m.node(off, int(min(blockLen, br.size-off)), counter); ok {
			return n, nil
		}
	}
	b, err := br.read(i)
	if err != nil {
		return guts.Node{}, err
	}
	return subtree(b, counter), nil
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
}
