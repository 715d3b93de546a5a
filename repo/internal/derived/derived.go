package derived

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/generic"
	"github.com/chunkvc/chunkvc/hashing"
)

// Check makes sure every derived segment of l really is what d (the
// adapter's Deriver, nil if it has none) regenerates from f, as checkout
// will regenerate it; a segment that is not becomes content-defined
// chunks instead, in l. It returns the hashes of each derived segment's
// bytes by offset: whole, and in the parts the scan reads when it is
// longer than one.
func Check(ctx context.Context, d formats.Deriver, l *formats.Layout, f io.ReaderAt, size int64) (map[int64]Hash, error) {
	out := map[int64]Hash{}
	var segs []formats.Segment // once a segment is replaced: the new list so far
	changed := false
	for i, s := range l.Segments {
		if !s.IsDerived() {
			if changed {
				segs = append(segs, s)
			}
			continue
		}
		if d != nil {
			same, err := Derives(ctx, d, f, size, s)
			if err != nil {
				return nil, err
			}
			if same {
				h, err := hashOf(ctx, f, s)
				if err != nil {
					return nil, err
				}
				out[s.Off] = h
				if changed {
					segs = append(segs, s)
				}
				continue
			}
		}
		parts, err := generic.Split(ctx, f, s.Off, s.Len, "derived", nil)
		if err != nil {
			return nil, err
		}
		if !changed {
			segs = append(make([]formats.Segment, 0, len(l.Segments)+len(parts)), l.Segments[:i]...)
			changed = true
		}
		segs = append(segs, parts...)
	}
	if changed {
		l.Segments = segs
	}
	return out, nil
}

// Derives reports whether d regenerates segment s of f byte for byte. A
// StreamDeriver's output is compared as it is written, so the check holds
// no copy of the segment. Only reading f, or ctx, fails it.
func Derives(ctx context.Context, d formats.Deriver, f io.ReaderAt, size int64, s formats.Segment) (bool, error) {
	if sd, ok := d.(formats.StreamDeriver); ok {
		w := &checker{f: f, off: s.Off, n: s.Len}
		err := sd.DeriveTo(ctx, f, size, s, w)
		if w.readErr != nil {
			return false, w.readErr
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return err == nil && w.complete(), nil
	}
	want := make([]byte, s.Len)
	if _, err := f.ReadAt(want, s.Off); err != nil {
		return false, err
	}
	got, err := d.Derive(ctx, f, size, s)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return err == nil && bytes.Equal(got, want), nil
}

// checker is the io.WriterAt a StreamDeriver writes to when its
// output is checked: every write must land inside the segment, on bytes
// not written before, and equal the file's bytes there.
type checker struct {
	f       io.ReaderAt
	off, n  int64
	buf     []byte
	spans   [][2]int64 // written, sorted and disjoint, touching ones merged
	differ  bool
	readErr error
}

var errDiffers = errors.New("derived bytes differ from the file's")

func (c *checker) WriteAt(p []byte, at int64) (int, error) {
	if c.differ || c.readErr != nil {
		return 0, errDiffers
	}
	if at < 0 || at > c.n || int64(len(p)) > c.n-at || !c.mark(at, at+int64(len(p))) {
		c.differ = true
		return 0, errDiffers
	}
	for done := 0; done < len(p); {
		k := min(len(p)-done, 256<<10)
		if cap(c.buf) < k {
			c.buf = make([]byte, k)
		}
		b := c.buf[:k]
		if _, err := c.f.ReadAt(b, c.off+at+int64(done)); err != nil {
			c.readErr = fmt.Errorf("read derived bytes at %d: %w", c.off+at+int64(done), err)
			return 0, c.readErr
		}
		if !bytes.Equal(b, p[done:done+k]) {
			c.differ = true
			return 0, errDiffers
		}
		done += k
	}
	return len(p), nil
}

// mark records [lo, hi) as written; false if part of it already was.
func (c *checker) mark(lo, hi int64) bool {
	if lo == hi {
		return true
	}
	i := sort.Search(len(c.spans), func(i int) bool { return c.spans[i][1] >= lo })
	if i < len(c.spans) && c.spans[i][0] < hi && c.spans[i][1] > lo {
		return false // overlaps span i
	}
	if i+1 < len(c.spans) && c.spans[i+1][0] < hi {
		return false
	}
	switch {
	case i < len(c.spans) && c.spans[i][1] == lo: // extends span i
		c.spans[i][1] = hi
		if i+1 < len(c.spans) && c.spans[i+1][0] == hi {
			c.spans[i][1] = c.spans[i+1][1]
			c.spans = append(c.spans[:i+1], c.spans[i+2:]...)
		}
	case i < len(c.spans) && c.spans[i][0] == hi: // span i extends it
		c.spans[i][0] = lo
	default:
		c.spans = append(c.spans, [2]int64{})
		copy(c.spans[i+1:], c.spans[i:])
		c.spans[i] = [2]int64{lo, hi}
	}
	return true
}

// complete reports whether every byte was written and matched.
func (c *checker) complete() bool {
	if c.differ || c.readErr != nil {
		return false
	}
	return c.n == 0 || len(c.spans) == 1 && c.spans[0] == [2]int64{0, c.n}
}

// hashOf hashes segment s of f, whole and in parts of MaxRange, in
// one pass through a small buffer.
func hashOf(ctx context.Context, f io.ReaderAt, s formats.Segment) (Hash, error) {
	whole, part := hashing.New(), hashing.New()
	var h Hash
	buf := make([]byte, min(s.Len, 1<<20))
	for at := int64(0); at < s.Len; {
		if err := ctx.Err(); err != nil {
			return Hash{}, err
		}
		// A read never crosses a part's end.
		k := min(int64(len(buf)), s.Len-at, hashing.MaxRange-at%hashing.MaxRange)
		b := buf[:k]
		if _, err := f.ReadAt(b, s.Off+at); err != nil {
			return Hash{}, fmt.Errorf("read derived bytes at %d: %w", s.Off+at, err)
		}
		whole.Write(b)
		part.Write(b)
		if at += k; s.Len > hashing.MaxRange && (at%hashing.MaxRange == 0 || at == s.Len) {
			h.Parts = append(h.Parts, part.ID())
			part = hashing.New()
		}
	}
	h.ID = whole.ID()
	return h, nil
}

// Hash is what Check read of a derived segment: the hash of its bytes,
// and of each part the scan reads when it is longer than one
// (hashing.MaxRange bytes; none for a shorter segment).
type Hash struct {
	ID    hashing.ID
	Parts []hashing.ID
}
