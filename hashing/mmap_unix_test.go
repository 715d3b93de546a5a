//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package hashing

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

func TestMapperFault(t *testing.T) {
	data := make([]byte, 2*blockLen)
	rand.New(rand.NewSource(14)).Read(data)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := newMapper(f)
	if m == nil {
		t.Fatal("no mapper for an *os.File")
	}
	n, ok := m.node(blockLen, blockLen, blockLen/chunkLen)
	if want := subtree(data[blockLen:], blockLen/chunkLen); !ok || n != want {
		t.Fatalf("mapped block: ok=%v, node matches: %v", ok, n == want)
	}
	// Past the end of the file the mapping faults (SIGBUS), which must turn
	// into ok == false, not a crash.
	if err := os.Truncate(p, blockLen/2); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.node(blockLen, blockLen, blockLen/chunkLen); ok {
		t.Fatal("block past the end of the file: ok")
	}
	if _, ok := m.node(0, blockLen, 0); ok {
		t.Fatal("block across the end of the file: ok")
	}
}
