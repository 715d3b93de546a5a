package tiff

import (
	"strconv"
	"strings"
)

// Key is a parsed chunk key of this adapter:
//
//	[ifd<N>/][mask/]z<L>/r<R>/c<C>[/p<P>][@<part>]   a tile
//	[ifd<N>/][mask/]z<L>/s<S>[/p<P>][@<part>]        a strip
//	ifd<N>/r<R>/c<C>… or ifd<N>/s<S>…                an image with no level
//	gap/<N>@<part>                                   the N-th run of bytes
//	                                                 no IFD points at
//
// ifd<N>/ names the base image of a second pyramid (or, alone, an image
// whose level could not be told); mask/ its transparency mask; z<L> the
// overview level (0 = full resolution); p<P> the plane of a planar
// (PlanarConfiguration 2) image; @<part> a piece of a block too big for
// one chunk, cut by content.
type Key struct {
	Gap   bool // dead bytes, the Row-th run of them (only Cut and Part set)
	IFD   int  // the ifd<N>/ prefix; -1 when absent
	Mask  bool // a transparency mask's block
	Level int  // overview level; -1 when the key has none
	Tiled bool // r/c (a tile) rather than s (a strip)
	// Row and Col place a tile; a strip's index is Row (Col 0).
	Row, Col int
	Plane    int    // -1 when the image is not planar
	Cut      bool   // a piece of a block cut by content ("@")
	Part     string // after "@": the piece's short hash once completed
}

// ParseKey parses a key this adapter writes; ok is false for any other.
func ParseKey(s string) (k Key, ok bool) {
	k = Key{IFD: -1, Level: -1, Plane: -1}
	s, k.Part, k.Cut = strings.Cut(s, "@")
	el := strings.Split(s, "/")
	if len(el) == 2 && el[0] == "gap" {
		n, ok := number(el[1], "")
		k.Gap, k.Row = true, n
		return k, ok
	}
	next := func(prefix string) (int, bool) {
		if len(el) == 0 {
			return 0, false
		}
		n, ok := number(el[0], prefix)
		if ok {
			el = el[1:]
		}
		return n, ok
	}
	if n, ok := next("ifd"); ok {
		k.IFD = n
	}
	if len(el) > 0 && el[0] == "mask" {
		k.Mask, el = true, el[1:]
	}
	if n, ok := next("z"); ok {
		k.Level = n
	}
	if k.Level < 0 && k.IFD < 0 {
		return k, false
	}
	if r, ok := next("r"); ok {
		c, ok := next("c")
		if !ok {
			return k, false
		}
		k.Tiled, k.Row, k.Col = true, r, c
	} else if r, ok := next("s"); ok {
		k.Row = r
	} else {
		return k, false
	}
	if p, ok := next("p"); ok {
		k.Plane = p
	}
	return k, len(el) == 0
}

// String spells k as the adapter does.
func (k Key) String() string {
	var b []byte
	if k.Gap {
		b = strconv.AppendInt(append(b, "gap/"...), int64(k.Row), 10)
		if k.Cut {
			b = append(append(b, '@'), k.Part...)
		}
		return string(b)
	}
	if k.IFD >= 0 {
		b = append(strconv.AppendInt(append(b, "ifd"...), int64(k.IFD), 10), '/')
	}
	if k.Mask {
		b = append(b, "mask/"...)
	}
	if k.Level >= 0 {
		b = append(strconv.AppendInt(append(b, 'z'), int64(k.Level), 10), '/')
	}
	if k.Tiled {
		b = strconv.AppendInt(append(b, 'r'), int64(k.Row), 10)
		b = strconv.AppendInt(append(b, "/c"...), int64(k.Col), 10)
	} else {
		b = strconv.AppendInt(append(b, 's'), int64(k.Row), 10)
	}
	if k.Plane >= 0 {
		b = strconv.AppendInt(append(b, "/p"...), int64(k.Plane), 10)
	}
	if k.Cut {
		b = append(append(b, '@'), k.Part...)
	}
	return string(b)
}

// number parses prefix followed by a decimal with no sign or leading
// zero (as the adapter writes numbers).
func number(s, prefix string) (int, bool) {
	d, ok := strings.CutPrefix(s, prefix)
	if !ok || d == "" || len(d) > 9 || d[0] == '0' && len(d) > 1 {
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
