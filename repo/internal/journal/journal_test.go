package journal

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// golden is the journal whose bytes testdata/v1.journal holds, as the
// codec wrote them before it moved here: the format must not drift.
func golden() *Journal {
	return &Journal{Path: "sub/x.bin", Ino: 77, OldSize: 1234, NewSize: 99, Digest: hashing.Sum([]byte("d")), Layout: hashing.Sum([]byte("l")),
		Spans: []Span{{5, []byte("old")}, {99, make([]byte, 20)}, {1 << 40, []byte{}}}}
}

func TestGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/v1.journal")
	if err != nil {
		t.Fatal(err)
	}
	if got := Encode(golden()); !bytes.Equal(got, b) {
		t.Fatalf("Encode gives %x,\nwant %x", got, b)
	}
	j, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j, golden()) {
		t.Fatalf("Decode gives %+v,\nwant %+v", j, golden())
	}
}

// Every flipped bit and every cut is refused, and the path still comes
// back when only what follows it was hit.
func TestDecodeDamage(t *testing.T) {
	b := Encode(golden())
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 1
		j, err := Decode(bad)
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
		if j == nil {
			t.Fatalf("byte %d flipped: nil journal", i)
		}
		if pathEnd := len(Magic) + 1 + len("sub/x.bin"); i >= pathEnd && j.Path != "sub/x.bin" {
			t.Fatalf("byte %d flipped: path %q lost", i, j.Path)
		}
	}
	for n := range len(b) {
		if _, err := Decode(b[:n]); !errors.Is(err, ErrDamaged) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
}

// FuzzDecodeJournal: any bytes either decode to a journal that encodes
// back to the same bytes and decodes again to the same journal, or give
// ErrDamaged; never a panic.
func FuzzDecodeJournal(f *testing.F) {
	if b, err := os.ReadFile("testdata/v1.journal"); err == nil {
		f.Add(b)
	}
	f.Add(Encode(&Journal{Path: "sub/x.bin", Ino: 7, OldSize: 100, NewSize: 90, Spans: []Span{{5, []byte("old")}, {90, make([]byte, 10)}}}))
	f.Add(Encode(&Journal{Path: "a"}))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrDamaged) || j == nil {
				t.Fatalf("Decode: %v, journal %v", err, j)
			}
			return
		}
		got := Encode(j)
		if !bytes.Equal(got, b) {
			t.Fatalf("decoded journal encodes to other bytes")
		}
		again, err := Decode(got)
		if err != nil || !reflect.DeepEqual(again, j) {
			t.Fatalf("decode(encode(j)) = %+v, %v; want %+v", again, err, j)
		}
	})
}
