package repo

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/store"
)

// upload de-duplicates puts across the files of one commit and counts them.
// When the store takes batches (store.Batcher: the local store packs them),
// chunks go into one batch that finish commits and verifies; otherwise each
// chunk is put and verified on its own.
type upload struct {
	st       store.Store
	verify   Verify
	chunks   atomic.Int64
	bytes    atomic.Int64
	progress progress.Counter
	dryRun   bool // compute manifests only, store nothing
	// packManifests: the commit (of many files) writes the manifests it
	// holds into Git itself, in one pack; chunkFile only names them.
	packManifests bool

	batch store.Batch
	mu    sync.Mutex
	// claims holds, when there is no batch, every chunk being put or
	// found stored. A batch de-duplicates its puts itself, and a second
	// map of the same IDs would double what a commit of a file of 500,000
	// tiles holds per tile.
	claims map[hashing.ID]struct{}
	// stored lists the chunks this upload stored, once each, with
	// creditedBit in Size once a file was credited with one; credit sorts
	// it by ID. Without a batch each was verified when put; with one,
	// finish verifies them all.
	stored []store.Sized
	sorted bool
	inFlight
}

// creditedBit marks a stored chunk that upload.credit gave to a file.
const creditedBit = 1 << 62

// newUpload prepares uploads to st, in a batch when st takes them.
func newUpload(ctx context.Context, st store.Store, v Verify, prog progress.Counter) (*upload, error) {
	u := &upload{st: st, verify: v, progress: progress.OrNoop(prog)}
	if b, ok := st.(store.Batcher); ok {
		batch, err := b.Batch(ctx)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", st, err)
		}
		u.batch = batch
	} else {
		u.claims = map[hashing.ID]struct{}{}
	}
	return u, nil
}

// finish makes the batch's chunks durable and verifies every one of them;
// nothing may refer to them (a Git commit) before it returns nil.
func (u *upload) finish(ctx context.Context) error {
	if u.batch == nil {
		return nil
	}
	b := u.batch
	u.batch = nil
	if err := b.Commit(ctx); err != nil {
		return fmt.Errorf("store %s: %w", u.st, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.stored {
		u.stored[i].Size &^= creditedBit
	}
	if err := store.VerifyMany(ctx, u.st, u.stored, u.verify == VerifyFull); err != nil {
		return fmt.Errorf("store %s: verify chunks: %w", u.st, err)
	}
	u.stored = nil // everything is credited and verified
	return nil
}

// abort drops a batch that will not be committed (an error on the way).
func (u *upload) abort() {
	if u.batch != nil {
		_ = u.batch.Abort()
		u.batch = nil
	}
}

// ensure makes sure the store holds id (data), putting and verifying it if
// not; like names a chunk data probably resembles (store.Batch.Put). data
// must hash to id: every caller hashed or verified it just before. It
// reports whether the chunk was uploaded.
func (u *upload) ensure(ctx context.Context, id hashing.ID, data []byte, like hashing.ID) (bool, error) {
	added, err := u.put(ctx, id, data, like)
	if added {
		u.mu.Lock()
		u.keep(id, len(data))
		u.mu.Unlock()
	}
	return added, err
}

// put is ensure but for keeping the chunk it uploads in stored: the caller
// hands it to keepAdded.
func (u *upload) put(ctx context.Context, id hashing.ID, data []byte, like hashing.ID) (bool, error) {
	u.start(int64(len(data)))
	defer u.done(int64(len(data)))
	if u.batch != nil {
		// The batch looks for id itself, in what it holds and in the
		// store, and touches what the store holds: asking first would
		// cost a second look per new chunk.
		added, err := u.batch.Put(ctx, id, data, like)
		if err != nil {
			return false, fmt.Errorf("store %s: put chunk %s: %w", u.st, id, err)
		}
		if added {
			u.count(len(data))
		}
		return added, nil
	}
	if !u.claim(id) {
		return false, nil
	}
	has, err := store.Has(ctx, u.st, id)
	if err != nil {
		u.release(id)
		return false, fmt.Errorf("store %s: chunk %s: %w", u.st, id, err)
	}
	if has {
		u.touch(ctx, id)
		return false, nil
	}
	if err := u.st.Put(ctx, id, data); err != nil {
		u.release(id)
		return false, fmt.Errorf("store %s: put chunk %s: %w", u.st, id, err)
	}
	if err := store.Verify(ctx, u.st, id, int64(len(data)), u.verify == VerifyFull); err != nil {
		u.release(id)
		return false, fmt.Errorf("store %s: verify chunk %s: %w", u.st, id, err)
	}
	u.count(len(data))
	return true, nil
}

// claim reports whether id is this caller's to ensure (without a batch):
// no one asked for it before, or the one who did failed.
func (u *upload) claim(id hashing.ID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, dup := u.claims[id]; dup {
		return false
	}
	u.claims[id] = struct{}{}
	return true
}

// release gives up a claim whose put failed.
func (u *upload) release(id hashing.ID) {
	u.mu.Lock()
	delete(u.claims, id)
	u.mu.Unlock()
}

// count counts a chunk of n bytes as uploaded.
func (u *upload) count(n int) {
	u.chunks.Add(1)
	u.bytes.Add(int64(n))
}

// keep adds a chunk this upload stored to stored; u.mu is held.
func (u *upload) keep(id hashing.ID, n int) {
	u.stored = append(u.stored, store.Sized{ID: id, Size: int64(n)})
	u.sorted = false
}

// keepAdded keeps chunks[i] for every i that added flags: the chunks a
// file's scan uploaded with put. The scan flags them rather than keep
// them as it goes: a list of them made after the scan plan is let go
// keeps 40 bytes a chunk (20 MB for a COG of 500,000 tiles) out of the
// commit's peak.
func (u *upload) keepAdded(chunks []manifest.Chunk, added []bool) {
	n := 0
	for _, a := range added {
		if a {
			n++
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stored = slices.Grow(u.stored, n)
	for i, a := range added {
		if a {
			u.keep(chunks[i].ID, int(chunks[i].Size))
		}
	}
}

// credit counts the chunks of m that this upload stored and that no file
// was credited with before: called for the files of a commit in path
// order, before finish, it gives each new chunk to the first file holding
// it, whatever order the files were hashed in.
func (u *upload) credit(m *manifest.Manifest) (chunks int, bytes int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.sorted {
		slices.SortFunc(u.stored, func(a, b store.Sized) int { return hashing.Compare(a.ID, b.ID) })
		u.sorted = true
	}
	for _, c := range m.Chunks {
		i, ok := slices.BinarySearchFunc(u.stored, c.ID, func(s store.Sized, id hashing.ID) int { return hashing.Compare(s.ID, id) })
		if ok && u.stored[i].Size&creditedBit == 0 {
			u.stored[i].Size |= creditedBit
			chunks++
			bytes += c.Size
		}
	}
	return chunks, bytes
}

// touch refreshes the age of a chunk a commit reuses, where the store can,
// so that a gc elsewhere does not take it for garbage while the commit is
// in flight.
func (u *upload) touch(ctx context.Context, id hashing.ID) {
	_ = store.Touch(ctx, u.st, id) // best effort: the age is a hint to gc
}
