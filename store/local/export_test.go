package local

import "testing"

// SetPackLimits shrinks, for the duration of a test, the size at which
// batches start a new pack (max) and above which objects go loose
// (maxObject); packs are then synced early every max/4 bytes.
func SetPackLimits(t testing.TB, max int64, maxObject int) {
	oldMax, oldObject, oldSync := packMax, packMaxObject, syncEvery
	packMax, packMaxObject, syncEvery = max, maxObject, max/4
	t.Cleanup(func() { packMax, packMaxObject, syncEvery = oldMax, oldObject, oldSync })
}

// MaxDepth is the bound on delta chains.
const MaxDepth = maxDepth

// SetHookBeforeRecheck runs fn inside DeleteMany after its rewrites, just
// before it looks at the packs folder again, for the test's duration.
func SetHookBeforeRecheck(t testing.TB, fn func()) {
	testHookBeforeRecheck = fn
	t.Cleanup(func() { testHookBeforeRecheck = nil })
}
