package fileio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCopyRange(t *testing.T) {
	dir := t.TempDir()
	src, err := os.Create(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(filepath.Join(dir, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if _, err := src.Write(data); err != nil {
		t.Fatal(err)
	}
	done, err := CopyRange(dst, 5, src, 100, 3000)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst.Name())
	if !done {
		if len(got) != 0 {
			t.Fatalf("reported nothing copied, and wrote %d bytes", len(got))
		}
		t.Log("copy_file_range cannot copy here; the caller copies by hand")
		return
	}
	if len(got) != 3005 || !bytes.Equal(got[5:], data[100:3100]) {
		t.Fatalf("copied %d bytes, not bytes 100..3100 at 5", len(got))
	}
	if done, err := CopyRange(dst, 0, src, int64(len(data))-10, 20); done && err == nil {
		t.Fatal("a copy past the source's end reported no error")
	}
}

type buf []byte

func (b buf) WriteAt(p []byte, off int64) (int, error) { return copy(b[off:], p), nil }

func TestSectionWriter(t *testing.T) {
	b := make(buf, 10)
	w := &SectionWriter{W: b, Off: 3, N: 4}
	if n, err := w.WriteAt([]byte("ab"), 1); n != 2 || err != nil {
		t.Fatalf("write inside: %d, %v", n, err)
	}
	if string(b[4:6]) != "ab" {
		t.Fatalf("wrote %q", b)
	}
	for _, at := range []int64{-1, 3, 5} {
		if n, err := w.WriteAt([]byte("xy"), at); n != 0 || err == nil {
			t.Fatalf("write at %d outside the section: %d, %v", at, n, err)
		}
	}
	if !bytes.Equal(b, buf("\x00\x00\x00\x00ab\x00\x00\x00\x00")) {
		t.Fatalf("a refused write changed bytes: %q", b)
	}
}
