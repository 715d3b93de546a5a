package repo

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/journal"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// patchRepo commits v1 then v2 of sub/x.bin and lowers the in-place
// threshold to suit test-sized files.
func patchRepo(t *testing.T, v1, v2 []byte) (*Repo, string) {
	t.Helper()
	oldMin, oldSettle := inPlaceMin, settleMin
	inPlaceMin, settleMin = 1<<20, 1<<20
	t.Cleanup(func() { inPlaceMin, settleMin = oldMin, oldSettle })
	r := testRepo(t, v1)
	path := filepath.Join(r.Root, "sub", "x.bin")
	if err := os.WriteFile(path, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	return r, path
}

// twoEdits returns v1 with bytes changed at two places and cut or grown.
func twoEdits(v1 []byte, tail int) []byte {
	v2 := bytes.Clone(v1)
	v2[3<<20+5] ^= 0xff
	v2[7<<20+9] ^= 0xff
	if tail < 0 {
		return v2[:len(v2)+tail]
	}
	return append(v2, randomData(tail, 99)...)
}

// hookWrites sets testHookPatchWrite until the test ends, or until
// hookWrites(t, nil).
func hookWrites(t *testing.T, h func(i int, f *os.File) bool) {
	testHookPatchWrite = h
	t.Cleanup(func() { testHookPatchWrite = nil })
}

// crashCheckout checks out rev with the patch stopped, as by a crash,
// after piece at (-1: after the cut or growth).
func crashCheckout(t *testing.T, r *Repo, rev string, at int) {
	t.Helper()
	hookWrites(t, func(i int, _ *os.File) bool { return i == at })
	_, err := r.Checkout(context.Background(), CheckoutOptions{Rev: rev, Paths: []string{"sub/x.bin"}})
	hookWrites(t, nil)
	if err == nil {
		t.Fatal("simulated crash: no error")
	}
}

// recovered checks that an interrupted patch was undone (the file holds
// was, the journal is gone) and that checking out rev again then patches
// the file to want.
func recovered(t *testing.T, r *Repo, path string, was []byte, rev string, want []byte) {
	t.Helper()
	wantFile(t, path, was, "after recovery")
	if _, err := os.Stat(filepath.Join(r.gitDir(), "chunkvc", "patch")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("journal left after recovery: %v", err)
	}
	if f := checkoutOne(t, r, rev); !f.InPlace {
		t.Fatal("retry not patched in place")
	}
	wantFile(t, path, want, "retry")
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func checkoutOne(t *testing.T, r *Repo, rev string) CheckoutFile {
	t.Helper()
	res, err := r.Checkout(context.Background(), CheckoutOptions{Rev: rev, Paths: []string{"sub/x.bin"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Files[0]
}

func wantFile(t *testing.T, path string, want []byte, what string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: the file is not byte-identical (%d bytes, want %d)", what, len(got), len(want))
	}
}

func TestCheckoutPatchesInPlace(t *testing.T) {
	v1 := randomData(9<<20+333, 1)
	for _, tail := range []int{100 << 10, -(100 << 10)} {
		v2 := twoEdits(v1, tail)
		r, path := patchRepo(t, v1, v2)
		ino := inode(t, path)
		for _, step := range []struct {
			rev  string
			want []byte
		}{{"HEAD~1", v1}, {"HEAD", v2}, {"HEAD~1", v1}} {
			f := checkoutOne(t, r, step.rev)
			if !f.InPlace || f.BytesWritten == 0 || f.BytesWritten*4 > int64(len(step.want)) {
				t.Fatalf("checkout %s: in place %v, %d bytes written", step.rev, f.InPlace, f.BytesWritten)
			}
			wantFile(t, path, step.want, "checkout "+step.rev)
			if inode(t, path) != ino {
				t.Fatalf("checkout %s replaced the file instead of patching it", step.rev)
			}
			// Settled: the stat cache trusts the entry, and no later
			// command reads the file again.
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := r.loadStatCache().Lookup("sub/x.bin", statcache.StatOf(fi))
			if !ok || e.Digest != hashing.Sum(step.want) {
				t.Fatalf("after checkout %s: stat cache entry trusted %v, digest %s", step.rev, ok, e.Digest.Short())
			}
		}
		if _, err := os.Stat(filepath.Join(r.gitDir(), "chunkvc", "patch")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("journal left behind: %v", err)
		}
	}
}

// TestCheckoutPatchThenWrite: the entry an in-place checkout records is
// trusted at once (no racy window is waited where times move after a
// stat), yet a write made the moment the checkout returns is committed.
func TestCheckoutPatchThenWrite(t *testing.T) {
	v1 := randomData(9<<20+333, 2)
	r, path := patchRepo(t, v1, twoEdits(v1, 0))
	if f := checkoutOne(t, r, "HEAD~1"); !f.InPlace {
		t.Fatal("not patched in place")
	}
	edited := bytes.Clone(v1)
	edited[5<<20] ^= 0x5a
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(edited[5<<20:5<<20+1], 5<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "edited"}); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := r.Cat(context.Background(), "", "sub/x.bin", &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), edited) {
		t.Fatal("the write made right after the checkout was not committed: the stat cache trusted a stale entry")
	}
}

// A file with another name is replaced, not patched: the other name keeps
// its bytes.
func TestCheckoutPatchSparesHardLinks(t *testing.T) {
	v1 := randomData(9<<20+333, 2)
	v2 := twoEdits(v1, 0)
	r, path := patchRepo(t, v1, v2)
	other := filepath.Join(t.TempDir(), "link.bin")
	if err := os.Link(path, other); err != nil {
		t.Skip("no hard links here:", err)
	}
	if f := checkoutOne(t, r, "HEAD~1"); f.InPlace {
		t.Fatal("patched a file that has another name")
	}
	wantFile(t, path, v1, "checkout HEAD~1")
	wantFile(t, other, v2, "the other name")
}

// A checkout killed half-way leaves its journal; the next command that
// takes the lock puts the old bytes back. Killed after one piece, and
// after the file was cut to a shorter version (or grown to a longer one).
func TestCheckoutPatchCrash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tail  int
		crash int
	}{{"after a piece", 50 << 10, 0}, {"after the cut", 50 << 10, -1}, {"after the growth", -(50 << 10), -1}} {
		t.Run(tc.name, func(t *testing.T) {
			v1 := randomData(9<<20+333, 3)
			v2 := twoEdits(v1, tc.tail)
			r, path := patchRepo(t, v1, v2)
			crashCheckout(t, r, "HEAD~1", tc.crash)
			// Killed after the cut or growth, every piece is written, but
			// the digest was not verified: the journal still undoes it.
			if half, _ := os.ReadFile(path); bytes.Equal(half, v2) || (tc.crash >= 0 && bytes.Equal(half, v1)) {
				t.Fatal("the simulated crash left no patched file to recover")
			}
			if _, err := os.Stat(filepath.Join(r.gitDir(), "chunkvc", "patch")); err != nil {
				t.Fatalf("no journal after the crash: %v", err)
			}
			unlock, err := r.lock()
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			recovered(t, r, path, v2, "HEAD~1", v1)
		})
	}
}

// Bytes that are not what the stat cache said (damage that kept the
// stat) give a wrong digest: the patch is undone and the file written
// whole, from verified chunks.
func TestCheckoutPatchWrongDigest(t *testing.T) {
	v1 := randomData(9<<20+333, 4)
	v2 := twoEdits(v1, 0)
	r, path := patchRepo(t, v1, v2)
	// Fresh block values, so the damaged block is read, not reused.
	if err := os.RemoveAll(filepath.Join(r.gitDir(), "chunkvc", "blocks")); err != nil {
		t.Fatal(err)
	}
	hookWrites(t, func(i int, f *os.File) bool {
		if _, err := f.WriteAt([]byte{0xAA, 0x55}, 5<<20); err != nil {
			t.Error(err)
		}
		return false
	})
	f := checkoutOne(t, r, "HEAD~1")
	hookWrites(t, nil)
	if f.InPlace {
		t.Fatal("kept a patch whose digest is wrong")
	}
	wantFile(t, path, v1, "checkout after the failed patch")
}

func TestDecodeJournal(t *testing.T) {
	r := testRepo(t, []byte("x"))
	want := journal.Journal{Path: "sub/x.bin", Ino: 77, OldSize: 1234, NewSize: 99, Digest: hashing.Sum([]byte("d")), Layout: hashing.Sum([]byte("l")),
		Spans: []journal.Span{{Off: 5, Data: []byte("old")}, {Off: 1 << 40, Data: []byte{}}}}
	name, err := r.writeJournal(&want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Decode(b)
	if err != nil || j.Path != want.Path || j.Ino != 77 || j.OldSize != 1234 || j.NewSize != 99 || j.Digest != want.Digest || j.Layout != want.Layout ||
		len(j.Spans) != 2 || j.Spans[0].Off != 5 || string(j.Spans[0].Data) != "old" || j.Spans[1].Off != 1<<40 {
		t.Fatalf("decode: %+v %v", j, err)
	}
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 1
		if _, err := journal.Decode(bad); err == nil {
			t.Fatalf("byte %d flipped: no error", i)
		}
	}
	if _, err := journal.Decode(b[:len(b)-1]); err == nil {
		t.Fatal("truncated: no error")
	}
	// A damaged journal stops the lock, and says which file to check out
	// again: there is nothing to undo it with.
	if err := os.WriteFile(name, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.lock(); err == nil || !strings.Contains(err.Error(), "checkout --force -- sub/x.bin") {
		t.Fatalf("lock with a damaged journal: %v", err)
	}
}

// After an interrupted patch the file is put back and the stat cache knows
// it again: the checkout can be retried without --force, from either side.
func TestCheckoutPatchCrashRetry(t *testing.T) {
	v1 := randomData(9<<20+333, 5)
	v2 := twoEdits(v1, 0)
	r, path := patchRepo(t, v1, v2)
	checkoutOne(t, r, "HEAD~1") // the file holds v1, not HEAD's version
	crashCheckout(t, r, "HEAD", 0)
	// status undoes it before it reads anything.
	if _, err := r.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	recovered(t, r, path, v1, "HEAD", v2)
}

// A file replaced after the crash (another inode) is not touched by the
// undo; one changed in size is left as it is, with an error that says so.
func TestCheckoutPatchRecoverySparesNewFiles(t *testing.T) {
	v1 := randomData(9<<20+333, 6)
	v2 := twoEdits(v1, 0)
	for _, replace := range []bool{true, false} {
		r, path := patchRepo(t, v1, v2)
		crashCheckout(t, r, "HEAD~1", 0)
		mine := randomData(10<<20, 7)
		if replace { // a new file renamed over it: another inode
			if err := os.WriteFile(path+".new", mine, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		} else { // rewritten in place, larger
			if err := os.WriteFile(path, mine, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		unlock, err := r.lock()
		if replace {
			if err != nil {
				t.Fatal(err)
			}
			unlock()
		} else if err == nil || !strings.Contains(err.Error(), "changed since") {
			t.Fatalf("file changed after the crash: %v", err)
		}
		wantFile(t, path, mine, "the file written after the crash")
		if r.hasJournal() {
			t.Fatal("journal left")
		}
	}
}
