package gitdb

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitCLI runs git in dir and returns its standard output.
func gitCLI(t *testing.T, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// TestWriteBlobIsGits: the loose objects chunkvc writes itself are the ones
// git writes (same id, readable by git), and writing one that is already
// there, loose or packed, freshens it as git does.
func TestWriteBlobIsGits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git not found:", err)
	}
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("manifest line\n"), 50000)} {
		b, err := g.writeBlob(data)
		if err != nil {
			t.Fatalf("writeBlob(%d bytes): %v", len(data), err)
		}
		want := strings.TrimSpace(string(gitCLI(t, dir, data, "hash-object", "--stdin")))
		if b.Hash.String() != want || b.Size != len(data) {
			t.Errorf("writeBlob(%d bytes) = %s, %d bytes; git hash-object says %s", len(data), b.Hash, b.Size, want)
		}
		if got := gitCLI(t, dir, nil, "cat-file", "blob", want); !bytes.Equal(got, data) {
			t.Errorf("git cat-file of %s: %d bytes back, wrote %d", want, len(got), len(data))
		}
		if BlobHash(data).String() != want {
			t.Errorf("BlobHash(%d bytes) = %s, want %s", len(data), BlobHash(data), want)
		}
	}
	// Streamed (a large manifest): the same object as git's, whether new
	// or there already; a writer that gives another length is refused.
	for _, data := range [][]byte{bytes.Repeat([]byte("streamed line\n"), 60000), bytes.Repeat([]byte("manifest line\n"), 50000)} {
		write := func(w io.Writer) (int64, error) {
			var n int64
			for off := 0; off < len(data); off += 70000 {
				k, err := w.Write(data[off:min(off+70000, len(data))])
				if n += int64(k); err != nil {
					return n, err
				}
			}
			return n, nil
		}
		b, err := g.PutBlobFrom(len(data), write)
		want := strings.TrimSpace(string(gitCLI(t, dir, data, "hash-object", "--stdin")))
		if err != nil || b.Hash.String() != want || b.Size != len(data) {
			t.Fatalf("putBlobFrom(%d bytes) = %s, %d bytes, %v; git hash-object says %s", len(data), b.Hash, b.Size, err, want)
		}
		if got := gitCLI(t, dir, nil, "cat-file", "blob", want); !bytes.Equal(got, data) {
			t.Errorf("git cat-file of streamed %s: %d bytes back, wrote %d", want, len(got), len(data))
		}
		if _, err := g.PutBlobFrom(len(data)+1, write); err == nil {
			t.Errorf("putBlobFrom takes %d bytes for a blob of %d", len(data), len(data)+1)
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "tmp_obj_*"))
	inFolders, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "*", "tmp_obj_*"))
	if tmps = append(tmps, inFolders...); len(tmps) > 0 {
		t.Errorf("temp objects left: %v", tmps)
	}
	gitCLI(t, dir, nil, "fsck", "--strict")

	// Present already: freshened (git gc must not prune an old unreachable
	// blob that a commit is about to reference). Loose: a new mtime.
	enc := []byte("loose already\n")
	b, err := g.writeBlob(enc)
	if err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, ".git", "objects", b.Hash.String()[:2], b.Hash.String()[2:])
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(loose, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := g.writeBlob(enc); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(loose); err != nil || fi.ModTime().Before(time.Now().Add(-time.Hour)) {
		t.Errorf("an existing loose object was not freshened: %v, %v", fi.ModTime(), err)
	}
	// Packed by git: written loose again, readable by git.
	data := []byte("packed already\n")
	h := strings.TrimSpace(string(gitCLI(t, dir, data, "hash-object", "--stdin")))
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, dir, nil, "add", "f")
	gitCLI(t, dir, nil, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "f")
	gitCLI(t, dir, nil, "repack", "-a", "-d", "-q")
	gitCLI(t, dir, nil, "prune-packed")
	loose = filepath.Join(dir, ".git", "objects", h[:2], h[2:])
	if _, err := os.Stat(loose); err == nil {
		t.Fatal("git left the object loose; the test proves nothing")
	}
	if b, err := g.writeBlob(data); err != nil || b.Hash.String() != h {
		t.Fatalf("writeBlob of a packed object = %s, %v; want %s", b.Hash, err, h)
	}
	if _, err := os.Stat(loose); err != nil {
		t.Errorf("a packed object was not freshened by a loose copy: %v", err)
	}
	gitCLI(t, dir, nil, "fsck", "--strict")
}
