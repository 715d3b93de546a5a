package serve

import (
	"slices"
	"testing"
)

func TestParseRanges(t *testing.T) {
	const size = 1000
	for _, c := range []struct {
		header string
		want   [][2]int64
		answer rangeAnswer
	}{
		{"", nil, rangeWhole},
		{"bytes=0-0", [][2]int64{{0, 1}}, rangeParts},
		{"bytes=-0", nil, rangeUnsatisfiable},
		{"bytes=-1", [][2]int64{{999, 1000}}, rangeParts},
		{"bytes=-5000", [][2]int64{{0, 1000}}, rangeParts},
		{"bytes=999-", [][2]int64{{999, 1000}}, rangeParts},
		{"bytes=1000-", nil, rangeUnsatisfiable},
		{"bytes=990-99999999999999999999", [][2]int64{{990, 1000}}, rangeParts},
		{"bytes=99999999999999999999-", nil, rangeUnsatisfiable},
		{"bytes=5-4", nil, rangeUnsatisfiable},
		{"bytes=-0,1000-,0-1", [][2]int64{{0, 2}}, rangeParts},
		{"bytes=10-19, -3 ,", [][2]int64{{10, 20}, {997, 1000}}, rangeParts},
		{"bytes=,", nil, rangeUnsatisfiable},
		{"bytes=1", nil, rangeUnsatisfiable},
		{"bytes=+1-2", nil, rangeUnsatisfiable},
		{"bytes=--1", nil, rangeUnsatisfiable},
		{"BYTES=0-1", [][2]int64{{0, 2}}, rangeParts},
		{"items=0-1", nil, rangeWhole},
		{"bytes", nil, rangeWhole},
	} {
		got, answer := parseRanges(c.header, size)
		if answer != c.answer || !slices.Equal(got, c.want) {
			t.Errorf("parseRanges(%q) = %v, %d; want %v, %d", c.header, got, answer, c.want, c.answer)
		}
	}
	if _, answer := parseRanges("bytes=-0", 0); answer != rangeWhole {
		t.Errorf("a range of an empty file: %d, want the whole (empty) file", answer)
	}
}

// FuzzParseRanges: any header gives windows inside the file, non-empty,
// that spell back as a header asking exactly them.
func FuzzParseRanges(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-0", "bytes=-5000", "bytes=999-", "bytes=5-4",
		"bytes=-0,1000-,0-1", "bytes=10-19, -3 ,", "bytes=99999999999999999999-", "Bytes=1-2", "items=1-2", "bytes=,,"} {
		f.Add(s, int64(1000))
	}
	f.Add("bytes=0-", int64(0))
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		got, answer := parseRanges(header, size)
		if answer != rangeParts {
			if got != nil {
				t.Fatalf("answer %d with windows %v", answer, got)
			}
			if size == 0 && answer != rangeWhole {
				t.Fatalf("a range of an empty file is not ignored: %d", answer)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("no windows to send")
		}
		for _, w := range got {
			if w[0] < 0 || w[0] >= w[1] || w[1] > size {
				t.Fatalf("window %v of a %d-byte file", w, size)
			}
		}
		again, answer := parseRanges(formatRanges(got), size)
		if answer != rangeParts || !slices.Equal(again, got) {
			t.Fatalf("%q gives %v, spelled %q, which gives %v", header, got, formatRanges(got), again)
		}
	})
}
