package local

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestStagerReleaseWaitsForSend: a segment whose last copy is done but
// whose write has not started yet must still be written before finish
// returns, so that release does not unmap it first.
func TestStagerReleaseWaitsForSend(t *testing.T) {
	old := segmentSize
	segmentSize = 2 * directAlign
	t.Cleanup(func() { segmentSize = old })
	f, err := os.Create(filepath.Join(t.TempDir(), "pack"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var refused atomic.Bool
	s := newStager(f, true, &refused)
	data := bytes.Repeat([]byte("chunkvc!"), segmentSize/8)
	sp, ok, err := s.reserve(len(data)) // fills the segment exactly: sealed
	if err != nil || !ok {
		t.Fatalf("reserve: %v, %v", ok, err)
	}
	inGap := make(chan struct{})
	testHookBeforeSend = func() { close(inGap); time.Sleep(50 * time.Millisecond) }
	t.Cleanup(func() { testHookBeforeSend = nil })
	go s.fill(sp, data)
	<-inGap // the copy is counted done; the write is not started
	err = s.finish()
	s.release()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("pack holds %d bytes (%v), want the segment's %d", len(got), err, len(data))
	}
}
