package repo

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
)

// sumTrailer is a test format: "SUMT", a body, and the BLAKE3 of the body,
// which its Deriver regenerates. Its Layout always claims the trailer is
// derived, right or not, as a buggy adapter could: the pipeline must check.
// With closure set, the layout carries a Derived computed from the parse,
// as the FlatGeobuf adapter's does.
type sumTrailer struct{ closure bool }

func (sumTrailer) Name() string            { return "sumtrailer" }
func (sumTrailer) Detect(head []byte) bool { return bytes.HasPrefix(head, []byte("SUMT")) }

func (a sumTrailer) Layout(ctx context.Context, r io.ReaderAt, size int64) (*formats.Layout, error) {
	body := make([]byte, size-4-32)
	if _, err := r.ReadAt(body, 4); err != nil {
		return nil, err
	}
	l := &formats.Layout{Format: "sumtrailer", Version: 1, Segments: []formats.Segment{
		{Off: 0, Len: 4},
		{Off: 4, Len: size - 36, Key: "body"},
		{Off: size - 32, Len: 32, Derive: "sum"},
	}}
	if a.closure {
		id := hashing.Sum(body)
		l.Derived = func(context.Context, formats.Segment) ([]byte, error) { return id[:], nil }
	}
	return l, nil
}

func (sumTrailer) Derive(ctx context.Context, r io.ReaderAt, size int64, seg formats.Segment) ([]byte, error) {
	body := make([]byte, size-4-32)
	if _, err := r.ReadAt(body, 4); err != nil {
		return nil, err
	}
	id := hashing.Sum(body)
	return id[:], nil
}

// TestDerivedChecked: a derived segment is kept only when the recipe (the
// layout's Derived or the adapter's Deriver) gives the file's bytes;
// otherwise it is stored as chunks. Either way the file comes back whole.
func TestDerivedChecked(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	for _, closure := range []bool{false, true} {
		dir := t.TempDir()
		r, err := Init(dir, "", Adapters{sumTrailer{closure: closure}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Track([]string{"*.st"}); err != nil {
			t.Fatal(err)
		}
		body := randomData(200<<10, 7)
		sum := hashing.Sum(body)
		good := append(append([]byte("SUMT"), body...), sum[:]...)
		bad := bytes.Clone(good)
		bad[len(bad)-1] ^= 0x80
		files := map[string][]byte{"good.st": good, "bad.st": bad}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Commit(context.Background(), CommitOptions{Message: "v1"}); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			m, err := r.Manifest("", name)
			if err != nil {
				t.Fatal(err)
			}
			stored := false // the trailer's 32 bytes stored as a chunk of their own
			for _, c := range m.Chunks {
				stored = stored || strings.HasPrefix(c.Key, "derived")
			}
			if want := name == "bad.st"; stored != want {
				t.Errorf("closure %v, %s: trailer stored as a chunk: %v, want %v", closure, name, stored, want)
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := r.Cat(context.Background(), "", name, &out); err != nil {
				t.Fatalf("closure %v: cat %s: %v", closure, name, err)
			}
			if !bytes.Equal(out.Bytes(), b) {
				t.Errorf("closure %v: %s does not come back byte for byte", closure, name)
			}
		}
	}
}
