package hashing

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// scanWindow is Scan's unit of reading: a multiple of BlockLen, so that no
// block spans two windows. 2 MiB: larger windows cost RSS (about four per
// file held at once) and gain nothing measurable; with 1 MiB ones, one
// 40 KiB tile in 25 crosses a window edge and is copied. A variable so
// that tests can make pieces cross more windows.
var scanWindow int64 = 2 << 20

// ScanOptions tunes Scan. The zero value means GOMAXPROCS workers and no
// reused blocks.
type ScanOptions struct {
	Workers int
	// Reuse, when not nil, is asked for block i of a file of more than one
	// block once fn has returned for every non-empty piece that overlaps
	// the block; when it gives a CV the block is not hashed (see SumBlocks
	// for what the caller vouches for). It runs on worker goroutines,
	// possibly concurrently with itself and with fn.
	Reuse func(i int) (CV, bool)
	// Quick, when not nil, is called for every non-empty piece with the
	// QuickSum of its bytes under QuickSeed, before the piece is hashed;
	// when it returns an ID, Scan takes that as the piece's ID instead of
	// hashing it (and fn gets it). The caller vouches that bytes with this
	// Quick and length have that ID: it saw them so under a seed of its own.
	// It runs on worker goroutines, possibly concurrently with itself and
	// with fn.
	Quick     func(i int, q Quick) (ID, bool)
	QuickSeed uint64
}

// Scan reads size bytes of r once, in windows of a few MiB, and computes
// from those same bytes both the ID of every piece (or takes it from
// opt.Quick, given the Quick of those bytes) and the file's digest, with
// the CV of every block as SumBlocks returns them. pieces must cover
// the file exactly, in order: the first at offset 0, each starting where
// the one before ends, none longer than MaxRange. So a file that changes
// while it is read cannot give pieces and a digest that disagree: the
// digest is that of the pieces' bytes, whatever they were.
//
// fn(i, id, data) is called once for each piece, on worker goroutines,
// possibly concurrently with itself and in no particular order; data is
// only valid until fn returns. The first error from reading or from fn
// cancels the rest and is returned. Memory is bounded by a few windows per
// worker and a buffer for the largest piece that crosses a window edge.
func Scan(ctx context.Context, r io.ReaderAt, size int64, pieces []Range, opt ScanOptions, fn func(i int, id ID, data []byte) error) (ID, []CV, error) {
	if err := checkCover(pieces, size); err != nil {
		return ID{}, nil, err
	}
	if size == 0 {
		for i := range pieces {
			if err := fn(i, Sum(nil), nil); err != nil {
				return ID{}, nil, err
			}
		}
		return Sum(nil), nil, nil
	}
	s := newScan(r, size, pieces, opt, fn)
	return s.run(ctx)
}

func (s *scan) run(ctx context.Context) (ID, []CV, error) {
	workers := min(Options{Workers: s.opt.Workers}.workers(), len(s.wins))
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range workers {
		g.Go(func() error {
			var sw scanWorker
			for {
				w := int(next.Add(1) - 1)
				if w >= len(s.wins) {
					return nil
				}
				if err := s.window(gctx, w, &sw); err != nil {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		for i := range s.wins { // the tasks that failed or never ran left these
			if b := s.wins[i].buf; b != nil {
				s.wins[i].buf = nil
				s.live.Add(-1)
				putWindow(b)
			}
		}
		return ID{}, nil, err
	}
	if len(s.words) == 1 {
		return s.single, nil, nil
	}
	id, cvs := foldBlocks(s.words, true)
	return id, cvs, nil
}

// checkCover reports whether pieces cover size bytes exactly, in order.
func checkCover(pieces []Range, size int64) error {
	var at int64
	for i, p := range pieces {
		if p.Off != at || p.Len < 0 || p.Len > MaxRange {
			return fmt.Errorf("piece %d (offset %d, length %d): pieces must cover the file in order from offset 0, each at most %d bytes", i, p.Off, p.Len, MaxRange)
		}
		at += p.Len
	}
	if at != size {
		return fmt.Errorf("pieces cover %d bytes of a %d-byte file", at, size)
	}
	return nil
}

// A scan is one call of Scan. Window w holds bytes [w·W, (w+1)·W). Piece i
// is hashed by the task of the window holding its last byte, from that
// window's buffer or, when it starts in an earlier window, from a copy of
// the windows it spans. Block k is hashed (or reused) by whichever task
// finishes its last overlapping piece, while the bytes are still in cache.
// A window's buffer goes back to the pool when its task, the pieces that
// cross out of it and its blocks are all done.
type scan struct {
	r      io.ReaderAt
	size   int64
	pieces []Range
	opt    ScanOptions
	fn     func(i int, id ID, data []byte) error

	wins   []scanWin
	first  []int          // first piece of each window's task
	deps   []atomic.Int32 // per block: overlapping pieces not yet done
	words  [][8]uint32    // per block: its chaining value
	single ID             // the digest of a file of one block

	live, peak atomic.Int32 // window buffers held (for tests)
}

type scanWin struct {
	ready chan struct{} // closed when buf is read or err is set
	buf   []byte        // from getWindow
	err   error
	refs  atomic.Int32
}

func newScan(r io.ReaderAt, size int64, pieces []Range, opt ScanOptions, fn func(int, ID, []byte) error) *scan {
	nwin := int((size + scanWindow - 1) / scanWindow)
	nblocks := blocksOf(size)
	s := &scan{
		r: r, size: size, pieces: pieces, opt: opt, fn: fn,
		wins:  make([]scanWin, nwin),
		first: make([]int, nwin+1),
		deps:  make([]atomic.Int32, nblocks),
		words: make([][8]uint32, nblocks),
	}
	for w := range s.wins {
		s.wins[w].ready = make(chan struct{})
		// The task's own reference, and one per block in the window.
		s.wins[w].refs.Store(1 + int32(blocksOf(min(scanWindow, size-int64(w)*scanWindow))))
	}
	w := 0
	for i, p := range pieces {
		end := s.endWin(i)
		for w < end {
			w++
			s.first[w] = i
		}
		if p.Len == 0 {
			continue
		}
		for v := p.Off / scanWindow; v < int64(end); v++ {
			s.wins[v].refs.Add(1) // a piece crossing out of window v
		}
		for k := p.Off / blockLen; k <= (p.Off+p.Len-1)/blockLen; k++ {
			s.deps[k].Add(1)
		}
	}
	for w < nwin {
		w++
		s.first[w] = len(pieces)
	}
	return s
}

// endWin returns the window whose task hashes piece i.
func (s *scan) endWin(i int) int {
	p := s.pieces[i]
	last := p.Off + p.Len - 1
	if p.Len == 0 {
		last = p.Off
	}
	return min(int(last/scanWindow), len(s.wins)-1)
}

// scanBatch is how many bytes of pieces a window's task hashes together
// (SumMany), before it hashes the blocks they complete: enough pieces to
// fill BLAKE3's 16 lanes, few enough that the blocks are still in cache.
const scanBatch = 256 << 10

// scanWorker is what one worker of a scan reuses from task to task.
type scanWorker struct {
	scratch []byte // a piece that starts in an earlier window, copied
	m       many
	data    [][]byte
	ids     []ID
	// The pieces of data that Quick did not know, and their IDs.
	todo   []int
	sub    [][]byte
	subIDs []ID
}

// window runs window w's task: read it, hash the pieces that end in it.
func (s *scan) window(ctx context.Context, w int, sw *scanWorker) error {
	win := &s.wins[w]
	off := int64(w) * scanWindow
	n := min(scanWindow, s.size-off)
	win.err = ctx.Err()
	if win.err == nil {
		for n := s.live.Add(1); ; {
			if p := s.peak.Load(); n <= p || s.peak.CompareAndSwap(p, n) {
				break
			}
		}
		win.buf = getWindow()
		if err := readFull(s.r, win.buf[:n], off); err != nil {
			win.err = fmt.Errorf("read bytes %d..%d: %w", off, off+n, err)
		}
	}
	close(win.ready) // tasks of later windows wait for it, error or not
	if win.err != nil {
		return win.err
	}
	for i := s.first[w]; i < s.first[w+1]; {
		if err := ctx.Err(); err != nil {
			return err
		}
		sw.data = sw.data[:0]
		var bytes int64
		j := i
		for ; j < s.first[w+1] && (j == i || bytes+s.pieces[j].Len <= scanBatch); j++ {
			data, err := s.pieceData(ctx, j, w, sw)
			if err != nil {
				return err
			}
			sw.data = append(sw.data, data)
			bytes += s.pieces[j].Len
		}
		if cap(sw.ids) < len(sw.data) {
			sw.ids = make([]ID, len(sw.data))
		}
		sw.ids = sw.ids[:len(sw.data)]
		s.hash(i, sw)
		for k := i; k < j; k++ {
			if err := s.done(k, w, sw.ids[k-i], sw.data[k-i], sw); err != nil {
				return err
			}
		}
		i = j
	}
	s.release(w)
	return nil
}

// hash sets sw.ids to the IDs of sw.data (pieces first, first+1, …): from
// Quick where it knows them, the others hashed together.
func (s *scan) hash(first int, sw *scanWorker) {
	if s.opt.Quick == nil {
		sw.m.sum(sw.data, sw.ids)
		return
	}
	sw.todo, sw.sub = sw.todo[:0], sw.sub[:0]
	for k, d := range sw.data {
		if len(d) > 0 {
			if id, ok := s.opt.Quick(first+k, QuickSum(s.opt.QuickSeed, d)); ok {
				sw.ids[k] = id
				continue
			}
		}
		sw.todo = append(sw.todo, k)
		sw.sub = append(sw.sub, d)
	}
	if len(sw.sub) == 0 {
		return
	}
	if cap(sw.subIDs) < len(sw.sub) {
		sw.subIDs = make([]ID, len(sw.sub))
	}
	sw.subIDs = sw.subIDs[:len(sw.sub)]
	sw.m.sum(sw.sub, sw.subIDs)
	for n, k := range sw.todo {
		sw.ids[k] = sw.subIDs[n]
	}
}

// pieceData returns the bytes of piece i, which ends in window w: in the
// window's buffer, or copied to sw.scratch when it starts in an earlier
// window (only the first piece of w's task can).
func (s *scan) pieceData(ctx context.Context, i, w int, sw *scanWorker) ([]byte, error) {
	p := s.pieces[i]
	if p.Len == 0 {
		return nil, nil
	}
	from := int(p.Off / scanWindow)
	if from == w {
		at := p.Off - int64(w)*scanWindow
		return s.wins[w].buf[at : at+p.Len], nil
	}
	if i != s.first[w] {
		return nil, fmt.Errorf("piece %d crosses into window %d but is not its first", i, w)
	}
	if int64(cap(sw.scratch)) < p.Len {
		sw.scratch = make([]byte, p.Len)
	}
	data := sw.scratch[:p.Len]
	for v := from; v < w; v++ {
		win := &s.wins[v]
		select {
		case <-win.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if win.err != nil {
			return nil, win.err
		}
	}
	for v, at := from, int64(0); v <= w; v++ {
		start := max(p.Off, int64(v)*scanWindow)
		end := min(p.Off+p.Len, int64(v+1)*scanWindow)
		at += int64(copy(data[at:], s.wins[v].buf[start-int64(v)*scanWindow:end-int64(v)*scanWindow]))
	}
	return data, nil
}

// done hands piece i, hashed, to fn, then hashes the blocks it was the
// last to finish and lets go of the earlier windows it spans.
func (s *scan) done(i, w int, id ID, data []byte, sw *scanWorker) error {
	p := s.pieces[i]
	if p.Len == 0 {
		return s.fn(i, id, nil)
	}
	if err := s.fn(i, id, data); err != nil {
		return err
	}
	for k := p.Off / blockLen; k <= (p.Off+p.Len-1)/blockLen; k++ {
		if s.deps[k].Add(-1) == 0 {
			s.block(int(k), sw)
		}
	}
	for v := int(p.Off / scanWindow); v < w; v++ {
		s.release(v)
	}
	return nil
}

// block computes block k's chaining value (the digest, for a file of one
// block), every piece over it being done.
func (s *scan) block(k int, sw *scanWorker) {
	off := int64(k) * blockLen
	w := int(off / scanWindow)
	at := off - int64(w)*scanWindow
	b := s.wins[w].buf[at : at+min(blockLen, s.size-off)]
	if len(s.words) == 1 {
		s.single = Sum(b)
	} else if cv, ok := s.reuse(k); ok {
		s.words[k] = cv.words()
	} else {
		s.words[k] = sw.m.subtreeCV(b, uint64(k)*(blockLen/chunkLen))
	}
	s.release(w)
}

func (s *scan) reuse(k int) (CV, bool) {
	if s.opt.Reuse == nil {
		return CV{}, false
	}
	return s.opt.Reuse(k)
}

func (s *scan) release(w int) {
	win := &s.wins[w]
	if win.refs.Add(-1) == 0 {
		s.live.Add(-1)
		putWindow(win.buf)
		win.buf = nil
	}
}
