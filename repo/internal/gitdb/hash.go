package gitdb

import (
	"encoding/hex"
	"fmt"
)

// Hash is a Git object name (SHA-1).
type Hash [20]byte

// ZeroHash is the all-zero name git writes for "no value" in reflogs.
var ZeroHash Hash

// IsZero reports whether h is ZeroHash.
func (h Hash) IsZero() bool { return h == ZeroHash }

// String is the 40-character lower-case hex form.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash parses exactly 40 hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("object name %q: want 40 hex digits", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("object name %q: %w", s, err)
	}
	return h, nil
}
