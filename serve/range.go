package serve

import (
	"math"
	"strconv"
	"strings"
)

// etagMatch reports whether an If-None-Match header names etag (or "*").
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// rangeAnswer is how a GET answers its Range header (RFC 9110, 14.2).
type rangeAnswer int

const (
	rangeWhole         rangeAnswer = iota // no Range, or one to ignore: 200 with the whole file
	rangeParts                            // the satisfiable ranges: 206
	rangeUnsatisfiable                    // 416 with Content-Range: bytes */size
)

// parseRanges reads a Range header for a size-byte file into the [start,
// end) windows to send, in the order asked, per RFC 9110, 14.1.2:
// a range that starts at or past the end, or a suffix of length 0, is
// unsatisfiable and left out; a range or suffix reaching past the end is
// cut at it. No satisfiable range, or a malformed header (a range ending
// before its start, a number that is not one), is answered with 416. A
// unit other than bytes is ignored (the whole file), and so is any Range
// on an empty file (there is nothing to cut; as http.ServeContent does).
func parseRanges(h string, size int64) ([][2]int64, rangeAnswer) {
	unit, spec, ok := strings.Cut(h, "=")
	if h == "" || !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || size == 0 {
		return nil, rangeWhole
	}
	var out [][2]int64
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue // empty list elements are allowed (RFC 9110, 5.6.1)
		}
		a, b, ok := strings.Cut(part, "-")
		if !ok {
			return nil, rangeUnsatisfiable
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if a == "" {
			n, ok := digits(b)
			if !ok {
				return nil, rangeUnsatisfiable
			}
			if n > 0 {
				out = append(out, [2]int64{size - min(n, size), size})
			}
			continue
		}
		start, ok := digits(a)
		if !ok {
			return nil, rangeUnsatisfiable
		}
		end := size
		if b != "" {
			last, ok := digits(b)
			if !ok || last < start {
				return nil, rangeUnsatisfiable
			}
			end = min(last, size-1) + 1
		}
		if start < size {
			out = append(out, [2]int64{start, end})
		}
	}
	if len(out) == 0 {
		return nil, rangeUnsatisfiable
	}
	return out, rangeParts
}

// digits parses a non-empty run of decimal digits (no sign, no space).
// Numbers past int64 count as the largest one: a range may name any
// position.
func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64, true // out of range; the digits are fine
	}
	return n, true
}

// formatRanges spells windows as a Range header.
func formatRanges(windows [][2]int64) string {
	b := []byte("bytes=")
	for i, w := range windows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, w[0], 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, w[1]-1, 10)
	}
	return string(b)
}
