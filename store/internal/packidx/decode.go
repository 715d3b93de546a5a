package packidx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/chunkvc/chunkvc/hashing"
)

// ErrFormat is wrapped by every error of Decode and Open.
var ErrFormat = errors.New("damaged pack index")

// Decode parses an index file, checking its checksum and every rule of the
// format. Errors wrap ErrFormat.
func Decode(b []byte) (Index, error) {
	packSize, n, _, err := validate(b, nil, 0)
	if err != nil {
		return Index{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	ix := Index{PackSize: packSize, Entries: make([]Entry, n)}
	raw := b[HeaderSize:]
	for i := range ix.Entries {
		ix.Entries[i] = entryAt(raw, i)
	}
	return ix, nil
}

// validate checks an index file and returns its pack size, its number of
// entries and, when every > 0, the ID of every every-th entry. It calls
// checked (when not nil) as it goes, with how many bytes of b it is done
// with.
func validate(b []byte, checked func(n int), every int) (packSize int64, n int, sample []hashing.ID, err error) {
	if len(b) < HeaderSize+ChecksumSize {
		return 0, 0, nil, fmt.Errorf("%d bytes, shorter than header and checksum", len(b))
	}
	if string(b[:4]) != magic {
		return 0, 0, nil, fmt.Errorf("magic %q, want %q", b[:4], magic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != Version {
		return 0, 0, nil, fmt.Errorf("version %d, want %d", v, Version)
	}
	count := uint64(binary.LittleEndian.Uint32(b[8:]))
	if want := HeaderSize + count*EntrySize + ChecksumSize; uint64(len(b)) != want {
		return 0, 0, nil, fmt.Errorf("%d bytes for %d entries, want %d", len(b), count, want)
	}
	// In steps, hashing and checking each while it is in cache, and
	// telling the caller it may let it go. A broken rule is reported once
	// the whole checksum is known: a damaged file is "checksum mismatch",
	// whatever the damage broke.
	var broken error
	size := binary.LittleEndian.Uint64(b[12:])
	packSize, n = int64(size), int(count)
	switch {
	case size > 1<<62:
		broken = fmt.Errorf("pack size %d", size)
	case packSize < PackHeaderSize:
		broken = fmt.Errorf("pack size %d is below the %d-byte header", packSize, PackHeaderSize)
	}
	var d hashing.Digest
	d.Write(b[:HeaderSize])
	raw := b[HeaderSize : len(b)-ChecksumSize]
	const step = 1 << 20 / EntrySize
	for i := 0; i < n; i += step {
		end := min(i+step, n)
		// The step is hashed on another core while its entries are
		// checked here: an index of a million objects is read by every
		// command that stores.
		var hashed sync.WaitGroup
		if end-i > 1024 {
			hashed.Go(func() { d.Write(raw[i*EntrySize : end*EntrySize]) })
		} else {
			d.Write(raw[i*EntrySize : end*EntrySize])
		}
		for j := i; j < end && broken == nil; j++ {
			broken = checkRaw(raw, j, packSize)
		}
		hashed.Wait()
		for j := (i + every - 1) / max(every, 1) * every; every > 0 && j < end; j += every {
			sample = append(sample, hashing.ID(raw[j*EntrySize:j*EntrySize+32]))
		}
		if checked != nil {
			checked(HeaderSize + end*EntrySize)
		}
	}
	if d.ID() != Checksum(b) {
		return 0, 0, nil, fmt.Errorf("checksum mismatch")
	}
	if broken != nil {
		return 0, 0, nil, broken
	}
	return packSize, n, sample, nil
}

// checkRaw checks entry i of an index file's entries, and that it comes
// after entry i-1.
func checkRaw(raw []byte, i int, packSize int64) error {
	p := raw[i*EntrySize:]
	off, stored, sz := binary.LittleEndian.Uint64(p[32:]), binary.LittleEndian.Uint64(p[40:]), binary.LittleEndian.Uint64(p[48:])
	if off > 1<<62 || stored > 1<<62 || sz > 1<<62 {
		return fmt.Errorf("entry %d: offset or size out of range", i)
	}
	e := entryAt(raw, i)
	if i > 0 {
		if prev := hashing.ID(raw[(i-1)*EntrySize : (i-1)*EntrySize+32]); hashing.Compare(prev, e.ID) >= 0 {
			return fmt.Errorf("entry %d (%s) is not after %s", i, e.ID.Short(), prev.Short())
		}
	}
	if err := checkEntry(e, packSize); err != nil {
		return fmt.Errorf("entry %d (%s): %w", i, e.ID.Short(), err)
	}
	return nil
}
