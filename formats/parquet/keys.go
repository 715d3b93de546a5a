package parquet

import (
	"encoding/binary"
	"strings"

	"github.com/chunkvc/chunkvc/hashing"
)

// maxPathKey bounds the column path part of a key, leaving room for
// "rg<n>/" and "/p<n>" or "/bloom" within formats.MaxKeyLen.
const maxPathKey = 80

// keyer spells column paths as key parts, caching by raw path.
type keyer struct{ cache, raw map[string]string }

func newKeyer() *keyer { return &keyer{cache: map[string]string{}, raw: map[string]string{}} }

// column spells the path of c.
func (k *keyer) column(c *column) string {
	if s, ok := k.raw[string(c.pathRaw)]; ok {
		return s
	}
	s := k.path(c.components())
	k.raw[string(c.pathRaw)] = s
	return s
}

// path spells a column path: components joined by ".", each byte outside
// [A-Za-z0-9_-] written as %XX (so "." inside a name, "/", "@", "%", "~",
// spaces and non-ASCII cannot collide with anything). A spelling over
// maxPathKey bytes is cut and ends in "~" plus 12 hex digits of the BLAKE3
// of the raw path; "~" never appears in an uncut spelling.
func (k *keyer) path(p [][]byte) string {
	var raw []byte // injective: length-prefixed components
	for _, c := range p {
		raw = binary.AppendUvarint(raw, uint64(len(c)))
		raw = append(raw, c...)
	}
	rk := string(raw)
	if s, ok := k.cache[rk]; ok {
		return s
	}
	var b strings.Builder
	for i, c := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		for _, x := range c {
			if x >= 'a' && x <= 'z' || x >= 'A' && x <= 'Z' || x >= '0' && x <= '9' || x == '_' || x == '-' {
				b.WriteByte(x)
			} else {
				const hex = "0123456789ABCDEF"
				b.WriteByte('%')
				b.WriteByte(hex[x>>4])
				b.WriteByte(hex[x&15])
			}
			if b.Len() > maxPathKey {
				break
			}
		}
		if b.Len() > maxPathKey {
			break
		}
	}
	s := b.String()
	if len(p) == 0 {
		s = "~" + hashing.Sum(nil).Short() // no path at all
	} else if len(s) > maxPathKey {
		h := hashing.Sum([]byte(rk)).Short()
		s = s[:maxPathKey-1-len(h)] + "~" + h
	}
	k.cache[rk] = s
	return s
}
