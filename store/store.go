package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
)

var (
	// ErrNotFound means the object is not in the store. Check with errors.Is.
	ErrNotFound = errors.New("object not found")
	// ErrCorrupt means bytes did not hash to the ID they were stored or
	// read under, or the store's own records are damaged (a pack index is
	// unreadable or gone), so that an object it cannot find may be lost.
	ErrCorrupt = errors.New("object corrupt")
	// ErrUnavailable means the store could not be reached: no answer on
	// any attempt (connection refused or reset, name not resolved, timed
	// out), or only a gateway's answer that it is not there. Nothing is
	// known of the objects asked about. A store says so by behaviour, not
	// by the text of an error.
	ErrUnavailable = errors.New("store unavailable")
)

// MaxObject bounds what ReadAll will hold in memory.
const MaxObject = 256 << 20

// Info describes a stored object.
type Info struct {
	ID   hashing.ID
	Size int64
	// Modified is when the object was stored, zero when the store cannot
	// say. Garbage collection spares objects younger than its grace period.
	Modified time.Time
}

// Getter reads objects.
type Getter interface {
	// Get returns a reader for length bytes of object id starting at off;
	// length < 0 means to the end. The caller closes the reader. A missing
	// object is an error wrapping ErrNotFound; a range past the end of the
	// object is an error. Get does not verify the hash (ReadAll does).
	Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error)
}

// Putter writes objects.
type Putter interface {
	// Put stores data under id. The caller guarantees id == hashing.Sum(data)
	// (use the package function Put). Put is atomic — a reader sees the
	// whole object or ErrNotFound, never part of it — and idempotent:
	// putting an object that exists succeeds without rewriting it. When Put
	// returns nil the object is durable.
	Put(ctx context.Context, id hashing.ID, data []byte) error
}

// Stater reports on single objects.
type Stater interface {
	// Stat returns the object's info, or an error wrapping ErrNotFound.
	Stat(ctx context.Context, id hashing.ID) (Info, error)
}

// Lister enumerates objects.
type Lister interface {
	// List calls fn for every object, in no particular order, on the
	// caller's goroutine. An error from fn stops the listing and is returned.
	List(ctx context.Context, fn func(Info) error) error
}

// Remover deletes objects.
type Remover interface {
	// Delete removes the object. Deleting a missing object returns nil.
	Delete(ctx context.Context, id hashing.ID) error
}

// Batcher is a store that takes many objects as one durable unit, so that
// a commit of 25,000 small tiles costs a few files and fsyncs instead of one
// of each per tile (store/local writes them into a pack).
type Batcher interface {
	// Batch starts a batch. The caller ends it with exactly one Commit or
	// Abort, after every Put on it has returned.
	Batch(ctx context.Context) (Batch, error)
}

// Batch collects objects for a Batcher. Objects put through it become
// durable and readable together when Commit returns nil; before that, and
// after Abort, readers of the store need not see them. A store may make
// them readable earlier, a pack at a time, so that a batch interrupted
// midway (a killed process) leaves what it finished for a retry to find;
// such objects stay after Abort, since another writer may already rely on
// them, and are garbage like any other object once nothing references
// them.
type Batch interface {
	// Put adds data under id; the caller guarantees id == hashing.Sum(data)
	// and may reuse data once Put returns. An object the store or the
	// batch already holds is not added again: added reports whether this
	// call added it. One the store held before is touched, where the
	// store keeps ages, so that a garbage collection's grace period spares
	// it while the batch is in flight. like, when not zero, names an object the store holds
	// that probably shares most bytes with data (the previous version of
	// the same chunk): the store may keep data as a delta against it. Put
	// is safe for concurrent use.
	Put(ctx context.Context, id hashing.ID, data []byte, like hashing.ID) (added bool, err error)
	// Commit makes every object put so far durable and readable.
	Commit(ctx context.Context) error
	// Abort discards the batch's objects that are not yet committed.
	Abort() error
}

// BasePrefetcher is a Batch that can read a probable delta base (a Put's
// like) before the Put that names it, so that the read overlaps with the
// caller's other work rather than lengthening the Put. It is a hint: an
// error is dropped, and a base not held by the time of the Put is read
// then as usual. Each prefetched base serves one Put, and PrefetchBase
// must return before that Put starts.
type BasePrefetcher interface {
	PrefetchBase(ctx context.Context, id hashing.ID)
}

// BulkRemover deletes many objects at once, for stores where deleting one
// costs a rewrite of what surrounds it (a pack). Deleting a missing object
// is not an error. Objects that are kept stay readable even when they were
// stored as deltas against deleted ones.
type BulkRemover interface {
	DeleteMany(ctx context.Context, ids []hashing.ID) error
}

// BatchStater is a store that checks many objects for less than a Stat
// each (S3: HEADs in parallel, packed objects from the pack indexes). See
// HasMany.
type BatchStater interface {
	// HasMany reports, for every id in ids (which may repeat), whether the
	// store holds it: the map has an entry for each. A failure other than
	// a missing object fails the whole call, so no object is reported
	// missing or present by mistake. It is safe for concurrent use.
	HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error)
}

// Toucher is a store that keeps ages (Info.Modified) and can refresh one,
// so that a garbage collection elsewhere, which spares objects younger
// than its grace period, does not take an object for garbage while a
// commit that reuses it is in flight. See Touch.
type Toucher interface {
	// Touch marks the object as just used: Stat then reports a Modified
	// no earlier than when Touch was called. It may refresh more than the
	// one object (store/local touches a packed object's whole pack).
	// Touching a missing object is an error wrapping ErrNotFound. Touch is
	// idempotent and safe for concurrent use.
	Touch(ctx context.Context, id hashing.ID) error
}

// Repacker is a store that keeps many objects per file (packs) and can
// merge small files into fewer, so that opening and reading it stays cheap
// after many commits.
type Repacker interface {
	// Repack merges what it judges worth merging and reports how many
	// files it merged away, 0 when there was too little. Every object
	// stays readable throughout, with its bytes and an age no older than
	// it had: a crash midway leaves duplicate copies, never a missing
	// object. Reads may run meanwhile, in this process or another.
	Repack(ctx context.Context) (int, error)
}

// Connectioner is a store that says how many requests it serves well at
// once (S3: its connection pool); callers size their worker pools by it.
// See Connections.
type Connectioner interface {
	// Connections returns the number of requests worth running at once:
	// at least 1, and the same for the life of the store. It is safe for
	// concurrent use.
	Connections() int
}

// Debris counts what interrupted writes left in a store: temp files,
// packs whose index was never written, uploads never completed. None of it
// holds an object a reader can see.
type Debris struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Sweeper is a store that can find and remove debris (a process killed
// while it wrote leaves some; List does not see it).
type Sweeper interface {
	// Sweep removes the debris last modified before cutoff, or with
	// dryRun only counts it, and reports what it found. Debris younger
	// than cutoff may belong to a write still in flight (in another
	// process), so the caller passes now less a grace period; removing a
	// live write's temp file makes that write fail, never lose data
	// already stored. An error may come after some debris was removed.
	Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (Debris, error)
}

// Registry is a store that also keeps small named objects that are not
// content-addressed and may be replaced: the registry of the repositories
// that use the store (repos/<id>.json), which garbage collection reads to
// know every repository's published tips. Names are checked with
// CheckName. They live apart from the objects: List never reports them.
type Registry interface {
	// PutNamed stores data under name, replacing what was there,
	// atomically (a reader sees the old or the new bytes) and durably
	// when it returns nil.
	PutNamed(ctx context.Context, name string, data []byte) error
	// GetNamed returns the bytes stored under name, or an error wrapping
	// ErrNotFound. It reads at most MaxNamed bytes.
	GetNamed(ctx context.Context, name string) ([]byte, error)
	// ListNamed calls fn, on the caller's goroutine and in lexical order,
	// for every name under prefix (a folder ending in "/", or ""). An
	// error from fn stops the listing and is returned.
	ListNamed(ctx context.Context, prefix string, fn func(name string) error) error
	// DeleteNamed removes name; a missing name is not an error.
	DeleteNamed(ctx context.Context, name string) error
}

// MaxNamed bounds the size of a named object.
const MaxNamed = 1 << 20

// CheckName accepts a name of a named object: slash-separated segments of
// lower-case letters, digits, '.', '_' and '-', none empty or starting
// with '.', at most 200 bytes; and a prefix for ListNamed, which is such a
// name followed by '/', or "".
func CheckName(name string, prefix bool) error {
	if prefix {
		if name == "" {
			return nil
		}
		var ok bool
		if name, ok = strings.CutSuffix(name, "/"); !ok {
			return fmt.Errorf("named object prefix %q: must end in /", name)
		}
	}
	if name == "" || len(name) > 200 {
		return fmt.Errorf("named object %q: empty or longer than 200 bytes", name)
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg[0] == '.' {
			return fmt.Errorf("named object %q: empty segment or one starting with '.'", name)
		}
		for _, c := range seg {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
				return fmt.Errorf("named object %q: character %q not allowed", name, c)
			}
		}
	}
	return nil
}

// Store is a complete content-addressed store.
type Store interface {
	Getter
	Putter
	Stater
	Lister
	Remover
	// String names the store for messages (a path or URL, no secrets).
	String() string
}

// Put verifies that data hashes to id, then stores it.
func Put(ctx context.Context, s Putter, id hashing.ID, data []byte) error {
	if got := hashing.Sum(data); got != id {
		return fmt.Errorf("put %s: %w: bytes hash to %s", id, ErrCorrupt, got)
	}
	return s.Put(ctx, id, data)
}

// Has reports whether the store holds id.
func Has(ctx context.Context, s Stater, id hashing.ID) (bool, error) {
	_, err := s.Stat(ctx, id)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return false, err
}

// DefaultConnections is the parallelism Connections gives a store that
// states none.
const DefaultConnections = 8

// Connections returns how many requests to run at once against s: its own
// figure when it is a Connectioner stating one, else DefaultConnections.
func Connections(s Store) int {
	if c, ok := s.(Connectioner); ok && c.Connections() > 0 {
		return c.Connections()
	}
	return DefaultConnections
}

// RetryCounter is a store that retries transient failures itself and
// counts the retries: attempts beyond the first of every request, since
// the store was opened (for --json's per-stage figures).
type RetryCounter interface {
	Retries() int64
}

// Retries returns how many retries s has made so far: its own count when
// it is a RetryCounter, else 0 (a store that does not retry).
func Retries(s Store) int64 {
	if c, ok := s.(RetryCounter); ok {
		return c.Retries()
	}
	return 0
}

// HasMany reports which of ids s holds, as BatchStater does: through
// s.HasMany when s is one, else with Has on Connections(s) goroutines.
func HasMany(ctx context.Context, s Store, ids []hashing.ID) (map[hashing.ID]bool, error) {
	if b, ok := s.(BatchStater); ok {
		return b.HasMany(ctx, ids)
	}
	res := make([]bool, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(Connections(s))
	for i, id := range ids {
		g.Go(func() error {
			ok, err := Has(gctx, s, id)
			res[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[hashing.ID]bool, len(ids))
	for i, id := range ids {
		out[id] = res[i]
	}
	return out, nil
}

// Touch refreshes the age of id where s can (a Toucher). A store that
// cannot has no ages to refresh, or none it can change: there Touch does
// nothing and returns nil, costing no request.
func Touch(ctx context.Context, s Store, id hashing.ID) error {
	if t, ok := s.(Toucher); ok {
		return t.Touch(ctx, id)
	}
	return nil
}

// ReadAll returns the whole object, verified against id.
func ReadAll(ctx context.Context, s Getter, id hashing.ID) ([]byte, error) {
	rc, err := s.Get(ctx, id, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var b []byte
	if sz, ok := rc.(interface{ Size() int64 }); ok && sz.Size() >= 0 && sz.Size() <= MaxObject {
		// A reader that knows its size (a file section, bytes in memory)
		// is read into one buffer of that size: growing one as it fills
		// allocated twice the object, garbage that a checkout of large
		// chunks turned into hundreds of MB of RSS.
		b = make([]byte, sz.Size())
		n, err := io.ReadFull(rc, b)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// Fewer bytes than the store said: as before, when a short
			// read reached the hash check, the object is corrupt.
			return nil, fmt.Errorf("object %s: %w: %d of its %d bytes could be read", id, ErrCorrupt, n, len(b))
		}
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", id, err)
		}
		if n, _ := rc.Read(make([]byte, 1)); n > 0 {
			return nil, fmt.Errorf("object %s: %w: more than the %d bytes its reader said", id, ErrCorrupt, len(b))
		}
	} else {
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(rc, MaxObject+1))
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", id, err)
		}
		if n > MaxObject {
			return nil, fmt.Errorf("read object %s: larger than %d bytes", id, MaxObject)
		}
		b = buf.Bytes()
	}
	if got := hashing.Sum(b); got != id {
		return nil, fmt.Errorf("object %s: %w: its bytes hash to %s", id, ErrCorrupt, got)
	}
	return b, nil
}

// Sized names an object and its size in bytes: what VerifyMany and
// Confirm expect to find. A commit holds one per new chunk, so it is a
// slice of these rather than a map (half the bytes).
type Sized struct {
	ID   hashing.ID
	Size int64
}

// Confirmer is a store that confirms many objects for less than a Stat
// each (a pack file is looked at once for all of its objects).
type Confirmer interface {
	// Confirm returns nil if the store holds every object in want at the
	// size want gives it, as Stat reports them; otherwise an error naming
	// an object that is missing (errors.Is ErrNotFound) or of another size
	// (ErrCorrupt). want may name an object more than once.
	Confirm(ctx context.Context, want []Sized) error
}

// VerifyMany is Verify for every object in want, through Confirm when the
// store has it and full is false.
func VerifyMany(ctx context.Context, s interface {
	Getter
	Stater
}, want []Sized, full bool) error {
	if c, ok := s.(Confirmer); ok && !full {
		return c.Confirm(ctx, want)
	}
	g, gctx := errgroup.WithContext(ctx)
	const workers = 4 // Stat may be a round trip
	for w := range workers {
		g.Go(func() error {
			for i := w; i < len(want); i += workers {
				if err := Verify(gctx, s, want[i].ID, want[i].Size, full); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// Verify confirms that the store holds id with the given size; with full it
// also reads the object back and checks its hash.
func Verify(ctx context.Context, s interface {
	Getter
	Stater
}, id hashing.ID, size int64, full bool) error {
	info, err := s.Stat(ctx, id)
	if err != nil {
		return err
	}
	if info.Size != size {
		return fmt.Errorf("object %s: %w: stored size %d, expected %d", id, ErrCorrupt, info.Size, size)
	}
	if full {
		_, err = ReadAll(ctx, s, id)
	}
	return err
}
