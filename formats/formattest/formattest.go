// Package formattest is the conformance suite every format adapter passes:
// byte-exact round trip, determinism, valid coverage, robustness on damaged
// input, and locality of edits. It also finds the shared corpus.
package formattest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
)

// File is one test input.
type File struct {
	Name string
	Data []byte
}

// CorpusDir returns the shared corpus folder (../shared/corpus from the
// module root, or $CHUNKVC_CORPUS). Under CI=true a missing corpus fails the
// test; elsewhere it skips.
func CorpusDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("CHUNKVC_CORPUS"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			c := filepath.Join(filepath.Dir(d), "shared", "corpus")
			if _, err := os.Stat(c); err == nil {
				return c
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("shared corpus not found (set CHUNKVC_CORPUS)")
	}
	t.Skip("shared corpus not found (set CHUNKVC_CORPUS)")
	return ""
}

// Corpus returns the corpus files whose names end in one of exts
// (case-insensitive; no exts means every file but README.md and SOURCES.tsv),
// sorted by name.
func Corpus(t testing.TB, exts ...string) []File {
	t.Helper()
	dir := CorpusDir(t)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []File
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || name == "README.md" || name == "SOURCES.tsv" {
			continue
		}
		if len(exts) > 0 && !hasExt(name, exts) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, File{Name: name, Data: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hasExt(name string, exts []string) bool {
	l := strings.ToLower(name)
	for _, e := range exts {
		if strings.HasSuffix(l, strings.ToLower(e)) {
			return true
		}
	}
	return false
}

// Layout runs a directly (no fallback) and returns its layout, or nil and
// the error.
func Layout(a formats.Adapter, data []byte) (*formats.Layout, error) {
	return a.Layout(context.Background(), bytes.NewReader(data), int64(len(data)))
}

// Reassemble rebuilds a file from its layout: inline bytes and chunk bytes
// are taken from separate copies, keyed by hash, the way checkout does.
func Reassemble(t testing.TB, l *formats.Layout, data []byte) []byte {
	t.Helper()
	chunks := map[hashing.ID][]byte{}
	for _, s := range l.Chunks() {
		b := append([]byte(nil), data[s.Off:s.Off+s.Len]...)
		chunks[hashing.Sum(b)] = b
	}
	var out bytes.Buffer
	for _, s := range l.Segments {
		if s.IsChunk() {
			out.Write(chunks[hashing.Sum(data[s.Off:s.Off+s.Len])])
		} else {
			out.Write(data[s.Off : s.Off+s.Len])
		}
	}
	return out.Bytes()
}

// Run is the conformance suite for adapter a over files. Every file must
// yield a layout (native, or an error that sends it to the generic adapter)
// that covers it exactly, reassembles byte for byte and is deterministic.
// native lists the names that must not fall back.
func Run(t *testing.T, a formats.Adapter, files []File, native map[string]bool) {
	t.Helper()
	for _, f := range files {
		t.Run(f.Name, func(t *testing.T) {
			l, err := Layout(a, f.Data)
			if err != nil {
				if native[f.Name] {
					t.Fatalf("%s: adapter refused a file it must read: %v", a.Name(), err)
				}
				t.Logf("falls back: %v", err)
				return
			}
			if err := formats.Check(l, int64(len(f.Data))); err != nil {
				t.Fatalf("layout does not cover the file: %v", err)
			}
			if got := Reassemble(t, l, f.Data); !bytes.Equal(got, f.Data) {
				t.Fatalf("reassembled %d bytes differ from the %d-byte original", len(got), len(f.Data))
			}
			l2, err := Layout(a, f.Data)
			if err != nil {
				t.Fatalf("second run failed: %v", err)
			}
			if !sameLayout(l, l2) {
				t.Fatal("two runs over the same bytes gave different layouts")
			}
		})
	}
}

func sameLayout(a, b *formats.Layout) bool {
	if a.Format != b.Format || a.Version != b.Version || a.Params != b.Params || len(a.Segments) != len(b.Segments) ||
		len(a.Summary) != len(b.Summary) || len(a.Aliases) != len(b.Aliases) {
		return false
	}
	for i := range a.Summary {
		if a.Summary[i] != b.Summary[i] {
			return false
		}
	}
	for i := range a.Segments {
		if !sameSeg(a.Segments[i], b.Segments[i]) {
			return false
		}
	}
	for i := range a.Aliases {
		if !sameSeg(a.Aliases[i], b.Aliases[i]) {
			return false
		}
	}
	return true
}

func sameSeg(x, y formats.Segment) bool {
	if x.Off != y.Off || x.Len != y.Len || x.Key != y.Key || (x.BBox == nil) != (y.BBox == nil) {
		return false
	}
	return x.BBox == nil || *x.BBox == *y.BBox
}

// Damaged runs a over truncations and byte flips of each file: it may
// refuse, but must not panic, and whatever it returns must pass Check and
// reassemble exactly.
func Damaged(t *testing.T, a formats.Adapter, files []File) {
	t.Helper()
	for _, f := range files {
		d := f.Data
		var variants [][]byte
		for _, n := range []int{0, 1, 7, 8, 16, len(d) / 3, len(d) / 2, len(d) - 1} {
			if n >= 0 && n < len(d) {
				variants = append(variants, d[:n])
			}
		}
		for i := 0; i < 24 && len(d) > 0; i++ {
			v := append([]byte(nil), d...)
			p := (i*7919 + 13) % len(v)
			v[p] ^= byte(0x5a + i)
			variants = append(variants, v)
		}
		for _, v := range variants {
			Fuzz(t, a, v)
		}
	}
}

// Fuzz is the body of every adapter's fuzz target: no panic, and any layout
// returned is valid and byte-exact.
func Fuzz(t testing.TB, a formats.Adapter, data []byte) {
	t.Helper()
	_ = a.Detect(data[:min(len(data), formats.HeadSize)])
	l, err := Layout(a, data)
	if err != nil {
		return
	}
	if err := formats.Check(l, int64(len(data))); err != nil {
		t.Fatalf("%s accepted %d bytes with an invalid layout: %v", a.Name(), len(data), err)
	}
	if got := Reassemble(t, l, data); !bytes.Equal(got, data) {
		t.Fatalf("%s: reassembly differs", a.Name())
	}
}

// Seeds adds every corpus file with one of exts to f.
func Seeds(f *testing.F, exts ...string) {
	for _, c := range Corpus(f, exts...) {
		f.Add(c.Data)
	}
}

// ChangedBytes returns how many chunk bytes of after are not found, by hash,
// among the chunks of before, plus after's inline bytes: what a commit of
// after would add to a store that holds before.
func ChangedBytes(t testing.TB, a formats.Adapter, before, after []byte) int64 {
	t.Helper()
	lb, err := Layout(a, before)
	if err != nil {
		t.Fatalf("before: %v", err)
	}
	la, err := Layout(a, after)
	if err != nil {
		t.Fatalf("after: %v", err)
	}
	have := map[hashing.ID]bool{}
	for _, s := range lb.Chunks() {
		have[hashing.Sum(before[s.Off:s.Off+s.Len])] = true
	}
	n := la.InlineBytes()
	for _, s := range la.Chunks() {
		id := hashing.Sum(after[s.Off : s.Off+s.Len])
		if !have[id] {
			n += s.Len
			have[id] = true
		}
	}
	return n
}
