package local_test

import (
	"bytes"
	"errors"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/local"
	"golang.org/x/sync/errgroup"
)

// TestBatchSegments puts objects of many sizes from two goroutines into
// packs gathered in 100 KiB segments, two held at once, so that objects
// straddle segments and Puts wait for segment writes; with O_DIRECT and
// through the page cache. A fresh handle must read every object back, and
// every pack must be as long as its index says.
func TestBatchSegments(t *testing.T) {
	for _, mode := range []string{"direct", "page cache", "direct refused", "slow send"} {
		t.Run(mode, func(t *testing.T) {
			local.SetPackLimits(t, 400<<10, 200<<10)
			switch mode {
			case "page cache":
				local.SetNoDirect(t)
			case "slow send":
				// A pack switch or Commit must wait for a full
				// segment whose last copy is done but whose write has
				// not started, or its buffer is unmapped unwritten.
				local.SetHookBeforeSend(t, func() { time.Sleep(2 * time.Millisecond) })
			case "direct refused":
				// Not a multiple of 512: every O_DIRECT write fails
				// with EINVAL, several at once, and must be redone
				// through the page cache.
				local.SetSegmentSize(t, 100<<10+100)
			}
			tmp := t.TempDir()
			root := filepath.Join(tmp, "store")
			directBefore := local.DirectWrites()
			local.ResetPeakSegments()
			s, err := local.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(1))
			var objs [][]byte
			for range 150 {
				data, _ := object(rng.Int63(), 1+rng.Intn(150<<10))
				objs = append(objs, data)
			}
			b, err := s.Batch(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var g errgroup.Group
			for w := range 2 {
				g.Go(func() error {
					for i := w; i < len(objs); i += 2 {
						if _, err := b.Put(t.Context(), hashing.Sum(objs[i]), objs[i], hashing.ID{}); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			fresh, err := local.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			for i, data := range objs {
				if got, err := store.ReadAll(t.Context(), fresh, hashing.Sum(data)); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("object %d (%d bytes): read %d bytes, %v", i, len(data), len(got), err)
				}
			}
			// Confirm checks each pack's length against its index.
			var want []store.Sized
			for _, data := range objs {
				want = append(want, store.Sized{ID: hashing.Sum(data), Size: int64(len(data))})
			}
			if err := store.VerifyMany(t.Context(), fresh, want, false); err != nil {
				t.Fatal(err)
			}
			direct := local.DirectWrites() - directBefore
			switch {
			case mode == "direct" && local.DirectFS(tmp) && direct == 0:
				t.Errorf("no segment written with O_DIRECT on a file system that has it")
			case (mode == "page cache" || mode == "direct refused") && direct != 0:
				t.Errorf("%d segments written with O_DIRECT", direct)
			case mode == "direct refused" && local.DirectFS(tmp) && !local.DirectRefused(s):
				t.Errorf("EINVAL from O_DIRECT writes not remembered")
			}
			// A full pack's buffers are freed when the next one starts:
			// memory does not grow with the batch.
			if peak := local.PeakSegments(); peak > 2 {
				t.Errorf("%d segment buffers held at once, at most 2 allowed", peak)
			}
			if packs, _ := filepath.Glob(filepath.Join(root, local.PackDir, "pack-*.pack")); len(packs) < 3 {
				t.Errorf("%d packs of at most 400 KiB for %d objects", len(packs), len(objs))
			}
			left, _ := filepath.Glob(filepath.Join(root, local.TmpDir, "*"))
			if len(left) != 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

// TestBatchFailedSwitch: when a full pack's last write fails as the next
// pack starts, that Put fails, later Puts fail instead of waiting, and
// Commit reports the failure and leaves no temp files.
func TestBatchFailedSwitch(t *testing.T) {
	local.SetPackLimits(t, 100<<10, 64<<10)
	root := filepath.Join(t.TempDir(), "store")
	s, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	local.SetFinishErr(t, boom)
	done := make(chan error, 1)
	go func() {
		var first error
		for i := range 12 { // 12 × 30000 bytes: three packs of 100 KiB
			data, id := object(int64(500+i), 30000)
			if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil && first == nil {
				first = err
			}
		}
		done <- first
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Puts across a failed pack switch: %v, want %v", err, boom)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Puts after a failed pack switch hang")
	}
	// An object small enough for the pack whose last write failed must
	// not be put there (its buffers are gone) nor wait for one.
	go func() {
		data, id := object(999, 100)
		_, err := b.Put(t.Context(), id, data, hashing.ID{})
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a small Put after a failed pack switch hangs")
	}
	if err := b.Commit(t.Context()); err == nil {
		t.Fatal("Commit after a failed pack switch: no error")
	}
	left, _ := filepath.Glob(filepath.Join(root, local.TmpDir, "*"))
	if len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
}
