package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

func inlineLayout(b string) *Layout {
	var l Layout
	l.Append(Piece{Len: int64(len(b)), Inline: []byte(b)})
	return &l
}

func shardLayout() *Layout {
	var l Layout
	l.Append(Piece{Len: 100, Chunk: true, ID: hashing.Sum([]byte("inner 0"))})
	l.Append(Piece{Len: 50, Chunk: true, ID: hashing.Sum([]byte("inner 1"))})
	l.Append(Piece{Len: 36, Derive: "zarr-shard-index", ID: hashing.Sum([]byte("index"))})
	return &l
}

func sampleMembers() []Member {
	return []Member{
		{Path: ".zgroup", Role: RoleDocument, Layout: inlineLayout(`{"zarr_format":2}`)},
		{Path: "README", Role: RoleOther, Layout: inlineLayout("hello\n")},
		{Path: "t2m/.zarray", Role: RoleDocument, Layout: inlineLayout(`{"shape":[4]}`)},
		{Path: "temp/c/0/0", Role: RoleShard, Layout: shardLayout()},
	}
}

func TestDatasetRoundTrip(t *testing.T) {
	ms := sampleMembers()
	blob, err := EncodeDataset(ms)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDataset(blob)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ms) {
		t.Fatalf("decoded %d members, encoded %d", len(got), len(ms))
	}
	for i, m := range got {
		if m.Path != ms[i].Path || m.Role != ms[i].Role || !bytes.Equal(m.Layout.Encode(), ms[i].Layout.Encode()) {
			t.Fatalf("member %d: got %s %s, want %s %s", i, m.Path, m.Role, ms[i].Path, ms[i].Role)
		}
	}
	again, err := EncodeDataset(got)
	if err != nil || !bytes.Equal(again, blob) {
		t.Fatalf("re-encoded blob differs: %v", err)
	}
	empty, err := EncodeDataset(nil)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := DecodeDataset(empty); err != nil || len(ms) != 0 {
		t.Fatalf("empty dataset: %d members, %v", len(ms), err)
	}
}

func TestDatasetEncodeRefuses(t *testing.T) {
	for name, mutate := range map[string]func([]Member){
		"out of order": func(ms []Member) { ms[0], ms[1] = ms[1], ms[0] },
		"twice":        func(ms []Member) { ms[1].Path = ms[0].Path },
		"escaping":     func(ms []Member) { ms[0].Path = "../.zgroup" },
		"absolute":     func(ms []Member) { ms[0].Path = "/etc/passwd" },
		"no role":      func(ms []Member) { ms[2].Role = 0 },
		"no layout":    func(ms []Member) { ms[3].Layout = nil },
	} {
		ms := sampleMembers()
		mutate(ms)
		if _, err := EncodeDataset(ms); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: encoded (err %v)", name, err)
		}
	}
}

// Every way a blob can differ from EncodeDataset's output is refused.
func TestDatasetDecodeRefuses(t *testing.T) {
	good, err := EncodeDataset(sampleMembers())
	if err != nil {
		t.Fatal(err)
	}
	// An uncoalesced layout (two inline pieces in a row) decodes as a
	// layout but is not what Encode writes.
	uncoalesced := binary.AppendUvarint([]byte(layoutMagic), 2)
	uncoalesced = append(binary.AppendUvarint(uncoalesced, 2), 0, 1, 'a', 0, 1, 'b')
	nonCanon := binary.AppendUvarint([]byte(datasetMagic), 1)
	nonCanon = append(binary.AppendUvarint(nonCanon, 1), 'x', byte(RoleDocument))
	nonCanon = append(binary.AppendUvarint(nonCanon, uint64(len(uncoalesced))), uncoalesced...)
	if _, err := DecodeLayout(uncoalesced); err != nil {
		t.Fatalf("the test's layout should decode alone: %v", err)
	}
	overlong := append([]byte(datasetMagic), 0x84, 0x00) // 4 as two bytes
	overlong = append(overlong, good[len(datasetMagic)+1:]...)
	cases := map[string][]byte{
		"magic":        append([]byte("chunkvc-dataset 2\n"), good[len(datasetMagic):]...),
		"trailing":     append(append([]byte(nil), good...), 0),
		"truncated":    good[:len(good)-1],
		"count high":   append(append([]byte(datasetMagic), 200), good[len(datasetMagic)+1:]...),
		"overlong":     overlong,
		"noncanonical": nonCanon,
	}
	for name, blob := range cases {
		if _, err := DecodeDataset(blob); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: decoded (err %v)", name, err)
		}
	}
}

func TestDatasetDigest(t *testing.T) {
	id := func(s string) hashing.ID { return hashing.Sum([]byte(s)) }
	sum := func(add func(d *DatasetDigest) error) hashing.ID {
		t.Helper()
		d := NewDatasetDigest()
		if err := add(d); err != nil {
			t.Fatal(err)
		}
		return d.Sum()
	}
	base := sum(func(d *DatasetDigest) error {
		if err := d.Add(".zgroup", 17, id("g")); err != nil {
			return err
		}
		return d.Add("t2m/0.0", 1000, id("c"))
	})
	variants := map[string]func(d *DatasetDigest) error{
		"other id": func(d *DatasetDigest) error {
			_ = d.Add(".zgroup", 17, id("g"))
			return d.Add("t2m/0.0", 1000, id("C"))
		},
		"other size": func(d *DatasetDigest) error {
			_ = d.Add(".zgroup", 17, id("g"))
			return d.Add("t2m/0.0", 1001, id("c"))
		},
		"other path": func(d *DatasetDigest) error {
			_ = d.Add(".zgroup", 17, id("g"))
			return d.Add("t2m/0.1", 1000, id("c"))
		},
		"one less": func(d *DatasetDigest) error { return d.Add("t2m/0.0", 1000, id("c")) },
		// A path and size that would run together without separators.
		"shifted": func(d *DatasetDigest) error {
			_ = d.Add(".zgroup1", 7, id("g"))
			return d.Add("t2m/0.0", 1000, id("c"))
		},
	}
	for name, add := range variants {
		if sum(add) == base {
			t.Errorf("%s: same digest", name)
		}
	}
	d := NewDatasetDigest()
	_ = d.Add("b", 1, id("x"))
	if err := d.Add("a", 1, id("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a member out of order was added (err %v)", err)
	}
	if err := d.Add("b", 1, id("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a member twice was added (err %v)", err)
	}
}

func FuzzDecodeDataset(f *testing.F) {
	good, err := EncodeDataset(sampleMembers())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	empty, _ := EncodeDataset(nil)
	f.Add(empty)
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := DecodeDataset(data)
		if err != nil {
			return
		}
		again, err := EncodeDataset(ms)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted a dataset layout that does not re-encode to itself: %v", err)
		}
	})
}
