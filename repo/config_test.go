package repo

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzParseConfig: ParseConfig takes any bytes without a panic, and a
// config it accepts encodes to text it parses back to the same config,
// which encodes to the same bytes.
func FuzzParseConfig(f *testing.F) {
	f.Add((&Config{Store: "s3://bucket/prefix?region=eu-west-1", Track: []string{"*.tif", "/lake/**/*.parquet"}}).Encode())
	f.Add((&Config{}).Encode())
	f.Add([]byte("version = 1\r\nstore = /srv/chunks\r\ntrack = *.fgb\r\n"))
	f.Add([]byte("  # comment\n\nstore=a=b\ntrack = a/../b\n"))
	f.Add([]byte("version = 2\n"))
	f.Add([]byte("colour = blue\n"))
	f.Add([]byte("store\n"))
	f.Add([]byte("track = [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		enc := c.Encode()
		c2, err := ParseConfig(enc)
		if err != nil {
			t.Fatalf("ParseConfig of its own encoding %q: %v", enc, err)
		}
		if c2.Store != c.Store || !slices.Equal(c2.Track, c.Track) {
			t.Fatalf("round trip: %+v, then %+v", c, c2)
		}
		if enc2 := c2.Encode(); !bytes.Equal(enc2, enc) {
			t.Fatalf("encoding not stable: %q, then %q", enc, enc2)
		}
	})
}
