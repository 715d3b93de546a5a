package hashing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

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
// by (workers+1) buffers of the largest range.
func HashRanges(ctx context.Context, r io.ReaderAt, ranges []Range, opt Options, fn func(i int, id ID, data []byte) error) error {
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
				if err := fn(i, Sum(buf), buf); err != nil {
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

// SumReaderAt hashes size bytes of r from offset 0, sequentially, with a
// fixed 1 MiB buffer.
func SumReaderAt(ctx context.Context, r io.ReaderAt, size int64) (ID, error) {
	d := New()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return ID{}, err
		}
		n := int64(len(buf))
		if size-off < n {
			n = size - off
		}
		if err := readFull(r, buf[:n], off); err != nil {
			return ID{}, fmt.Errorf("read bytes %d..%d: %w", off, off+n, err)
		}
		d.Write(buf[:n])
		off += n
	}
	return d.ID(), nil
}
