package repo

import (
	"bytes"
	"slices"
	"testing"
	"time"
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
	f.Add([]byte("key = osm_id lake/**\nkey = id\n"))
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
		if c2.Store != c.Store || !slices.Equal(c2.Track, c.Track) || !slices.Equal(c2.Keys, c.Keys) {
			t.Fatalf("round trip: %+v, then %+v", c, c2)
		}
		if enc2 := c2.Encode(); !bytes.Equal(enc2, enc) {
			t.Fatalf("encoding not stable: %q, then %q", enc, enc2)
		}
	})
}

// retention = WINDOW reads the windows gc --expire takes, round-trips,
// and refuses what is no positive window.
func TestConfigRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "12h": 12 * time.Hour,
		"90m": 90 * time.Minute, "45s": 45 * time.Second, "1h30m": 90 * time.Minute,
	} {
		got, err := ParseRetention(in)
		if err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0d", "-3d", "d", "30x", "1.5d", "-1h"} {
		if _, err := ParseRetention(bad); err == nil {
			t.Errorf("ParseRetention(%q) accepted", bad)
		}
	}
	c, err := ParseConfig([]byte("version = 1\ntrack = *.parquet\nretention = 30d\n"))
	if err != nil || c.Retention != "30d" {
		t.Fatalf("parse: %+v, %v", c, err)
	}
	if c2, err := ParseConfig(c.Encode()); err != nil || c2.Retention != "30d" {
		t.Fatalf("round trip: %+v, %v", c2, err)
	}
	for _, bad := range []string{"retention = soon\n", "retention = 30d\nretention = 7d\n"} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%q) accepted", bad)
		}
	}
}

// Key lines parse, keep their order, round-trip, and refuse a missing
// pattern or a bad one.
func TestKeyConfig(t *testing.T) {
	c, err := ParseConfig([]byte("version = 1\ntrack = lake/**\nkey = osm_id lake/osm/**\nkey = id lake/**\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []KeyRule{{"osm_id", "lake/osm/**"}, {"id", "lake/**"}}
	if !slices.Equal(c.Keys, want) {
		t.Fatalf("keys %+v, want %+v", c.Keys, want)
	}
	back, err := ParseConfig(c.Encode())
	if err != nil || !slices.Equal(back.Keys, want) {
		t.Fatalf("round trip %+v %v", back, err)
	}
	for _, bad := range []string{"key = id\n", "key = \n", "key = id [\n"} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
