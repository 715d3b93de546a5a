package local

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/chunkvc/chunkvc/internal/writeback"
)

// Segments of a batch's pack; variables so that tests can shrink them.
var (
	// segmentSize: a batch gathers its pack in segments of this many bytes
	// (a multiple of directAlign) and writes each one whole.
	segmentSize = 4 << 20
	// segments: at most this many are held at once: one filling, the
	// others full and waiting for copies still in progress or being
	// written.
	segments = 4
)

// noDirect makes stagers write through the page cache (tests).
var noDirect bool

// directWrites counts segments written with O_DIRECT; liveSegments and
// peakSegments the segment buffers held (tests).
var directWrites, liveSegments, peakSegments atomic.Int64

// directAlign is what O_DIRECT asks of buffer addresses, file offsets and
// lengths on the file systems chunkvc meets (logical block sizes of 512 or
// 4096 bytes).
const directAlign = 4096

// stager writes a batch's pack in whole segments from aligned buffers, with
// O_DIRECT where the file system allows it. A commit's pack is written once
// and read rarely, so going around the page cache saves copying it there,
// the writeback work and, on a 1 GB commit, about half a second of CPU;
// Commit's fsync then has only the file's metadata and last bytes left.
// Where O_DIRECT is refused, the same segments are written through the page
// cache and their writeback is started at once.
//
// reserve (and append) are called with the batch's lock held, so space in
// a pack is handed out in order; the bytes are copied into their spans
// without it, by the Puts in parallel, and the last copy into a full
// segment sends it to be written in the background, at most segments-1 at
// once.
type stager struct {
	f       *os.File
	direct  atomic.Bool  // f has O_DIRECT set
	refused *atomic.Bool // set when a write with O_DIRECT was refused

	cur *segment // being reserved; nil before the first and when full
	off int64    // file offset of the next segment to start

	mu       sync.Mutex
	cond     sync.Cond
	free     [][]byte // written segments' buffers
	maps     [][]byte // every buffer, to unmap
	made     int      // buffers allocated
	released bool     // buffers unmapped: nothing more is written
	flying   int      // segments being written
	copying  int      // reserved spans not yet copied
	err      error    // of the first failed write
}

// newStager returns a stager for the pack file f. It tries O_DIRECT when
// direct says to; refused, when not nil, records that the file system
// refused it, so that the store's later packs do not try again.
func newStager(f *os.File, direct bool, refused *atomic.Bool) *stager {
	s := &stager{f: f, refused: refused}
	s.direct.Store(direct && !noDirect && setDirect(f, true) == nil)
	s.cond.L = &s.mu
	return s
}

// segment is one buffer of the pack being filled.
type segment struct {
	buf     []byte // segmentSize bytes; the header never changes
	n       int    // bytes reserved; guarded by the batch's lock
	off     int64  // file offset of buf[0]
	pending int    // reservations not yet copied; guarded by stager.mu
	sealed  bool   // no more reservations; guarded by stager.mu
}

// span is a reserved part of a segment.
type span struct {
	seg *segment
	b   []byte // within seg.buf
}

// reserve reserves the next n bytes of the pack in the current segment, if
// they fit there, and returns where they go; the caller copies them in
// without the lock and calls done. Bytes that would cross into another
// segment are not reserved (ok false): append copies them at once instead,
// as a caller holding a span must not wait for a buffer that its own copy
// frees. Called with the batch's lock held.
func (s *stager) reserve(n int) (sp span, ok bool, err error) {
	if s.cur == nil {
		b, err := s.take()
		if err != nil {
			return span{}, false, err
		}
		s.cur = &segment{buf: b[:cap(b)], off: s.off}
	}
	seg := s.cur
	lo := seg.n
	if n > len(seg.buf)-lo {
		return span{}, false, nil
	}
	seg.n += n
	s.mu.Lock()
	defer s.mu.Unlock()
	seg.pending++
	s.copying++
	if seg.n == len(seg.buf) {
		seg.sealed = true
		s.cur, s.off = nil, s.off+int64(len(seg.buf))
	}
	return span{seg, seg.buf[lo : lo+n]}, true, nil
}

// fill copies p into sp, which reserve returned for it, and marks it done.
func (s *stager) fill(sp span, p []byte) {
	copy(sp.b, p)
	s.done(sp)
}

// done records that a span was copied; the last copy into a sealed segment
// sends it.
func (s *stager) done(sp span) {
	s.mu.Lock()
	sp.seg.pending--
	s.copying--
	ready := sp.seg.sealed && sp.seg.pending == 0
	if ready {
		// Counted as flying before the copy stops counting: wait must
		// never see neither, or release could unmap the segment
		// before it is written.
		s.flying++
	}
	if s.copying == 0 {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	if ready {
		if testHookBeforeSend != nil {
			testHookBeforeSend()
		}
		s.send(sp.seg)
	}
}

// Test hooks: testHookBeforeSend runs between a segment's last copy and its
// send; testFinishErr, when set, is what finish returns.
var (
	testHookBeforeSend func()
	testFinishErr      error
)

// append adds p at the end of the pack, copying it before it returns (and
// before it waits for each next buffer). Called with the batch's lock held.
func (s *stager) append(p []byte) error {
	for len(p) > 0 {
		if s.cur == nil {
			b, err := s.take()
			if err != nil {
				return err
			}
			s.cur = &segment{buf: b[:cap(b)], off: s.off}
		}
		k := min(len(p), len(s.cur.buf)-s.cur.n)
		sp, _, err := s.reserve(k) // fits: no wait
		if err != nil {
			return err
		}
		s.fill(sp, p[:k])
		p = p[k:]
	}
	return nil
}

// take returns an empty buffer, waiting for a segment write to free one
// once segments are allocated.
func (s *stager) take() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.free) == 0 && s.made == segments && s.err == nil && !s.released {
		s.cond.Wait()
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.released { // a stray reserve fails instead of waiting for a buffer
		return nil, fmt.Errorf("write %s: %w", s.f.Name(), errReleased)
	}
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		return b[:0], nil
	}
	b, err := mapSegment(segmentSize)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	s.made++
	s.maps = append(s.maps, b)
	if n := liveSegments.Add(1); n > peakSegments.Load() {
		peakSegments.Store(n)
	}
	return b[:0], nil
}

// send writes a full segment in the background; the caller has counted it
// in flying.
func (s *stager) send(seg *segment) {
	b, off := seg.buf[:seg.n], seg.off
	go func() {
		err := s.write(b, off)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.free = append(s.free, b)
		s.flying--
		s.cond.Broadcast()
	}()
}

func (s *stager) write(b []byte, off int64) error {
	direct := s.direct.Load()
	_, err := s.f.WriteAt(b, off)
	if errors.Is(err, syscall.EINVAL) && direct {
		// Some file systems take the flag and then refuse the writes:
		// write through the page cache from now on. Several writes in
		// flight can each see EINVAL; turning the flag off again is
		// harmless.
		if err = setDirect(s.f, false); err == nil {
			s.direct.Store(false)
			if s.refused != nil {
				s.refused.Store(true)
			}
			direct = false
			_, err = s.f.WriteAt(b, off)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s at %d: %w", s.f.Name(), off, err)
	}
	if direct {
		directWrites.Add(1)
	} else {
		_ = writeback.StartRange(s.f, off, int64(len(b))) // a hint; Commit's fsync reports
	}
	return nil
}

// wait waits for the copies into segments and the segment writes in
// flight, and returns the first error.
func (s *stager) wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.flying > 0 || s.copying > 0 {
		s.cond.Wait()
	}
	return s.err
}

// finish writes what is left of the last segment and waits for all writes;
// the caller then syncs f. The part of the last segment that does not fill
// a whole directAlign block is written through the page cache, which
// O_DIRECT cannot do.
func (s *stager) finish() error {
	if err := s.wait(); err != nil {
		return err
	}
	if testFinishErr != nil {
		return testFinishErr
	}
	if s.cur == nil {
		return nil
	}
	b := s.cur.buf[:s.cur.n]
	s.cur = nil
	if len(b) == 0 {
		return nil
	}
	whole := len(b) &^ (directAlign - 1)
	if whole > 0 {
		if err := s.write(b[:whole], s.off); err != nil {
			return err
		}
	}
	if whole < len(b) {
		if s.direct.Load() {
			if err := setDirect(s.f, false); err != nil {
				return fmt.Errorf("write %s: %w", s.f.Name(), err)
			}
			s.direct.Store(false)
		}
		if _, err := s.f.WriteAt(b[whole:], s.off+int64(whole)); err != nil {
			return fmt.Errorf("write %s at %d: %w", s.f.Name(), s.off+int64(whole), err)
		}
	}
	s.off += int64(len(b))
	return nil
}

// release waits for the segment writes and unmaps the buffers; the stager
// is not used again.
func (s *stager) release() {
	_ = s.wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.maps {
		unmapSegment(b)
		liveSegments.Add(-1)
	}
	s.maps, s.free, s.cur = nil, nil, nil
	s.released = true
}

var errReleased = errors.New("pack already written")
