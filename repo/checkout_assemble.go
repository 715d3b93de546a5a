package repo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/chunkread"
	"github.com/chunkvc/chunkvc/repo/internal/fileio"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
)

// AssembleStats says where a file's bytes came from.
type AssembleStats struct {
	ChunksReused  int   `json:"chunks_reused"`  // read from the working file
	ChunksLocal   int   `json:"chunks_local"`   // read from a local store or the read cache
	ChunksFetched int   `json:"chunks_fetched"` // downloaded from the configured store
	BytesFetched  int64 `json:"bytes_fetched"`
	// InPlace: the working file was patched where it differed, and
	// BytesWritten were written; otherwise a new file replaced it.
	InPlace      bool  `json:"in_place,omitempty"`
	BytesWritten int64 `json:"bytes_written,omitempty"`
}

// reuse is a working file whose chunks can be read instead of fetched.
type reuse struct {
	f    *os.File
	lay  *manifest.Layout  // its layout
	offs []int64           // where each piece of lay starts
	ids  *manifest.IDIndex // lay's chunk pieces by ID: no maps of a million pieces
}

// reuseFrom indexes the chunks of the working file at p when its layout is
// known (it is byte-identical to something committed or checked out).
func (r *Repo) reuseFrom(ctx context.Context, p string, layoutID hashing.ID) *reuse {
	if layoutID.IsZero() {
		return nil
	}
	lay, err := r.loadLayout(ctx, layoutID)
	if err != nil {
		return nil
	}
	f, err := os.Open(r.abs(p))
	if err != nil {
		return nil
	}
	ru := &reuse{f: f, lay: lay, offs: make([]int64, lay.Len())}
	var chunks []int32
	var off int64
	for i, pc := range lay.All() {
		ru.offs[i] = off
		if pc.Chunk {
			chunks = append(chunks, int32(i))
		}
		off += pc.Len
	}
	ru.ids = manifest.IndexIDs(chunks, func(i int) hashing.ID { return lay.Piece(i).ID })
	return ru
}

// chunkAt returns where the working file holds chunk id, if it does.
func (ru *reuse) chunkAt(id hashing.ID) (int64, bool) {
	i, ok := ru.ids.Find(id)
	if !ok {
		return 0, false
	}
	return ru.offs[i], true
}

// pieceAt returns the piece of the working file's layout that starts at
// off, if one does.
func (ru *reuse) pieceAt(off int64) (manifest.Piece, bool) {
	i, ok := slices.BinarySearch(ru.offs, off)
	if !ok {
		return manifest.Piece{}, false
	}
	return ru.lay.Piece(i), true
}

// inlineAt returns the inline bytes of the working file's layout that
// start at off; nil if no inline piece starts there.
func (ru *reuse) inlineAt(off int64) []byte {
	if pc, ok := ru.pieceAt(off); ok && pc.IsInline() {
		return pc.Inline
	}
	return nil
}

// chunkFor returns where the working file holds chunk piece pc, if it
// does: at next if it is there (a run goes on), else where the index says.
func (ru *reuse) chunkFor(pc manifest.Piece, next int64) (int64, bool) {
	if !pc.Chunk {
		return 0, false
	}
	if at, ok := ru.pieceAt(next); ok && at.Chunk && at.ID == pc.ID {
		return next, true
	}
	return ru.chunkAt(pc.ID)
}

func (ru *reuse) close() {
	if ru != nil {
		ru.f.Close()
	}
}

// read returns the chunk from the working file if it is there and intact.
func (ru *reuse) read(id hashing.ID, n int64, buf []byte) ([]byte, bool) {
	if ru == nil {
		return nil, false
	}
	off, ok := ru.chunkAt(id)
	if !ok {
		return nil, false
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := ru.f.ReadAt(buf, off); err != nil || hashing.Sum(buf) != id {
		return nil, false
	}
	return buf, true
}

func (r *Repo) loadLayout(ctx context.Context, id hashing.ID) (*manifest.Layout, error) {
	b, _, err := r.read.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", id, err)
	}
	return manifest.DecodeLayout(b)
}

// layoutOf loads m's layout, checking that its blob is as long as m
// says. Errors do not name m's file.
func (r *Repo) layoutOf(ctx context.Context, m *manifest.Manifest) (*manifest.Layout, error) {
	if err := chunkread.CheckLayoutClaim(m); err != nil {
		return nil, err
	}
	b, _, err := r.read.Get(ctx, m.Layout)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", m.Layout, err)
	}
	return chunkread.DecodeLayout(m, b)
}

// layoutFor loads m's layout and checks it describes m's size.
func (r *Repo) layoutFor(ctx context.Context, m *manifest.Manifest) (*manifest.Layout, error) {
	lay, err := r.layoutOf(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	if lay.Size != m.Size {
		return nil, fmt.Errorf("%s: %w: layout describes %d bytes, manifest %d", m.Path, ErrIntegrity, lay.Size, m.Size)
	}
	return lay, nil
}

// stream writes the pieces of lay to w: inline bytes from the layout,
// chunks from ru when it has them intact, else from the store (each
// verified by hash), derived pieces as zeros. It returns the digest of what
// it wrote, computed by d (nil: a new Digest). With q not nil, each chunk
// written is also recorded in q, for the quick table of the block cache:
// its records hold once the digest of what was written is the manifest's.
func (r *Repo) stream(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout, w io.Writer, ru *reuse, d *hashing.Digest, q *blockcache.Records) (AssembleStats, hashing.ID, error) {
	var st AssembleStats
	if d == nil {
		d = hashing.New()
	}
	out := io.MultiWriter(w, d)
	// The read-ahead finds each chunk's first place in m.Chunks, for its
	// key, by an IDIndex: a map from ID took 38 MB for 521,623 tiles.
	ra := r.readChunksAhead(ctx, lay, ru, manifest.NewIDIndex(m.Chunks))
	defer ra.stop()
	for i := range lay.Len() {
		pc := lay.Piece(i)
		if err := ctx.Err(); err != nil {
			return st, hashing.ID{}, err
		}
		switch {
		case pc.Derive != "":
			for left := pc.Len; left > 0; { // zeros, regenerated later: a few at a time
				k := min(left, int64(len(zeros)))
				if _, err := out.Write(zeros[:k]); err != nil {
					return st, hashing.ID{}, err
				}
				left -= k
			}
			continue
		case !pc.Chunk:
			if _, err := out.Write(pc.Inline); err != nil {
				return st, hashing.ID{}, err
			}
			continue
		}
		f, err := ra.next(ctx, i)
		if err != nil {
			return st, hashing.ID{}, fmt.Errorf("%s: chunk %s: %w", m.Path, pc.ID, err)
		}
		if f.at < 0 {
			return st, hashing.ID{}, fmt.Errorf("%s: %w: layout names chunk %s, which the manifest does not list", m.Path, ErrIntegrity, pc.ID)
		}
		at := f.at
		data := f.data
		switch {
		case f.err != nil:
			return st, hashing.ID{}, fmt.Errorf("%s: chunk %s (%s): %w", m.Path, m.Chunks[at].Key, pc.ID, f.err)
		case f.reused:
			st.ChunksReused++
		case int64(len(data)) != pc.Len:
			return st, hashing.ID{}, fmt.Errorf("%s: chunk %s (%s): %w: %d bytes, layout says %d", m.Path, m.Chunks[at].Key, pc.ID, ErrIntegrity, len(data), pc.Len)
		case f.src == readpath.FromRemote:
			st.ChunksFetched++
			st.BytesFetched += pc.Len
		default:
			st.ChunksLocal++
		}
		if _, err := out.Write(data); err != nil {
			return st, hashing.ID{}, err
		}
		q.Add(data, pc.ID)
	}
	return st, d.ID(), nil
}

// assembleFile writes the file described by m into f (an empty temp file),
// regenerates derived pieces in place, and verifies the whole file against
// the manifest digest; on a mismatch the error wraps ErrIntegrity.
//
// Chunks the working file holds (ru) are copied from it inside the kernel,
// in runs, without hashing each one: the digest of the finished file is
// what vouches for them. Only if that digest is wrong is the file written
// again the slow way, every reused chunk hashed and, if damaged, fetched.
func (r *Repo) assembleFile(ctx context.Context, m *manifest.Manifest, f *os.File, ru *reuse, prog progress.Counter) (AssembleStats, error) {
	lay, err := r.layoutFor(ctx, m)
	if err != nil {
		return AssembleStats{}, err
	}
	prog = progress.OrNoop(prog)
	if ru != nil {
		st, err := r.place(ctx, m, lay, f, ru, prog)
		if err != nil {
			return st, err
		}
		// The disk writes while the digest is checked; the caller's fsync
		// then waits for less. On its own goroutine: starting writeback
		// of a large file blocks while the device queue fills.
		started := make(chan struct{})
		go func() {
			defer close(started)
			_ = writeback.Start(f)
		}()
		digest, cvs, err := r.finishDerived(ctx, m, lay, f)
		<-started
		if err == nil && digest == m.Digest {
			// The file now holds exactly the committed version, whose
			// blocks the next commit of an edit in place can reuse. Runs
			// copied from the working file were checked by the digest
			// only, not against the layout's chunk IDs the prints come
			// from: such an entry serves one commit, then all is hashed.
			var gen uint32
			if st.ChunksReused > 0 {
				gen = blockcache.MaxGeneration - 2
			}
			r.saveBlocks(m.Digest, m.Size, &blockcache.Set{Gen: gen, Prints: blockcache.LayoutPrints(lay, m.Size), CVs: cvs})
		}
		if err != nil || digest == m.Digest {
			return st, err
		}
		if err := f.Truncate(0); err != nil {
			return st, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return st, err
		}
	}
	w := bufio.NewWriterSize(progressWriter{f, prog}, 1<<20)
	d := hashing.NewBlocks()
	var q *blockcache.Records
	if m.Size > hashing.BlockLen {
		q = blockcache.NewRecords(blockcache.NewQuickSeed(), len(m.Chunks)) // room for a record a chunk: most layouts use each once
	}
	st, _, err := r.stream(ctx, m, lay, w, ru, d, q)
	if err != nil {
		return st, err
	}
	if err := w.Flush(); err != nil {
		return st, err
	}
	digest, cvs := d.SumBlocks()
	if lay.HasDerived() {
		if digest, cvs, err = r.patchDerived(ctx, m, lay, f); err != nil {
			return st, err
		}
	}
	if digest != m.Digest {
		return st, fmt.Errorf("%s: %w: assembled bytes hash to %s, manifest says %s", m.Path, ErrIntegrity, digest, m.Digest)
	}
	bs := &blockcache.Set{Prints: blockcache.LayoutPrints(lay, m.Size), CVs: cvs}
	if q != nil {
		bs.SetQuick(q)
	}
	r.saveBlocks(m.Digest, m.Size, bs)
	return st, nil
}

// place writes lay's pieces into f at their offsets: runs of chunks that
// the working file holds are copied from it unverified; inline bytes and
// other chunks (verified, from the stores) are written. Derived pieces are
// left for finishDerived.
func (r *Repo) place(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout, f *os.File, ru *reuse, prog progress.Counter) (AssembleStats, error) {
	var st AssembleStats
	known := manifest.NewIDIndex(m.Chunks)
	var runSrc, runDst, runLen int64 // the pending copy from the working file
	flush := func() error {
		if runLen == 0 {
			return nil
		}
		done, err := fileio.CopyRange(f, runDst, ru.f, runSrc, runLen)
		if err == nil && !done {
			_, err = io.Copy(io.NewOffsetWriter(f, runDst), io.NewSectionReader(ru.f, runSrc, runLen))
		}
		prog.Add(runLen)
		runLen = 0
		return err
	}
	var off int64
	for _, pc := range lay.All() {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if _, ok := known.Find(pc.ID); pc.Chunk && !ok {
			return st, fmt.Errorf("%s: %w: layout names chunk %s, which the manifest does not list", m.Path, ErrIntegrity, pc.ID)
		}
		if src, ok := ru.chunkFor(pc, runSrc+runLen); ok {
			if runLen > 0 && runSrc+runLen == src && runDst+runLen == off {
				runLen += pc.Len
			} else {
				if err := flush(); err != nil {
					return st, err
				}
				runSrc, runDst, runLen = src, off, pc.Len
			}
			st.ChunksReused++
			off += pc.Len
			continue
		}
		// Inline bytes that follow a run in the working file too (a
		// COG's tile leaders) extend it: one copy instead of a copy and
		// a write per tile.
		if runLen > 0 && !pc.Chunk && pc.Derive == "" && runDst+runLen == off && bytes.Equal(ru.inlineAt(runSrc+runLen), pc.Inline) {
			runLen += pc.Len
			off += pc.Len
			continue
		}
		if err := flush(); err != nil {
			return st, err
		}
		var data []byte
		switch {
		case pc.Derive != "":
			data = nil // written by finishDerived; the file is sized below
		case !pc.Chunk:
			data = pc.Inline
		default:
			b, src, err := r.read.Get(ctx, pc.ID)
			if err != nil {
				return st, fmt.Errorf("%s: chunk %s: %w", m.Path, pc.ID, err)
			}
			if int64(len(b)) != pc.Len {
				return st, fmt.Errorf("%s: chunk %s: %w: %d bytes, layout says %d", m.Path, pc.ID, ErrIntegrity, len(b), pc.Len)
			}
			if src == readpath.FromRemote {
				st.ChunksFetched++
				st.BytesFetched += pc.Len
			} else {
				st.ChunksLocal++
			}
			data = b
		}
		if data != nil {
			if _, err := f.WriteAt(data, off); err != nil {
				return st, err
			}
		}
		prog.Add(pc.Len)
		off += pc.Len
	}
	if err := flush(); err != nil {
		return st, err
	}
	return st, f.Truncate(off)
}

// finishDerived regenerates lay's derived pieces into f, if any, and
// returns the digest of the whole file and the chaining values of its
// blocks.
func (r *Repo) finishDerived(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout, f *os.File) (hashing.ID, []hashing.CV, error) {
	if lay.HasDerived() {
		return r.patchDerived(ctx, m, lay, f)
	}
	return hashing.SumBlocks(ctx, f, m.Size, nil)
}

// patchDerived regenerates every derived piece of lay into f with the
// format adapter's recipe, checks each against its recorded hash, and
// returns the digest of the finished file and the chaining values of its
// blocks.
func (r *Repo) patchDerived(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout, f *os.File) (hashing.ID, []hashing.CV, error) {
	var ws []write
	var off int64
	for _, pc := range lay.All() {
		if pc.Derive != "" {
			ws = append(ws, write{off: off, pc: pc})
		}
		off += pc.Len
	}
	if err := r.deriveInto(ctx, m, f, ws); err != nil {
		return hashing.ID{}, nil, err
	}
	return hashing.SumBlocks(ctx, f, m.Size, nil)
}

// zeros stands in for derived bytes until they are regenerated.
var zeros [64 << 10]byte
