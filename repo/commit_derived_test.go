package repo

import (
	"bytes"
	"context"
	"errors"
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
type sumTrailer struct{}

func (sumTrailer) Name() string            { return "sumtrailer" }
func (sumTrailer) Detect(head []byte) bool { return bytes.HasPrefix(head, []byte("SUMT")) }

func (sumTrailer) Layout(ctx context.Context, r io.ReaderAt, size int64) (*formats.Layout, error) {
	body := make([]byte, size-4-32)
	if _, err := r.ReadAt(body, 4); err != nil {
		return nil, err
	}
	l := &formats.Layout{Format: "sumtrailer", Version: 1, Segments: []formats.Segment{
		{Off: 0, Len: 4},
		{Off: 4, Len: size - 36, Key: "body"},
		{Off: size - 32, Len: 32, Derive: "sum"},
	}}
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

// streamTrailer is sumTrailer with a DeriveTo that writes the trailer in
// two halves, the second first ("ok"), or gets it wrong: only the first
// half ("skip"), or the first half twice ("twice").
type streamTrailer struct {
	sumTrailer
	mode string
}

func (a streamTrailer) DeriveTo(ctx context.Context, r io.ReaderAt, size int64, seg formats.Segment, w io.WriterAt) error {
	b, err := a.Derive(ctx, r, size, seg)
	if err != nil {
		return err
	}
	writes := map[string][][2]int{"ok": {{16, 32}, {0, 16}}, "skip": {{0, 16}}, "twice": {{0, 16}, {0, 32}}}[a.mode]
	for _, x := range writes {
		if _, err := w.WriteAt(b[x[0]:x[1]], int64(x[0])); err != nil {
			return err
		}
	}
	return nil
}

// TestDerivedChecked: a derived segment is kept only when the recipe (the
// adapter's Deriver, or its DeriveTo writing each byte once) gives the
// file's bytes; otherwise it is stored as chunks. Either way the file
// comes back whole.
func TestDerivedChecked(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	for _, a := range []formats.Adapter{sumTrailer{}, streamTrailer{mode: "ok"}, streamTrailer{mode: "skip"}, streamTrailer{mode: "twice"}} {
		keeps := a == sumTrailer{} || a == streamTrailer{mode: "ok"} // the good file's trailer derived
		dir := t.TempDir()
		r, err := Init(dir, "", Adapters{a})
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
			if want := name == "bad.st" || !keeps; stored != want {
				t.Errorf("%v, %s: trailer stored as a chunk: %v, want %v", a, name, stored, want)
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := r.Cat(context.Background(), "", name, &out); err != nil {
				t.Fatalf("%v: cat %s: %v", a, name, err)
			}
			if !bytes.Equal(out.Bytes(), b) {
				t.Errorf("%v: %s does not come back byte for byte", a, name)
			}
		}
		// A reader whose DeriveTo leaves bytes unwritten must not pass
		// them off as the file.
		if a == (streamTrailer{mode: "ok"}) {
			r2, err := Open(dir, Adapters{streamTrailer{mode: "skip"}})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err = r2.Cat(context.Background(), "", "good.st", &out)
			if !errors.Is(err, ErrIntegrity) {
				t.Errorf("cat with a DeriveTo that skips bytes: %v, want an integrity error", err)
			}
		}
	}
}
