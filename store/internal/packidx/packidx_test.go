package packidx

import (
	"bytes"
	"errors"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
)

func id(s string) hashing.ID { return hashing.Sum([]byte(s)) }

// sample is a valid index with every encoding, not sorted.
func sample() Index {
	return Index{PackSize: 1000, Entries: []Entry{
		{ID: id("b"), Offset: 8, Stored: 100, Size: 100, Encoding: Raw},
		{ID: id("a"), Offset: 108, Stored: 50, Size: 400, Encoding: Zstd},
		{ID: id("c"), Offset: 158, Stored: 20, Size: 400, Encoding: Delta, Depth: 3, Base: id("a")},
		{ID: id("empty"), Offset: 178, Stored: 0, Size: 0, Encoding: Raw},
	}}
}

func TestRoundTrip(t *testing.T) {
	for _, ix := range []Index{{PackSize: PackHeaderSize}, sample()} {
		b, err := Encode(ix)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != HeaderSize+len(ix.Entries)*EntrySize+ChecksumSize {
			t.Errorf("%d entries encode to %d bytes", len(ix.Entries), len(b))
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.PackSize != ix.PackSize || len(got.Entries) != len(ix.Entries) {
			t.Fatalf("decoded %+v, want %+v", got, ix)
		}
		tb := got.Table() // decoded entries, searched without a sample
		for i, e := range got.Entries {
			if e != ix.Entries[i] { // Encode sorted ix.Entries in place
				t.Errorf("entry %d: %+v, want %+v", i, e, ix.Entries[i])
			}
			if j, ok := tb.Search(e.ID); !ok || j != i {
				t.Errorf("Search(%s) = %d, %v; want %d", e.ID.Short(), j, ok, i)
			}
		}
		if _, ok := tb.Search(id("missing")); ok {
			t.Error("Search finds a missing ID")
		}
		if Checksum(b) != hashing.Sum(b[:len(b)-ChecksumSize]) {
			t.Error("Checksum is not the BLAKE3 of the rest")
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, f := range map[string]func(*Index){
		"small pack":         func(ix *Index) { ix.PackSize = 7 },
		"duplicate":          func(ix *Index) { ix.Entries[1].ID = ix.Entries[0].ID },
		"offset in header":   func(ix *Index) { ix.Entries[0].Offset = 4 },
		"past the pack":      func(ix *Index) { ix.Entries[0].Stored = 993 },
		"negative size":      func(ix *Index) { ix.Entries[1].Size = -1 },
		"raw sizes differ":   func(ix *Index) { ix.Entries[0].Size = 99 },
		"zstd with a base":   func(ix *Index) { ix.Entries[1].Base = id("x") },
		"zstd with depth":    func(ix *Index) { ix.Entries[1].Depth = 1 },
		"delta without base": func(ix *Index) { ix.Entries[2].Base = hashing.ID{} },
		"delta on itself":    func(ix *Index) { ix.Entries[2].Base = ix.Entries[2].ID },
		"delta depth 0":      func(ix *Index) { ix.Entries[2].Depth = 0 },
		"unknown encoding":   func(ix *Index) { ix.Entries[0].Encoding = 3 },
	} {
		ix := sample()
		f(&ix)
		if _, err := Encode(ix); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	// resum recomputes the checksum, so that the other checks are reached.
	resum := func(b []byte) []byte {
		sum := hashing.Sum(b[:len(b)-ChecksumSize])
		copy(b[len(b)-ChecksumSize:], sum[:])
		return b
	}
	for name, c := range map[string]struct {
		f    func([]byte) []byte
		want string
	}{
		"empty":          {func(b []byte) []byte { return nil }, "shorter"},
		"magic":          {func(b []byte) []byte { b[0] = 'X'; return resum(b) }, "magic"},
		"version":        {func(b []byte) []byte { b[4] = 2; return resum(b) }, "version"},
		"count":          {func(b []byte) []byte { b[8]++; return resum(b) }, "entries"},
		"truncated":      {func(b []byte) []byte { return b[:len(b)-1] }, "entries"},
		"flipped":        {func(b []byte) []byte { b[HeaderSize+40] ^= 1; return b }, "checksum"},
		"checksum":       {func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "checksum"},
		"unsorted":       {func(b []byte) []byte { b[HeaderSize] ^= 0xff; return resum(b) }, "not after"},
		"huge offset":    {func(b []byte) []byte { b[HeaderSize+39] = 0xff; return resum(b) }, "range"},
		"bad encoding":   {func(b []byte) []byte { b[HeaderSize+56] = 9; return resum(b) }, "encoding"},
		"pack too small": {func(b []byte) []byte { b[12] = 100; b[13] = 0; return resum(b) }, "pack"},
	} {
		_, err := Decode(c.f(bytes.Clone(good)))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrFormat mentioning %q", name, err, c.want)
		}
		_, err = Open(c.f(bytes.Clone(good)), OpenOptions{})
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Open: %v, want ErrFormat mentioning %q", name, err, c.want)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to
// the same bytes (one valid encoding).
func FuzzDecode(f *testing.F) {
	for _, ix := range []Index{{PackSize: PackHeaderSize}, sample()} {
		b, err := Encode(ix)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(b[:HeaderSize])
	}
	f.Add([]byte("CVCX\x01\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := Decode(b)
		tb, oerr := Open(b, OpenOptions{})
		if (err == nil) != (oerr == nil) {
			t.Fatalf("Decode: %v; Open: %v", err, oerr)
		}
		if err != nil {
			return
		}
		if tb.Len() != len(ix.Entries) || tb.PackSize != ix.PackSize {
			t.Fatalf("Open gives %d entries of a %d-byte pack, Decode %d of %d", tb.Len(), tb.PackSize, len(ix.Entries), ix.PackSize)
		}
		for i, e := range tb.All() {
			if e != ix.Entries[i] {
				t.Fatalf("entry %d: Open %+v, Decode %+v", i, e, ix.Entries[i])
			}
		}
		again, err := Encode(ix)
		if err != nil {
			t.Fatalf("decoded index does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatal("decoded index encodes to other bytes")
		}
	})
}

// TestOpen checks a Table read from an index file of many entries (more
// than one step of the check) against the entries it was made of.
func TestOpen(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	ix := Index{PackSize: PackHeaderSize}
	for i := range 30000 {
		var e Entry
		rng.Read(e.ID[:])
		e.Offset, e.Stored, e.Size = ix.PackSize, int64(i%7), int64(i%7)
		ix.PackSize += e.Stored
		ix.Entries = append(ix.Entries, e)
	}
	b, err := Encode(ix)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	released := make(chan struct{})
	tb, err := Open(b, OpenOptions{Checked: func(n int) { seen = append(seen, n) }, Release: func() { close(released) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 || !slices.IsSorted(seen) || seen[len(seen)-1] != len(b)-ChecksumSize {
		t.Errorf("Checked saw %v; want steps rising to %d", seen, len(b)-ChecksumSize)
	}
	if tb.Len() != len(ix.Entries) || tb.PackSize != ix.PackSize {
		t.Fatalf("%d entries of a %d-byte pack, want %d of %d", tb.Len(), tb.PackSize, len(ix.Entries), ix.PackSize)
	}
	for i, e := range ix.Entries { // sorted by Encode
		if got := tb.Entry(i); got != e {
			t.Fatalf("entry %d: %+v, want %+v", i, got, e)
		}
		if j, ok := tb.Search(e.ID); !ok || j != i {
			t.Fatalf("Search(%s) = %d, %v; want %d", e.ID.Short(), j, ok, i)
		}
		missing := e.ID
		missing[31] ^= 1
		if j, ok := tb.Search(missing); ok {
			t.Fatalf("Search finds %s at %d", missing.Short(), j)
		}
	}
	select {
	case <-released:
		t.Fatal("released while the table is in use")
	default:
	}
	runtime.KeepAlive(tb)
	for i := 0; ; i++ {
		runtime.GC()
		select {
		case <-released:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i == 100 {
			t.Fatal("not released once the table was unreachable")
		}
	}
}

// TestList: a List gives back every entry as appended (bases too), and
// encodes to the bytes Encode gives for the same entries; it refuses what
// it could not hold and what Encode refuses.
func TestList(t *testing.T) {
	ix := sample()
	var l List
	for _, e := range ix.Entries {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range ix.Entries {
		if got := l.Entry(i); got != e {
			t.Errorf("entry %d: %+v, want %+v", i, got, e)
		}
	}
	order := slices.Clone(ix.Entries)
	want, err := Encode(ix) // sorts ix.Entries
	if err != nil {
		t.Fatal(err)
	}
	// EncodeCopy gives the same bytes and leaves the order of the list.
	// sample's entries are not in ID order, so a sort would show.
	got, err := l.EncodeCopy(ix.PackSize)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("List.EncodeCopy differs from Encode of the same entries")
	}
	for i, e := range order {
		if l.ID(i) != e.ID {
			t.Fatalf("EncodeCopy moved entry %d", i)
		}
	}
	got, err = l.Encode(ix.PackSize)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("List.Encode differs from Encode of the same entries")
	}
	if err := l.Append(Entry{ID: id("big"), Offset: 8, Stored: MaxSize + 1, Size: MaxSize + 1}); err == nil {
		t.Error("Append takes an entry above MaxSize")
	}
	var dup List
	for _, e := range []Entry{ix.Entries[0], ix.Entries[0]} {
		if err := dup.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dup.Encode(ix.PackSize); err == nil {
		t.Error("List.Encode takes an ID twice")
	}
	var short List
	if err := short.Append(Entry{ID: id("x"), Offset: 8, Stored: 100, Size: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := short.Encode(50); err == nil {
		t.Error("List.Encode takes an entry past the pack's end")
	}
}
