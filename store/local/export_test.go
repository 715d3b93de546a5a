package local

import "testing"

// SetPackLimits shrinks, for the duration of a test, the size at which
// batches start a new pack (packLimit) and above which objects go loose
// (maxObject); packs are then gathered in segments of packLimit/4 bytes (rounded
// down to a multiple of 4 KiB) of which at most two are held at once.
func SetPackLimits(t testing.TB, packLimit int64, maxObject int) {
	oldMax, oldObject, oldSeg, oldSegs := packMax, packMaxObject, segmentSize, segments
	packMax, packMaxObject = packLimit, maxObject
	segmentSize, segments = max(int(packLimit/4)&^(directAlign-1), directAlign), 2
	t.Cleanup(func() { packMax, packMaxObject, segmentSize, segments = oldMax, oldObject, oldSeg, oldSegs })
}

// MaxDepth is the bound on delta chains.
const MaxDepth = maxDepth

// SetHookBeforeRecheck runs fn inside DeleteMany after its rewrites, just
// before it looks at the packs folder again, for the test's duration.
func SetHookBeforeRecheck(t testing.TB, fn func()) {
	testHookBeforeRecheck = fn
	t.Cleanup(func() { testHookBeforeRecheck = nil })
}

// SetNoDirect makes batches write their packs through the page cache, as
// where O_DIRECT is refused, for the test's duration.
func SetNoDirect(t testing.TB) {
	noDirect = true
	t.Cleanup(func() { noDirect = false })
}

// SetSegmentSize sets the size of batch segments for the test's duration;
// one that is not a multiple of 512 makes O_DIRECT writes fail with EINVAL.
func SetSegmentSize(t testing.TB, n int) {
	old := segmentSize
	segmentSize = n
	t.Cleanup(func() { segmentSize = old })
}

// DirectWrites counts the segments written with O_DIRECT so far.
func DirectWrites() int64 { return directWrites.Load() }

// DirectFS reports whether batches in a store at dir try O_DIRECT.
func DirectFS(dir string) bool { return localDiskFS(dir) }

// DirectRefused reports whether s saw its file system refuse O_DIRECT.
func DirectRefused(s *Store) bool { return s.refused.Load() }

// ResetPeakSegments zeroes the count of segment buffers held at once that
// PeakSegments returns.
func ResetPeakSegments() { peakSegments.Store(liveSegments.Load()) }

// PeakSegments is the most segment buffers held at once since the reset.
func PeakSegments() int64 { return peakSegments.Load() }

// SetHookBeforeSend runs fn between a segment's last copy and its write
// being started, for the test's duration.
func SetHookBeforeSend(t testing.TB, fn func()) {
	testHookBeforeSend = fn
	t.Cleanup(func() { testHookBeforeSend = nil })
}

// SetFinishErr makes every pack's final write fail with err, for the
// test's duration.
func SetFinishErr(t testing.TB, err error) {
	testFinishErr = err
	t.Cleanup(func() { testFinishErr = nil })
}
