package parquet

import (
	"strconv"
	"strings"
)

// Part says what piece of a column chunk a key names.
type Part int

// The pieces of a column chunk that get keys of their own.
const (
	Whole       Part = iota // rg<i>/<column>: a chunk whose pages could not be walked
	Page                    // rg<i>/<column>/p<n>
	Bloom                   // rg<i>/<column>/bloom
	ColumnIndex             // rg<i>/<column>/ci
)

// Key is a parsed chunk key of this adapter:
//
//	rg<i>/<column>[/p<n>|/bloom|/ci][@<piece>]
//	gap@<piece>                                 bytes between column chunks
//
// <column> is the column path as the adapter spells it (see the package
// doc), never containing "/"; @<piece> marks a piece cut by content.
type Key struct {
	Gap      bool
	RowGroup int
	Column   string
	Part     Part
	Page     int  // the page index when Part is Page
	Cut      bool // "@" present
	Piece    string
}

// ParseKey parses a key this adapter writes; ok is false for any other.
func ParseKey(s string) (k Key, ok bool) {
	s, k.Piece, k.Cut = strings.Cut(s, "@")
	if s == "gap" {
		k.Gap = true
		return k, k.Cut
	}
	el := strings.Split(s, "/")
	if len(el) < 2 || len(el) > 3 {
		return k, false
	}
	if k.RowGroup, ok = decimal(strings.TrimPrefix(el[0], "rg")); !ok || !strings.HasPrefix(el[0], "rg") {
		return k, false
	}
	k.Column = el[1]
	if k.Column == "" || strings.IndexFunc(k.Column, notSpelled) >= 0 {
		return k, false
	}
	if len(el) == 2 {
		return k, true
	}
	switch p := el[2]; {
	case p == "bloom":
		k.Part = Bloom
	case p == "ci":
		k.Part = ColumnIndex
	case strings.HasPrefix(p, "p"):
		if k.Page, ok = decimal(p[1:]); !ok {
			return k, false
		}
		k.Part = Page
	default:
		return k, false
	}
	return k, true
}

// String spells k as the adapter does.
func (k Key) String() string {
	var b []byte
	if k.Gap {
		b = append(b, "gap"...)
	} else {
		b = strconv.AppendInt(append(b, "rg"...), int64(k.RowGroup), 10)
		b = append(append(b, '/'), k.Column...)
		switch k.Part {
		case Page:
			b = strconv.AppendInt(append(b, "/p"...), int64(k.Page), 10)
		case Bloom:
			b = append(b, "/bloom"...)
		case ColumnIndex:
			b = append(b, "/ci"...)
		}
	}
	if k.Cut {
		b = append(append(b, '@'), k.Piece...)
	}
	return string(b)
}

// notSpelled reports a rune the column spelling never holds.
func notSpelled(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.%~", r))
}

// decimal parses digits with no sign or leading zero.
func decimal(d string) (int, bool) {
	if d == "" || len(d) > 9 || d[0] == '0' && len(d) > 1 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(d) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
