package formats

import (
	"context"
	"fmt"
	"io"
)

// Set is the ordered list of native adapters plus the generic fallback.
// Build it explicitly (no registration by init).
type Set struct {
	Native  []Adapter
	Generic Adapter
}

// Enumerate picks the first native adapter whose Detect accepts the file
// and returns its checked layout. When none matches, or the match fails,
// panics or returns an invalid layout, the generic adapter is used and
// Layout.Fallback says why (empty when no native adapter claimed the file).
// Only a failure of the generic adapter itself (an I/O error) is returned.
func (s Set) Enumerate(ctx context.Context, r io.ReaderAt, size int64) (*Layout, error) {
	head := make([]byte, min(int64(HeadSize), size))
	if _, err := r.ReadAt(head, 0); err != nil && len(head) > 0 {
		if n, _ := r.ReadAt(head, 0); n != len(head) {
			return nil, fmt.Errorf("read header: %w", err)
		}
	}
	var reason string
	for _, a := range s.Native {
		if !safeDetect(a, head) {
			continue
		}
		l, err := safeLayout(ctx, a, r, size)
		if err == nil {
			err = Check(l, size)
		}
		if err == nil {
			if l.Format == "" {
				l.Format = a.Name()
			}
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		reason = fmt.Sprintf("%s: %v", a.Name(), err)
		break
	}
	l, err := safeLayout(ctx, s.Generic, r, size)
	if err != nil {
		return nil, err
	}
	if err := Check(l, size); err != nil {
		return nil, fmt.Errorf("generic adapter: %w", err)
	}
	l.Fallback = reason
	return l, nil
}

// ByName returns the adapter that writes manifests of format name, or nil.
func (s Set) ByName(name string) Adapter {
	for _, a := range s.Native {
		if a.Name() == name {
			return a
		}
	}
	if s.Generic != nil && s.Generic.Name() == name {
		return s.Generic
	}
	return nil
}

func safeDetect(a Adapter, head []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return a.Detect(head)
}

func safeLayout(ctx context.Context, a Adapter, r io.ReaderAt, size int64) (l *Layout, err error) {
	defer func() {
		if p := recover(); p != nil {
			// The stack is not part of the reason: reasons land in manifests,
			// which must be deterministic.
			l, err = nil, fmt.Errorf("adapter panicked: %v", p)
		}
	}()
	return a.Layout(ctx, r, size)
}

// ShardOf returns the shard function of format name's adapter for a split
// manifest, or nil when it has none (the manifest then shards by hash
// bucket; see manifest.EncodeSplit).
func (s Set) ShardOf(name string) func(key string) string {
	if sh, ok := s.ByName(name).(Sharder); ok {
		return sh.Shard
	}
	return nil
}
