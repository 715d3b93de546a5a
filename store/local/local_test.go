package local_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/local"
	"github.com/chunkvc/chunkvc/store/storetest"
)

func open(t testing.TB) *local.Store {
	t.Helper()
	s, err := local.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objPath is where the documented layout puts id.
func objPath(s *local.Store, id hashing.ID) string {
	h := id.String()
	return filepath.Join(s.Root(), h[:2], h)
}

func object(seed int64, n int) ([]byte, hashing.ID) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b, hashing.Sum(b)
}

func put(t *testing.T, s store.Store, data []byte) hashing.ID {
	t.Helper()
	id := hashing.Sum(data)
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestOpenCreatesRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "b")
	s, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if s.Root() != root || s.String() != root {
		t.Errorf("Root() = %q, String() = %q; want %q", s.Root(), s.String(), root)
	}
	if fi, err := os.Stat(filepath.Join(root, local.TmpDir)); err != nil || !fi.IsDir() {
		t.Errorf("tmp folder not created: %v", err)
	}
	if _, err := local.Open(root); err != nil {
		t.Errorf("reopen: %v", err)
	}
}

// failsNaming opens root and puts an object; one of the two must fail with
// an error naming want.
func failsNaming(t *testing.T, root, want string) {
	t.Helper()
	s, err := local.Open(root)
	if err == nil {
		data := []byte("x")
		err = store.Put(t.Context(), s, hashing.Sum(data), data)
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("open and put in %s: err = %v, want an error naming %s", root, err, want)
	}
}

func TestRootIsPlainFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(root, []byte("not a store"), 0o644); err != nil {
		t.Fatal(err)
	}
	failsNaming(t, root, root)
}

func TestRootNotWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("permissions do not bind root")
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	s := open(t)
	for _, dir := range []string{fresh, s.Root(), filepath.Join(s.Root(), local.TmpDir)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	failsNaming(t, fresh, fresh)
	failsNaming(t, s.Root(), s.Root())
}

// damage rewrites the file of id with f applied to its bytes.
func damage(t *testing.T, s *local.Store, id hashing.ID, f func([]byte) []byte) {
	t.Helper()
	p := objPath(s, id)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, f(b), 0o444); err != nil {
		t.Fatal(err)
	}
}

func TestFlippedByte(t *testing.T) {
	s := open(t)
	data, _ := object(1, 10000)
	id := put(t, s, data)
	damage(t, s, id, func(b []byte) []byte { b[5000] ^= 0x10; return b })
	if _, err := store.ReadAll(t.Context(), s, id); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("ReadAll of a flipped byte: err = %v, want ErrCorrupt", err)
	}
	if err := store.Verify(t.Context(), s, id, 10000, true); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Verify(full) of a flipped byte: err = %v, want ErrCorrupt", err)
	}
	if err := store.Verify(t.Context(), s, id, 10000, false); err != nil {
		t.Errorf("Verify(size only) of a flipped byte: %v; the size is right", err)
	}
}

func TestWrongSizeRepairedByPut(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }},
		{"empty", func(b []byte) []byte { return nil }},
		{"extended", func(b []byte) []byte { return append(b, "junk"...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			data, _ := object(2, 4000)
			id := put(t, s, data)
			damage(t, s, id, c.f)
			err := store.Verify(t.Context(), s, id, 4000, false)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "size") {
				t.Errorf("Verify(size only) of a %s object: err = %v, want a size mismatch", c.name, err)
			}
			put(t, s, data)
			if err := store.Verify(t.Context(), s, id, 4000, true); err != nil {
				t.Errorf("Verify(full) after re-put: %v", err)
			}
			wantReadOnly(t, objPath(s, id))
		})
	}
}

func wantReadOnly(t *testing.T, p string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o444 {
		t.Errorf("%s has mode %v, want -r--r--r--", p, fi.Mode())
	}
}

func TestLayoutAndReadOnly(t *testing.T) {
	s := open(t)
	data, _ := object(3, 300)
	id := put(t, s, data)
	p := objPath(s, id)
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("object file %s: %d bytes, %v; want the object", p, len(b), err)
	}
	wantReadOnly(t, p)
}

func TestNoTempFilesLeft(t *testing.T) {
	s := open(t)
	g, ctx := errgroup.WithContext(t.Context())
	for i := 0; i < 32; i++ {
		g.Go(func() error {
			data, id := object(int64(i%4), 50000)
			return store.Put(ctx, s, id, data)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// A put that fails at the rename: a folder holds its place.
	data := []byte("blocked")
	id := hashing.Sum(data)
	p := objPath(s, id)
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := store.Put(t.Context(), s, id, data)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), id.Short()) {
		t.Errorf("put over a folder: err = %v, want an error naming %s", err, p)
	}
	left, err := filepath.Glob(filepath.Join(s.Root(), "*", ".put-*"))
	if err != nil || len(left) != 0 {
		t.Errorf("temp files after puts: %v, %v; want none", left, err)
	}
}

func TestListSkipsJunk(t *testing.T) {
	s := open(t)
	data, _ := object(4, 123)
	id := put(t, s, data)
	h, other := id.String(), hashing.Sum([]byte("other")).String()
	wrongFan := "00"
	if h[:2] == wrongFan {
		wrongFan = "01"
	}
	for _, p := range []string{
		"README", "zz/" + h, h[:2] + "/notes.txt", h[:2] + "/" + h[:2] + strings.ToUpper(h[2:]),
		h[:2] + "/" + h + ".tmp", h[:2] + "x/" + h, local.TmpDir + "/" + other,
		wrongFan + "/" + other,        // an ID in the wrong fan-out folder
		other[:2] + "/" + other + "/", // a folder named like an object
	} {
		full := filepath.Join(s.Root(), p)
		dir := filepath.Dir(full)
		if strings.HasSuffix(p, "/") {
			dir = full
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(p, "/") {
			if err := os.WriteFile(full, []byte("junk"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []store.Info
	if err := s.List(t.Context(), func(i store.Info) error { got = append(got, i); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || got[0].Size != 123 {
		t.Errorf("List = %+v, want only %s (123 bytes)", got, id.Short())
	}
}

func TestErrorsNamePath(t *testing.T) {
	s := open(t)
	data, _ := object(5, 10)
	id := put(t, s, data)
	missing := hashing.Sum([]byte("missing"))
	_, statErr := s.Stat(t.Context(), missing)
	_, rangeErr := s.Get(t.Context(), id, 5, 6)
	for _, c := range []struct {
		err      error
		id       hashing.ID
		notFound bool
	}{{statErr, missing, true}, {rangeErr, id, false}} {
		if c.err == nil || !strings.Contains(c.err.Error(), objPath(s, c.id)) ||
			errors.Is(c.err, store.ErrNotFound) != c.notFound {
			t.Errorf("err = %v, want one naming %s with ErrNotFound %v", c.err, objPath(s, c.id), c.notFound)
		}
	}
}

func TestGetReaderSeeksAndCloses(t *testing.T) {
	s := open(t)
	data, _ := object(6, 1000)
	id := put(t, s, data)
	rc, err := s.Get(t.Context(), id, 100, 50)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := rc.(io.ReadSeeker)
	if !ok {
		t.Fatalf("Get returned %T, want an io.ReadSeeker", rc)
	}
	if _, err := rs.Seek(40, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rs); err != nil || !bytes.Equal(b, data[140:150]) {
		t.Errorf("read after seek: %d bytes, %v; want the last 10 of the range", len(b), err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("read after Close: err = %v, want the file closed", err)
	}
}

func BenchmarkPut(b *testing.B) {
	s := open(b)
	ctx := context.Background()
	data, _ := object(7, 256<<10)
	b.SetBytes(int64(len(data)))
	for i := uint64(0); b.Loop(); i++ {
		b.StopTimer()
		binary.LittleEndian.PutUint64(data, i)
		id := hashing.Sum(data)
		b.StartTimer()
		if err := s.Put(ctx, id, data); err != nil {
			b.Fatal(fmt.Errorf("put #%d: %w", i, err))
		}
	}
}

// smallObjects returns a 40 KiB incompressible object and a function that
// makes it object number i: its first bytes and its ID change. The IDs are
// not the objects' hashes (the store does not check them), which keeps
// hashing out of the numbers.
func smallObjects() ([]byte, func(data []byte, i uint64) hashing.ID) {
	data, _ := object(8, 40<<10)
	return data, func(data []byte, i uint64) hashing.ID {
		binary.LittleEndian.PutUint64(data, i)
		var id hashing.ID
		binary.LittleEndian.PutUint64(id[:], i)
		id[31] = 0x5a
		return id
	}
}

// BenchmarkPutSmall is BenchmarkPut of 40 KiB objects, the size of a COG
// tile: compare it with BenchmarkBatchPut.
func BenchmarkPutSmall(b *testing.B) {
	s := open(b)
	ctx := context.Background()
	data, next := smallObjects()
	b.SetBytes(int64(len(data)))
	for i := uint64(0); b.Loop(); i++ {
		if err := s.Put(ctx, next(data, i), data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchPut puts 40 KiB incompressible objects through one batch
// and commits it; ns/op is per object, the commit included.
func BenchmarkBatchPut(b *testing.B) {
	s := open(b)
	ctx := context.Background()
	data, next := smallObjects()
	b.SetBytes(int64(len(data)))
	bt, err := s.Batch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := bt.Put(ctx, next(data, uint64(i)), data, hashing.ID{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bt.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPutSmallParallel and BenchmarkBatchPutParallel put from
// GOMAXPROCS goroutines, as a commit does.
func BenchmarkPutSmallParallel(b *testing.B) {
	s := open(b)
	ctx := context.Background()
	var n atomic.Uint64
	b.SetBytes(40 << 10)
	b.RunParallel(func(pb *testing.PB) {
		data, next := smallObjects()
		for pb.Next() {
			if err := s.Put(ctx, next(data, n.Add(1)), data); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkBatchPutParallel(b *testing.B) {
	s := open(b)
	ctx := context.Background()
	bt, err := s.Batch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Uint64
	b.SetBytes(40 << 10)
	b.RunParallel(func(pb *testing.PB) {
		data, next := smallObjects()
		for pb.Next() {
			if _, err := bt.Put(ctx, next(data, n.Add(1)), data, hashing.ID{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := bt.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}
