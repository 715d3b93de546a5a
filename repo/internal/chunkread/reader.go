package chunkread

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// Defaults for a Reader.
const (
	DefaultChunkMemory  = 64 << 20  // recently used chunks kept in memory
	DefaultDerivedBytes = 256 << 20 // regenerated derived pieces kept in memory
	DefaultFetchLimit   = 8         // concurrent chunk reads
)

// Stats counts what random-access readers did. Chunks and bytes
// "fetched" came from the configured store (a remote Source read); "local"
// ones from the embedded store, alternates or the read cache.
type Stats struct {
	ChunksFetched   int64 `json:"chunks_fetched"`
	BytesFetched    int64 `json:"bytes_fetched"`
	ChunksLocal     int64 `json:"chunks_local"`
	BytesLocal      int64 `json:"bytes_local"`
	MemoryHits      int64 `json:"memory_hits"`
	DerivedRebuilds int64 `json:"derived_rebuilds"`
}

type readCounters struct {
	chunksFetched, bytesFetched, chunksLocal, bytesLocal, memHits, derived atomic.Int64
}

func (c *readCounters) snapshot() Stats {
	return Stats{
		ChunksFetched: c.chunksFetched.Load(), BytesFetched: c.bytesFetched.Load(),
		ChunksLocal: c.chunksLocal.Load(), BytesLocal: c.bytesLocal.Load(),
		MemoryHits: c.memHits.Load(), DerivedRebuilds: c.derived.Load(),
	}
}

type ctxCountersKey struct{}

// CountReads returns a context under which every Reader's reads also
// count into new counters, and a function that reports them so far: the
// stats of one request, where Reader.Stats gives the reader's whole life.
// The function is safe to call at any time, from any goroutine.
func CountReads(ctx context.Context) (context.Context, func() Stats) {
	c := &readCounters{}
	return context.WithValue(ctx, ctxCountersKey{}, c), c.snapshot
}

// Reader is a verified, memory-bounded source of chunk bytes shared by
// any number of Files: whole chunks come from its Source (hash-verified
// there), recently used ones stay in a bounded in-memory LRU, concurrent
// requests for one chunk share a single read, and at most limit reads run
// at once. It is safe for concurrent use.
type Reader struct {
	src   Source
	limit int
	sem   chan struct{}
	stats readCounters

	mu       sync.Mutex
	lru      *byteLRU
	inflight map[hashing.ID]*fetchCall
	derived  *byteLRU
	building map[hashing.ID]*fetchCall
	layouts  map[hashing.ID]*manifest.Layout // few; bounded in layout()
}

type fetchCall struct {
	done chan struct{}
	data []byte
	err  error
}

// New returns a Reader of src keeping up to memBytes of chunks in memory
// (0 = DefaultChunkMemory) with up to limit concurrent reads
// (0 = DefaultFetchLimit).
func New(src Source, memBytes int64, limit int) *Reader {
	if memBytes <= 0 {
		memBytes = DefaultChunkMemory
	}
	if limit <= 0 {
		limit = DefaultFetchLimit
	}
	return &Reader{
		src: src, limit: limit, sem: make(chan struct{}, limit),
		lru: newByteLRU(memBytes), derived: newByteLRU(DefaultDerivedBytes),
		inflight: map[hashing.ID]*fetchCall{}, building: map[hashing.ID]*fetchCall{},
		layouts: map[hashing.ID]*manifest.Layout{},
	}
}

// Stats returns the counters so far.
func (cr *Reader) Stats() Stats { return cr.stats.snapshot() }

// get returns the verified bytes of id (length n; -1 = any), from memory
// or the Source. Every byte it returns has been hash-checked by the
// Source.
func (cr *Reader) get(ctx context.Context, id hashing.ID, n int64) ([]byte, error) {
	cr.mu.Lock()
	if b, ok := cr.lru.get(id); ok {
		cr.mu.Unlock()
		cr.stats.memHits.Add(1)
		return b, nil
	}
	if c, ok := cr.inflight[id]; ok {
		cr.mu.Unlock()
		select {
		case <-c.done:
			return c.data, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c := &fetchCall{done: make(chan struct{})}
	cr.inflight[id] = c
	cr.mu.Unlock()

	c.data, c.err = cr.fetch(ctx, id, n)
	cr.mu.Lock()
	delete(cr.inflight, id)
	if c.err == nil {
		cr.lru.put(id, c.data)
	}
	cr.mu.Unlock()
	close(c.done)
	return c.data, c.err
}

func (cr *Reader) fetch(ctx context.Context, id hashing.ID, n int64) ([]byte, error) {
	select {
	case cr.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-cr.sem }()
	b, remote, err := cr.src.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if n >= 0 && int64(len(b)) != n {
		return nil, fmt.Errorf("%w: object %s has %d bytes, layout says %d", ErrIntegrity, id, len(b), n)
	}
	cr.count(ctx, remote, int64(len(b)))
	return b, nil
}

func (cr *Reader) count(ctx context.Context, remote bool, n int64) {
	for _, c := range []*readCounters{&cr.stats, ctxCounters(ctx)} {
		if c == nil {
			continue
		}
		if remote {
			c.chunksFetched.Add(1)
			c.bytesFetched.Add(n)
		} else {
			c.chunksLocal.Add(1)
			c.bytesLocal.Add(n)
		}
	}
}

func ctxCounters(ctx context.Context) *readCounters {
	c, _ := ctx.Value(ctxCountersKey{}).(*readCounters)
	return c
}

// layout returns m's decoded layout, keeping a few in memory.
func (cr *Reader) layout(ctx context.Context, m *manifest.Manifest) (*manifest.Layout, error) {
	cr.mu.Lock()
	lay, ok := cr.layouts[m.Layout]
	cr.mu.Unlock()
	if ok {
		return lay, nil
	}
	if err := CheckLayoutClaim(m); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	b, err := cr.get(ctx, m.Layout, -1)
	if err != nil {
		return nil, fmt.Errorf("%s: layout %s: %w", m.Path, m.Layout, err)
	}
	if lay, err = DecodeLayout(m, b); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	if lay.Size != m.Size {
		return nil, fmt.Errorf("%s: %w: layout describes %d bytes, manifest %d", m.Path, ErrIntegrity, lay.Size, m.Size)
	}
	cr.mu.Lock()
	if len(cr.layouts) >= 64 {
		for k := range cr.layouts { // drop an arbitrary one; layouts are cheap to reload
			delete(cr.layouts, k)
			break
		}
	}
	cr.layouts[m.Layout] = lay
	cr.mu.Unlock()
	return lay, nil
}

// File gives random access to one file version (a manifest) without
// materialising it: inline bytes come from the layout blob, chunks from the
// Reader (whole chunks, hash-verified, then sliced). Derived pieces (a
// FlatGeobuf index) need the whole file: the first read that touches one
// has the Source assemble the file (every chunk is read, and the
// whole-file digest verified), takes the pieces from it and keeps them in
// memory (up to DefaultDerivedBytes, shared by all readers); that first
// read therefore costs a full download of the file.
type File struct {
	cr   *Reader
	m    *manifest.Manifest
	lay  *manifest.Layout
	offs []int64 // offs[i] = file offset of piece i; offs[len] = size
}

// OpenFile returns a File for m.
func (cr *Reader) OpenFile(ctx context.Context, m *manifest.Manifest) (*File, error) {
	lay, err := cr.layout(ctx, m)
	if err != nil {
		return nil, err
	}
	return cr.OpenLayout(m, lay), nil
}

// OpenLayout returns a File whose bytes lay gives rather than the layout
// blob m names: a member of a dataset, whose layout is an entry of the
// dataset's layout blob (or one chunk). m names the file in errors, lists
// its chunks (for their keys) and gives its size, which must be lay's;
// lay must have no derived pieces, which only a whole file can rebuild.
func (cr *Reader) OpenLayout(m *manifest.Manifest, lay *manifest.Layout) *File {
	offs := make([]int64, lay.Len()+1)
	for i, pc := range lay.All() {
		offs[i+1] = offs[i] + pc.Len
	}
	return &File{cr: cr, m: m, lay: lay, offs: offs}
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.m.Size }

// Manifest is the file's manifest.
func (f *File) Manifest() *manifest.Manifest { return f.m }

// ReadAt implements io.ReaderAt with a background context.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext reads len(p) bytes at off. It fetches every chunk the range
// needs concurrently (bounded), and returns io.EOF when the range passes the
// end of the file.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= f.m.Size {
		return 0, io.EOF
	}
	end := off + int64(len(p))
	var eof error
	if end > f.m.Size {
		end, eof = f.m.Size, io.EOF
	}
	data, err := f.pieces(ctx, off, end)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := f.pieceAt(off); i < f.lay.Len() && f.offs[i] < end; i++ {
		a, b := max(off, f.offs[i]), min(end, f.offs[i+1])
		n += copy(p[a-off:b-off], data[i][a-f.offs[i]:b-f.offs[i]])
	}
	return n, eof
}

// Prefetch loads every chunk overlapping the given byte ranges, merged and
// deduplicated, into memory with bounded concurrency, up to the memory
// budget; it reports the first error (a missing or corrupt chunk) before
// any byte of the ranges is served.
func (f *File) Prefetch(ctx context.Context, ranges [][2]int64) error {
	budget := f.cr.lru.max / 2
	var spans [][2]int64
	for _, rg := range formats.MergeRanges(ranges) {
		a, b := max(rg[0], 0), min(rg[1], f.m.Size)
		for i := f.pieceAt(a); a < b && i < f.lay.Len() && f.offs[i] < b && budget > 0; i++ {
			if pc := f.lay.Piece(i); pc.Chunk {
				budget -= pc.Len
			}
			spans = append(spans, [2]int64{f.offs[i], f.offs[i+1]})
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cr.limit)
	seen := map[hashing.ID]bool{}
	for _, s := range formats.MergeRanges(spans) {
		for i := f.pieceAt(s[0]); i < f.lay.Len() && f.offs[i] < s[1]; i++ {
			pc := f.lay.Piece(i)
			if !pc.Chunk || seen[pc.ID] {
				continue
			}
			seen[pc.ID] = true
			g.Go(func() error {
				_, err := f.cr.get(gctx, pc.ID, pc.Len)
				return f.chunkErr(pc, err)
			})
		}
	}
	return g.Wait()
}

// pieceAt returns the index of the piece holding byte off.
func (f *File) pieceAt(off int64) int {
	return sort.Search(f.lay.Len(), func(i int) bool { return f.offs[i+1] > off })
}

// pieces returns the bytes of every piece overlapping [off, end), indexed
// by piece number.
func (f *File) pieces(ctx context.Context, off, end int64) (map[int][]byte, error) {
	out := map[int][]byte{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cr.limit)
	for i := f.pieceAt(off); i < f.lay.Len() && f.offs[i] < end; i++ {
		pc := f.lay.Piece(i)
		switch {
		case pc.Chunk:
			g.Go(func() error {
				b, err := f.cr.get(gctx, pc.ID, pc.Len)
				if err != nil {
					return f.chunkErr(pc, err)
				}
				mu.Lock()
				out[i] = b
				mu.Unlock()
				return nil
			})
		case pc.Derive != "":
			g.Go(func() error {
				b, err := f.derived(gctx, i)
				mu.Lock()
				out[i] = b
				mu.Unlock()
				return err
			})
		default:
			mu.Lock()
			out[i] = pc.Inline
			mu.Unlock()
		}
	}
	return out, g.Wait()
}

func (f *File) chunkErr(pc manifest.Piece, err error) error {
	if err == nil {
		return nil
	}
	key := ""
	for _, c := range f.m.Chunks {
		if c.ID == pc.ID {
			key = c.Key
			break
		}
	}
	return fmt.Errorf("%s: chunk %s (%s): %w", f.m.Path, key, pc.ID, err)
}

// derived returns the bytes of derived piece i, rebuilding the file once.
func (f *File) derived(ctx context.Context, i int) ([]byte, error) {
	pc := f.lay.Piece(i)
	cr := f.cr
	cr.mu.Lock()
	if b, ok := cr.derived.get(pc.ID); ok {
		cr.mu.Unlock()
		return b, nil
	}
	c, ok := cr.building[f.m.Digest]
	if !ok {
		c = &fetchCall{done: make(chan struct{})}
		cr.building[f.m.Digest] = c
		cr.mu.Unlock()
		c.err = f.rebuild(ctx)
		cr.mu.Lock()
		delete(cr.building, f.m.Digest)
		close(c.done)
	}
	cr.mu.Unlock()
	<-c.done
	if c.err != nil {
		return nil, c.err
	}
	cr.mu.Lock()
	b, ok := cr.derived.get(pc.ID)
	cr.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: derived %s of %d bytes does not fit the %d-byte memory budget for derived bytes", f.m.Path, pc.Derive, pc.Len, cr.derived.max)
	}
	return b, nil
}

// rebuild has the Source assemble the whole file (verifying it against
// the manifest digest) and keeps its derived pieces in memory.
func (f *File) rebuild(ctx context.Context) error {
	st, err := f.cr.src.Assemble(ctx, f.m, func(file io.ReaderAt) error {
		f.cr.stats.derived.Add(1)
		for i, pc := range f.lay.All() {
			if pc.Derive == "" {
				continue
			}
			b := make([]byte, pc.Len)
			if _, err := file.ReadAt(b, f.offs[i]); err != nil {
				return err
			}
			f.cr.mu.Lock()
			f.cr.derived.put(pc.ID, b)
			f.cr.mu.Unlock()
		}
		return nil
	})
	for _, c := range []*readCounters{&f.cr.stats, ctxCounters(ctx)} {
		if c != nil {
			c.chunksFetched.Add(int64(st.ChunksFetched))
			c.bytesFetched.Add(st.BytesFetched)
			c.chunksLocal.Add(int64(st.ChunksLocal))
		}
	}
	return err
}

// byteLRU is a byte-bounded LRU of immutable []byte values. Not safe for
// concurrent use; callers lock.
type byteLRU struct {
	max, size int64
	ll        *list.List
	items     map[hashing.ID]*list.Element
}

type lruItem struct {
	id   hashing.ID
	data []byte
}

func newByteLRU(max int64) *byteLRU {
	return &byteLRU{max: max, ll: list.New(), items: map[hashing.ID]*list.Element{}}
}

func (c *byteLRU) get(id hashing.ID) ([]byte, bool) {
	e, ok := c.items[id]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*lruItem).data, true
}

func (c *byteLRU) put(id hashing.ID, b []byte) {
	if int64(len(b)) > c.max {
		return
	}
	if _, ok := c.items[id]; ok {
		return
	}
	c.items[id] = c.ll.PushFront(&lruItem{id, b})
	c.size += int64(len(b))
	for c.size > c.max {
		e := c.ll.Back()
		it := e.Value.(*lruItem)
		c.ll.Remove(e)
		delete(c.items, it.id)
		c.size -= int64(len(it.data))
	}
}

// ReadSeeker is an io.ReadSeeker over a File bound to ctx (what
// http.ServeContent wants). Sequential reads fetch ahead within the current
// range window (see Window) so a long read is not one chunk at a time.
type ReadSeeker struct {
	ctx    context.Context
	f      *File
	pos    int64
	ahead  int64 // prefetched up to here
	window [][2]int64
	err    error // first read error
}

// NewReadSeeker returns a ReadSeeker at offset 0. windows, when given, are
// the byte ranges the caller will read; read-ahead never leaves them.
func (f *File) NewReadSeeker(ctx context.Context, windows [][2]int64) *ReadSeeker {
	if len(windows) == 0 {
		windows = [][2]int64{{0, f.m.Size}}
	}
	return &ReadSeeker{ctx: ctx, f: f, window: formats.MergeRanges(windows)}
}

// ReadAhead is how far past a read a ReadSeeker fetches, within its
// window, when a read passes what it fetched before.
const ReadAhead = 8 << 20

// Err returns the first error a Read met other than io.EOF, or nil. A
// server that has sent its headers learns from it that the body it sent
// was cut short.
func (s *ReadSeeker) Err() error { return s.err }

func (s *ReadSeeker) Read(p []byte) (int, error) {
	if s.pos >= s.f.m.Size {
		return 0, io.EOF
	}
	if s.pos >= s.ahead {
		end := s.pos + int64(len(p))
		for _, w := range s.window {
			if s.pos >= w[0] && s.pos < w[1] {
				end = max(end, min(w[1], s.pos+ReadAhead))
			}
		}
		if err := s.f.Prefetch(s.ctx, [][2]int64{{s.pos, end}}); err != nil {
			s.err = err
			return 0, err
		}
		s.ahead = end
	}
	n, err := s.f.ReadAtContext(s.ctx, p, s.pos)
	s.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *ReadSeeker) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += s.pos
	case io.SeekEnd:
		off += s.f.m.Size
	default:
		return 0, errors.New("bad whence")
	}
	if off < 0 {
		return 0, errors.New("negative position")
	}
	if off != s.pos {
		s.ahead = off
	}
	s.pos = off
	return off, nil
}
