package hashing

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ID is the BLAKE3-256 digest of some bytes. The zero ID is never the hash of
// real content in practice and is used as "no ID".
type ID [32]byte

// String returns the ID as 64 lower-case hex digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Short returns the first 12 hex digits, for messages.
func (id ID) Short() string { return id.String()[:12] }

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// Compare orders IDs bytewise, as their hex spellings sort.
func Compare(a, b ID) int { return bytes.Compare(a[:], b[:]) }

// Tagged returns "blake3:<hex>".
func (id ID) Tagged() string { return "blake3:" + id.String() }

// ErrBadID is wrapped by ParseID when its input is not an ID.
var ErrBadID = errors.New("not a blake3 id")

// ParseID parses 64 hex digits, optionally prefixed with "blake3:".
// Upper-case hex is refused so that every ID has one spelling.
func ParseID(s string) (ID, error) {
	var id ID
	h := strings.TrimPrefix(s, "blake3:")
	if len(h) != 64 {
		return id, fmt.Errorf("%w: %q has %d hex digits, want 64", ErrBadID, s, len(h))
	}
	var bad byte
	for i := range id {
		hi, lo := unhex[h[2*i]], unhex[h[2*i+1]]
		bad |= hi | lo
		id[i] = hi<<4 | lo
	}
	if bad&0x80 != 0 {
		return ID{}, fmt.Errorf("%w: %q", ErrBadID, s)
	}
	return id, nil
}

// unhex maps a lower-case hex digit to its value and anything else to
// 0xff, so that one test of the high bit after the loop finds a bad digit.
const unhex = "" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\x0a\x0b\x0c\x0d\x0e\x0f\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"

// MarshalText implements encoding.TextMarshaler (hex).
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
