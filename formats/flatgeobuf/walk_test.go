package flatgeobuf

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// TestWalkFirstError: the records of a segment are measured in shares on
// several goroutines, yet the error is the first bad record's in file
// order, as a sequential walk would report it; a bad length after it waits
// for it.
func TestWalkFirstError(t *testing.T) {
	_, data := pointsFGB(t, t.TempDir(), "walk", randomPoints(3000, 4), true)
	fs, err := Features(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3000 {
		t.Fatalf("%d features", len(fs))
	}
	// A record whose root offset points past its end fails featureBBox.
	breakRecord := func(b []byte, i int) { binary.LittleEndian.PutUint32(b[fs[i].Off+4:], 0x7ffffff0) }
	breakLength := func(b []byte, i int) { binary.LittleEndian.PutUint32(b[fs[i].Off:], 2) }
	for _, c := range []struct {
		name   string
		bad    func(b []byte)
		record int
	}{
		{"last share only", func(b []byte) { breakRecord(b, 2900) }, 2900},
		{"two shares", func(b []byte) { breakRecord(b, 2900); breakRecord(b, 40) }, 40},
		{"length after", func(b []byte) { breakRecord(b, 41); breakLength(b, 50) }, 41},
		{"length before", func(b []byte) { breakLength(b, 30); breakRecord(b, 2000) }, 30},
	} {
		b := bytes.Clone(data)
		c.bad(b)
		f, err := parseHead(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		visited := 0
		err = f.walk(context.Background(), bytes.NewReader(b), int64(len(b)), true, func(*Feature) error { visited++; return nil })
		want := fmt.Sprintf(" at %d", fs[c.record].Off)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming the record%s", c.name, err, want)
		}
		if visited > c.record {
			t.Errorf("%s: %d records visited, the bad one is record %d", c.name, visited, c.record)
		}
	}
}
