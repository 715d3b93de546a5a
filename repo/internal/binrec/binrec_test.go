package binrec

import (
	"encoding/binary"
	"testing"
)

func TestReader(t *testing.T) {
	b := binary.AppendUvarint(nil, 300)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "abcd"...)
	r := Reader{B: b}
	if v := r.Uvarint(); v != 300 {
		t.Fatalf("uvarint %d", v)
	}
	if s := string(r.Bytes(r.Uvarint())); s != "abc" || r.Bad || string(r.B) != "d" {
		t.Fatalf("bytes %q, bad %v, rest %q", s, r.Bad, r.B)
	}
	if r.Bytes(2) != nil || !r.Bad || r.Uvarint() != 0 {
		t.Fatal("a short field did not set Bad and zero what follows")
	}
	r = Reader{B: []byte{0xff, 0xff}}
	if r.Uvarint() != 0 || !r.Bad {
		t.Fatal("a truncated varint did not set Bad")
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0x03, 'a', 'b', 'c'}, uint8(3))
	f.Add([]byte{0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, ops uint8) {
		r := Reader{B: b}
		for i := 0; i < int(ops%16); i++ {
			if i%2 == 0 {
				r.Uvarint()
			} else {
				r.Bytes(r.Uvarint())
			}
		}
		if r.Bad && (r.Uvarint() != 0 || r.Bytes(0) != nil) {
			t.Fatal("reads after Bad yield values")
		}
	})
}

func TestAppendShared(t *testing.T) {
	b := AppendShared(nil, "", "t2m/0.1")
	b = AppendShared(b, "t2m/0.1", "t2m/0.12")
	b = AppendShared(b, "t2m/0.12", "u")
	want := []byte{0, 7, 't', '2', 'm', '/', '0', '.', '1', 7, 1, '2', 0, 1, 'u'}
	if string(b) != string(want) {
		t.Fatalf("AppendShared wrote %q, want %q", b, want)
	}
}
