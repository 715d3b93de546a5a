//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package hashing

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"lukechampine.com/blake3/guts"
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
	var br blockReader
	defer br.close()
	cv, ok := m.cv(blockLen, blockLen, blockLen/chunkLen, br.hash)
	if want := guts.ChainingValue(subtree(data[blockLen:], blockLen/chunkLen)); !ok || cv != want {
		t.Fatalf("mapped block: ok=%v, chaining value matches: %v", ok, cv == want)
	}
	// Past the end of the file the mapping faults (SIGBUS), which must turn
	// into ok == false, not a crash.
	if err := os.Truncate(p, blockLen/2); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.cv(blockLen, blockLen, blockLen/chunkLen, br.hash); ok {
		t.Fatal("block past the end of the file: ok")
	}
	if _, ok := m.cv(0, blockLen, 0, br.hash); ok {
		t.Fatal("block across the end of the file: ok")
	}
}
