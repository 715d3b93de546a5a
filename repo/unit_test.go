package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
	"github.com/chunkvc/chunkvc/store"
)

func TestConfigRoundTrip(t *testing.T) {
	c := &Config{Store: "/mnt/chunks", Track: []string{"*.tif", "lake/**/*.parquet"}}
	got, err := ParseConfig(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Store != c.Store || strings.Join(got.Track, ",") != strings.Join(c.Track, ",") {
		t.Fatalf("round trip: %+v", got)
	}
	for _, bad := range []string{"version = 2\n", "nonsense\n", "colour = blue\n", "track = ../x\n"} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("config %q accepted", bad)
		}
	}
}

// cancelOnStart cancels a context when the commit starts chunking.
type cancelOnStart struct{ cancel context.CancelFunc }

func (c cancelOnStart) Start(string, int64) { c.cancel() }
func (c cancelOnStart) Add(int64)           {}
func (c cancelOnStart) Done()               {}

// TestCommitCanceledBetweenFiles: a commit canceled after its files were
// listed but before any was chunked fails; it neither commits nor panics
// on the files it never chunked.
func TestCommitCanceledBetweenFiles(t *testing.T) {
	r := testRepo(t, randomData(1<<16, 3))
	for i := range 4 {
		if err := os.WriteFile(filepath.Join(r.Root, "sub", fmt.Sprintf("n%d.bin", i)), randomData(1<<12, int64(10+i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head, err := r.git.Head()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Commit(ctx, CommitOptions{Message: "v2", Progress: cancelOnStart{cancel}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit canceled before chunking: %v, want context.Canceled", err)
	}
	if now, err := r.git.Head(); err != nil || now.Hash != head.Hash {
		t.Errorf("HEAD moved after a canceled commit (%v)", err)
	}
}

// failingCommits is a store whose batches fail to commit, after every Put
// succeeded: the last step of making a commit's chunks durable.
type failingCommits struct{ store.Store }

var errBatchCommit = errors.New("disk full while syncing the pack")

func (s failingCommits) Batch(ctx context.Context) (store.Batch, error) {
	b, err := s.Store.(store.Batcher).Batch(ctx)
	return failingBatch{b}, err
}

type failingBatch struct{ store.Batch }

func (b failingBatch) Commit(context.Context) error {
	_ = b.Abort()
	return errBatchCommit
}

// TestFailedBatchCommitKeepsHead: a batch that fails to commit, after
// every chunk was put, leaves HEAD and the index as they were (the other
// tests of failing stores fail earlier, at the batch's start or a Put).
func TestFailedBatchCommitKeepsHead(t *testing.T) {
	r := testRepo(t, randomData(1<<16, 4))
	head, err := r.git.Head()
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(r.Root, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Root, "sub", "x.bin"), randomData(1<<16, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Store = failingCommits{r.Store}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "v2"}); !errors.Is(err, errBatchCommit) {
		t.Fatalf("commit whose batch fails to commit: %v, want %v", err, errBatchCommit)
	}
	if now, err := r.git.Head(); err != nil || now.Hash != head.Hash {
		t.Fatalf("HEAD moved after the store failed to commit the chunks (%v)", err)
	}
	if now, err := os.ReadFile(filepath.Join(r.Root, ".git", "index")); err != nil || string(now) != string(index) {
		t.Fatalf("git index changed by a commit that failed (%v)", err)
	}
}

// prefetching records the bases a commit prefetches from its batch.
type prefetching struct {
	store.Store
	asked *[]hashing.ID
}

func (s prefetching) Batch(ctx context.Context) (store.Batch, error) {
	b, err := s.Store.(store.Batcher).Batch(ctx)
	return prefetchingBatch{b, s.asked}, err
}

type prefetchingBatch struct {
	store.Batch
	asked *[]hashing.ID
}

func (b prefetchingBatch) PrefetchBase(ctx context.Context, id hashing.ID) {
	*b.asked = append(*b.asked, id)
	b.Batch.(store.BasePrefetcher).PrefetchBase(ctx, id)
}

// TestCommitPrefetchesLayout: a re-commit of a file asks its batch for the
// file's previous layout, its layout's delta base, ahead of the Put.
func TestCommitPrefetchesLayout(t *testing.T) {
	r := testRepo(t, randomData(1<<16, 6))
	old, err := r.Manifest("HEAD", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Root, "sub", "x.bin"), randomData(1<<16, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []hashing.ID
	r.Store = prefetching{r.Store, &asked}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != old.Layout {
		t.Fatalf("bases prefetched: %v, want the previous layout %s", asked, old.Layout.Short())
	}
}

// TestCommitUnchangedBySize: a file the stat cache shows unchanged, and
// so is not even read, is still reported with its size.
func TestCommitUnchangedBySize(t *testing.T) {
	data := randomData(1<<16, 8)
	r := testRepo(t, data)
	old := time.Now().Add(-time.Hour) // settled: beyond any racy window
	if err := os.Chtimes(filepath.Join(r.Root, "sub", "x.bin"), old, old); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"y.bin", "z.bin"} {
		if i > 0 {
			time.Sleep(time.Duration(statcache.FSWindow(r.Root)) + 10*time.Millisecond) // x.bin's new ctime settles
		}
		if err := os.WriteFile(filepath.Join(r.Root, "sub", name), randomData(1<<12, int64(9+i)), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := r.Commit(context.Background(), CommitOptions{Message: name})
		if err != nil {
			t.Fatal(err)
		}
		var seen bool
		for _, f := range res.Files {
			if f.Path == "sub/x.bin" {
				seen = true
				if f.Status != "unchanged" || f.Size != int64(len(data)) {
					t.Fatalf("commit %d: unchanged file reported as %+v, want status unchanged and size %d", i, f, len(data))
				}
			}
		}
		if !seen {
			t.Fatalf("commit %d does not report sub/x.bin", i)
		}
	}
}

// TestNothingToCommitKeepsStats: a commit of files that were touched but
// not changed has nothing to commit, and keeps what it learned: their new
// stats are in the stat cache.
func TestNothingToCommitKeepsStats(t *testing.T) {
	r := testRepo(t, randomData(1<<16, 11))
	p := filepath.Join(r.Root, "sub", "x.bin")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "touched"}); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("commit of a touched file: %v, want %v", err, ErrNothingToCommit)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := r.loadStatCache().Last("sub/x.bin"); !ok || e.Stat != statcache.StatOf(fi) {
		t.Fatalf("stat cache after nothing to commit: %+v (found %v), want the file's new stat %+v", e.Stat, ok, statcache.StatOf(fi))
	}
}
