package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// patched returns a file that held old and now holds new (same inode),
// and the journal of that patch.
func patched(t *testing.T, old, new []byte, spans []Span) (*os.File, *Journal) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(new); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, &Journal{Path: "f", Ino: statcache.StatOf(fi).Ino, OldSize: int64(len(old)), NewSize: int64(len(new)), Digest: hashing.Sum(old), Spans: spans}
}

func TestUndo(t *testing.T) {
	old := []byte("0123456789abcdef")
	new := []byte("01XX4567")
	for _, tc := range []struct {
		name     string
		ino      uint64 // 0: the file's own
		extra    []byte // written after the patch
		restored bool
		err      error
	}{
		{name: "restores"},
		{name: "replaced", ino: 1<<63 + 1},
		{name: "changed since", extra: []byte("!!!")},
		{name: "wrong bytes", extra: []byte("?")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, j := patched(t, old, new, []Span{{2, []byte("23")}, {8, []byte("89abcdef")}})
			if tc.ino != 0 {
				j.Ino = tc.ino
			}
			if tc.extra != nil {
				at := int64(len(new))
				if len(tc.extra) == 1 {
					at = 0 // same size: only the digest can tell
				}
				if _, err := f.WriteAt(tc.extra, at); err != nil {
					t.Fatal(err)
				}
			}
			dropped := false
			restored, hashed, err := j.Undo(f, "journal", func() error { dropped = true; return nil })
			if !dropped {
				t.Fatal("journal not dropped")
			}
			got, _ := os.ReadFile(f.Name())
			switch tc.name {
			case "restores":
				if !restored || hashed == 0 || err != nil || !bytes.Equal(got, old) {
					t.Fatalf("restored %v at %d, %v; file %q", restored, hashed, err, got)
				}
			case "replaced":
				if restored || err != nil || !bytes.Equal(got, new) {
					t.Fatalf("a replaced file: restored %v, %v; file %q", restored, err, got)
				}
			case "changed since":
				if restored || err == nil || errors.Is(err, ErrNotRestored) || !bytes.Equal(got, append(bytes.Clone(new), tc.extra...)) {
					t.Fatalf("a file of another size: restored %v, %v; file %q", restored, err, got)
				}
			case "wrong bytes":
				if restored || !errors.Is(err, ErrNotRestored) {
					t.Fatalf("bytes the journal does not cover: restored %v, %v", restored, err)
				}
			}
		})
	}
}
