package hashing

import (
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
	for i := range id {
		hi, ok1 := nibble(h[2*i])
		lo, ok2 := nibble(h[2*i+1])
		if !ok1 || !ok2 {
			return ID{}, fmt.Errorf("%w: %q", ErrBadID, s)
		}
		id[i] = hi<<4 | lo
	}
	return id, nil
}

// nibble decodes one lower-case hex digit.
func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

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
