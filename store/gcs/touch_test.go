package gcs_test

import (
	"testing"

	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/gcs"
	"github.com/chunkvc/chunkvc/store/storetest"
)

// TestTouchSeenByOtherProcess: storetest.TouchAcross on the emulator.
func TestTouchSeenByOtherProcess(t *testing.T) {
	startEmulator(t)
	storetest.TouchAcross(t, func(t *testing.T) store.Store {
		return open(t, "gs://touch/cross", gcs.Options{CreateBucket: true})
	})
}
