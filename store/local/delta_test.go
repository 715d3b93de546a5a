package local_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/local"
)

// A delta whose own bytes no longer decode (its base is intact) is
// corrupt, and the error names the object.
func TestDamagedDelta(t *testing.T) {
	s := open(t)
	txt := text(200000)
	base := batch(t, s, txt)[0]
	edited := bytes.Clone(txt)
	copy(edited[1000:], "edited")
	d := batchLike(t, s, edited, base)
	e := packsOf(t, s)[d]
	if e.Encoding != packidx.Delta {
		t.Fatalf("the edit is stored as %v, want a delta", e.Encoding)
	}
	rewritable(t, e.pack)
	b, err := os.ReadFile(e.pack)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[e.Offset : e.Offset+e.Stored]) // no zstd frame starts with zeros
	if err := os.WriteFile(e.pack, b, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*local.Store{s, reopen(t, s)} {
		got, err := store.ReadAll(t.Context(), st, d)
		if got != nil || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), d.Short()) {
			t.Errorf("ReadAll of a damaged delta: %d bytes, %v; want ErrCorrupt naming %s", len(got), err, d.Short())
		}
		rc, err := st.Get(t.Context(), d, 100, 10)
		if err == nil {
			rc.Close()
		}
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), d.Short()) {
			t.Errorf("Get of 10 bytes of a damaged delta: %v; want ErrCorrupt naming %s", err, d.Short())
		}
		if got, err := store.ReadAll(t.Context(), st, base); err != nil || hashing.Sum(got) != base {
			t.Errorf("ReadAll of the delta's base: %d bytes, %v", len(got), err)
		}
	}
}
