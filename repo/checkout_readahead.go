package repo

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
)

// Read-ahead of stream: chunks are read and verified by a few workers
// while the ones before them are written, in order. One at a time, a
// checkout of 521,623 tiles waited for each read and hash in turn (half
// its time), and one from a remote store for each round trip.
const (
	aheadWorkers = 8       // reads in flight: round trips to a remote store overlap
	aheadBytes   = 8 << 20 // read and not yet written; a larger chunk takes it all
)

// fetched is one chunk piece, read ahead of its write.
type fetched struct {
	i      int            // the piece's index in the layout
	pc     manifest.Piece // the piece
	at     int            // the chunk's first place in the manifest; -1: not listed
	data   []byte
	src    readpath.Source
	reused bool // from the working file
	err    error
	done   chan struct{} // closed when data or err is set
	weight int64         // of the read-ahead budget
}

// chunkAhead reads the chunk pieces of a layout on a pool of workers; next
// returns them in the layout's order.
type chunkAhead struct {
	cancel context.CancelFunc
	queue  chan *fetched
	budget *semaphore.Weighted
}

// readChunksAhead starts reading the chunk pieces of lay: from ru when it holds
// them intact, else from the stores, each verified by hash. Each is looked
// up in the manifest's chunks by idx, its place handed over with it (the
// writer looked every chunk up a second time); one the manifest does not
// list is not read (next returns it with errUnlisted and no place). The
// caller must call stop when done with next, which cancels the reads not
// yet needed and waits for the others.
func (r *Repo) readChunksAhead(ctx context.Context, lay *manifest.Layout, ru *reuse, idx *manifest.IDIndex) *chunkAhead {
	ctx, cancel := context.WithCancel(ctx)
	ra := &chunkAhead{cancel: cancel, queue: make(chan *fetched, 1024), budget: semaphore.NewWeighted(aheadBytes)}
	// A few long-lived workers rather than a goroutine per chunk: each new
	// goroutine grows its stack again through the hashing code.
	work := make(chan *fetched)
	var workers sync.WaitGroup
	for range aheadWorkers {
		workers.Go(func() {
			for f := range work {
				r.fetchAhead(ctx, f, ru, idx)
			}
		})
	}
	go func() {
		defer close(ra.queue)
		defer workers.Wait() // every fetch queued is done before the queue closes
		defer close(work)
		for i := range lay.Len() {
			pc := lay.Piece(i)
			if pc.Derive != "" || !pc.Chunk {
				continue
			}
			f := &fetched{i: i, pc: pc, at: -1, done: make(chan struct{}), weight: min(pc.Len, aheadBytes)}
			if err := ra.budget.Acquire(ctx, f.weight); err != nil {
				return
			}
			select {
			case ra.queue <- f:
			case <-ctx.Done():
				return
			}
			work <- f // a fetch queued is always done, canceled or not
		}
	}()
	return ra
}

// fetchAhead reads f's chunk.
func (r *Repo) fetchAhead(ctx context.Context, f *fetched, ru *reuse, idx *manifest.IDIndex) {
	defer close(f.done)
	pc := &f.pc
	if at, ok := idx.Find(pc.ID); ok {
		f.at = at
	}
	switch {
	case ctx.Err() != nil:
		f.err = ctx.Err()
	case f.at < 0:
		f.err = errUnlisted
	default:
		if data, ok := ru.read(pc.ID, pc.Len, nil); ok {
			f.data, f.reused = data, true
			return
		}
		f.data, f.src, f.err = r.read.Get(ctx, pc.ID)
	}
}

// errUnlisted marks a layout's chunk that its manifest does not list.
var errUnlisted = fmt.Errorf("%w: not listed in the manifest", ErrIntegrity)

// next returns the next chunk piece, read (or failed); i is the index of
// the piece the caller expects, a check of the order.
func (ra *chunkAhead) next(ctx context.Context, i int) (*fetched, error) {
	var f *fetched
	var ok bool
	select {
	case f, ok = <-ra.queue:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !ok {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("read-ahead ended before piece %d", i)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ra.budget.Release(f.weight)
	if f.i != i {
		return nil, fmt.Errorf("read-ahead out of order at piece %d", i)
	}
	return f, nil
}

// stop cancels the reads not yet needed and waits for those in flight.
func (ra *chunkAhead) stop() {
	ra.cancel()
	for f := range ra.queue {
		<-f.done
	}
}
