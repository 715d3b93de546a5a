package gcs_test

import (
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/gcstest"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/gcs"
	"github.com/chunkvc/chunkvc/store/storetest"
)

// startEmulator starts a server and points this process's GCS environment
// at it.
func startEmulator(t testing.TB) *gcstest.Server {
	t.Helper()
	srv := gcstest.Start(t)
	srv.Setenv(t)
	return srv
}

func open(t testing.TB, url string, opt gcs.Options) *gcs.Store {
	t.Helper()
	s, err := gcs.Open(t.Context(), url, opt)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func object(seed int64, n int) ([]byte, hashing.ID) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b, hashing.Sum(b)
}

func TestConformance(t *testing.T) {
	startEmulator(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		// A fresh prefix per store; every other one at a bucket's root.
		i := n.Add(1)
		url := fmt.Sprintf("gs://conformance/run/%d", i)
		if i%2 == 0 {
			url = fmt.Sprintf("gs://conformance-root-%d", i)
		}
		return open(t, url, gcs.Options{CreateBucket: true})
	})
}

// The batch, DeleteMany and Sweep cases, on packs of the shared pack
// layer (store/internal/packstore).
func TestBatchConformance(t *testing.T) {
	startEmulator(t)
	var n atomic.Int64
	// Packed objects are stored raw or zstd: no footprint, whose checks
	// expect deltas.
	storetest.RunBatch(t, func(t *testing.T) store.Store {
		return open(t, fmt.Sprintf("gs://batch/run/%d", n.Add(1)), gcs.Options{CreateBucket: true})
	}, nil)
}
