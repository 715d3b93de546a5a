package repo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// writeMerged makes the merged COG, whose sides have the same skeleton
// (sameSkeleton): our file with the tiles merge3 took from theirs
// spliced in (tiff.Splice rewrites the offsets), written over
// the working file, chunked and stored like a commit does, and checked to
// hold exactly the merged chunks; its manifest goes to result. What
// cannot be spliced is returned as conflicts, the working file untouched.
func (r *Repo) writeMerged(ctx context.Context, ms [3]*manifest.Manifest, mr merge3.Result, regen []string, result string) ([]MergeConflict, error) {
	ch, cs, err := r.spliceMerged(ctx, ms, mr, regen)
	if err != nil || len(cs) > 0 {
		return cs, err
	}
	if len(ch.parts) > 0 {
		return nil, fmt.Errorf("%w: the merged %s needs a split manifest", ErrIntegrity, ch.m.Path)
	}
	return nil, os.WriteFile(result, ch.encoded, 0o644)
}

// spliceMerged is writeMerged's work: the merged file in the work tree,
// its chunks and layout stored, and its manifest (split or not). The
// overview tiles in regen (ours in mr) are regenerated with GDAL.
func (r *Repo) spliceMerged(ctx context.Context, ms [3]*manifest.Manifest, mr merge3.Result, regen []string) (*chunked, []MergeConflict, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	ours := ms[1]
	a, cs, err := r.openOurs(ctx, ms)
	if err != nil || len(cs) > 0 {
		return nil, cs, err
	}
	defer a.Close()
	repl, segs, cs, err := r.replacements(ctx, a, ours, mr)
	if err != nil || len(cs) > 0 {
		return nil, cs, err
	}
	var rg *regenerated
	if len(regen) > 0 {
		mr.Chunks = slices.Clone(mr.Chunks)
		if rg, repl, err = r.withOverviews(ctx, a, ours, repl, segs, regen, &mr); err != nil {
			return nil, []MergeConflict{{Reason: "the overview tiles both sides changed cannot be regenerated: " + manifest.SanitizeValue(err.Error())}}, nil
		}
		defer rg.close()
	}
	sp, err := tiff.PlanSplice(a, ours.Size, repl)
	if err != nil {
		return nil, []MergeConflict{{Reason: "the tiles cannot be spliced: " + err.Error()}}, nil
	}
	in, err := r.spliceInPlace(ctx, ours, a, sp)
	if err != nil {
		return nil, nil, err
	}
	if in == nil {
		if err := r.spliceNew(ours, a, sp); err != nil {
			return nil, nil, err
		}
	}
	if rg != nil {
		err = rg.verify(ctx, r.Overviews, r.abs(ours.Path))
	}
	ch, err := r.storeMergedUndo(ctx, ours, holdsMerge(ours, mr.Chunks), err, in)
	return ch, nil, err
}

// spliceNew writes the merged file sp, of our file a, as a new file over
// the working one.
func (r *Repo) spliceNew(ours *manifest.Manifest, a io.ReaderAt, sp *tiff.Spliced) error {
	wt := r.workTree()
	defer wt.Close()
	f, err := wt.Create(ours.Path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := sp.WriteFrom(w, a, 0); err != nil {
		f.Abort()
		return fmt.Errorf("%s: %w", ours.Path, err)
	}
	if err := w.Flush(); err != nil {
		f.Abort()
		return err
	}
	return errors.Join(f.Sync(), f.Commit(true))
}

// storeMerged chunks and stores the merged file just written over ours
// (unless err says it is wrong), which must hold exactly want; on any
// error our version goes back into the work tree.
func (r *Repo) storeMerged(ctx context.Context, ours *manifest.Manifest, want []merge3.Taken, err error) (*chunked, error) {
	return r.storeMergedCheck(ctx, ours, holdsMerge(ours, want), err)
}

// holdsMerge is the check of a merged file that must hold exactly want.
func holdsMerge(ours *manifest.Manifest, want []merge3.Taken) func(*chunked) error {
	return func(ch *chunked) error {
		if !sameChunks(ch.m.Chunks, want) {
			return fmt.Errorf("%w: the merged file %s does not hold the chunks of the merge", ErrIntegrity, ours.Path)
		}
		return nil
	}
}

// storeMergedCheck is storeMerged for a merge whose chunks are known
// only once the adapter has read the merged file: check says whether its
// manifest is the merge's.
func (r *Repo) storeMergedCheck(ctx context.Context, ours *manifest.Manifest, check func(*chunked) error, err error) (*chunked, error) {
	return r.storeMergedUndo(ctx, ours, check, err, nil)
}

// storeMergedUndo is storeMergedCheck for a merged file that is ours
// spliced in place (in, when not nil): the journal goes once the merged
// file is stored, and on an error our bytes come back from it.
func (r *Repo) storeMergedUndo(ctx context.Context, ours *manifest.Manifest, check func(*chunked) error, err error, in *splicedInPlace) (*chunked, error) {
	var ch *chunked
	if err == nil {
		ch, err = r.chunkMerged(ctx, ours, check)
	}
	if err == nil {
		// As a commit does: the next status, or the post-merge
		// checkout, need not read the merged file again.
		hashed := ch.hashed
		if in != nil {
			hashed = in.hashed(ch)
		}
		cache := r.loadStatCache()
		cache.Put(ours.Path, statcache.Entry{Stat: ch.stat, Digest: ch.m.Digest, Layout: ch.m.Layout, Hashed: hashed})
		_ = cache.Save()
		if in != nil {
			err = in.done()
			if err != nil {
				// done may have dropped the journal before it failed:
				// undo would then find nothing and leave the merged
				// bytes, so ours is written whole below.
				in = nil
			}
		}
	}
	if err == nil {
		return ch, nil
	}
	if in != nil {
		uerr := in.undo()
		if uerr == nil {
			return nil, err
		}
		err = errors.Join(err, uerr) // then written whole
	}
	// Our version goes back: the work tree must match what Git keeps.
	wt2 := r.workTree()
	defer wt2.Close()
	cache := r.loadStatCache()
	defer func() { _ = cache.Save() }()
	_, rerr := r.writeFile(ctx, wt2, ours, nil, cache, nil)
	return nil, errors.Join(err, rerr)
}

// openOurs opens the working file, which must hold our version. git
// rebase and cherry-pick move HEAD between commits without chunkvc
// checkout, so the work tree may hold another side's version (a rebase's
// "ours" is the upstream): a working file that is the base's or their
// committed version is replaced with ours from the store first. Anything
// else (unsaved work) is a conflict, the file untouched.
func (r *Repo) openOurs(ctx context.Context, ms [3]*manifest.Manifest) (*os.File, []MergeConflict, error) {
	ours := ms[1]
	// The stat cache vouches for a file checkout or commit wrote: a
	// merge need not read the whole file to know it is ours.
	cache := r.loadStatCache()
	d, _, fresh, err := r.fileDigest(ctx, cache, ours.Path, ours)
	if fresh {
		_ = cache.Save()
	}
	switch {
	case err == nil && d == ours.Digest:
	case err == nil && (d == ms[0].Digest || d == ms[2].Digest):
		wt := r.workTree()
		defer wt.Close()
		defer func() { _ = cache.Save() }()
		if _, err := r.writeFile(ctx, wt, ours, nil, cache, nil); err != nil {
			return nil, nil, fmt.Errorf("write our version of %s: %w", ours.Path, err)
		}
	default:
		return nil, []MergeConflict{{Reason: "the working file is not our committed version (commit or check it out first)"}}, nil
	}
	f, err := os.Open(r.abs(ours.Path))
	return f, nil, err
}

// sameSkeleton reports a conflict unless the two TIFFs have the same
// skeleton (tiff.Skeleton): splicing tiles keeps our tags, so a change
// of theirs outside their tiles would be lost. Neither file is read: the
// TIFF walk reads only inline bytes, which the layouts hold.
func (r *Repo) sameSkeleton(ctx context.Context, ours, theirs *manifest.Manifest) ([]MergeConflict, error) {
	var keys [2][32]byte
	var errs [2]error
	for i, m := range []*manifest.Manifest{ours, theirs} {
		lay, err := r.layoutFor(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("layout of %s: %w", m.Path, err)
		}
		keys[i], errs[i] = tiff.Skeleton(newSkeletonReader(lay), m.Size)
	}
	if err := errors.Join(errs[0], errs[1]); err != nil {
		return []MergeConflict{{Reason: "a side's TIFF structure cannot be spliced: " + err.Error()}}, nil
	}
	if keys[0] != keys[1] {
		return []MergeConflict{{Reason: "the sides' TIFF tags or IFD structure differ (metadata changed, or the file was re-encoded)"}}, nil
	}
	return nil, nil
}

// replacements pairs each tile taken from theirs with its block in our
// file a, as the TIFF adapter lays it out, and their chunk's bytes, read
// (verified) from the stores; the tiles held are those their side
// changed.
func (r *Repo) replacements(ctx context.Context, a io.ReaderAt, ours *manifest.Manifest, mr merge3.Result) ([]tiff.Replacement, map[string]formats.Segment, []MergeConflict, error) {
	la, err := r.formats.Enumerate(ctx, a, ours.Size)
	if err != nil {
		return nil, nil, nil, err
	}
	if la.Format != "tiff" {
		return nil, nil, []MergeConflict{{Reason: "our file is not read as a TIFF any more"}}, nil
	}
	sa := chunkSegments(la)
	var repl []tiff.Replacement
	var cs []MergeConflict
	for _, c := range mr.Chunks {
		if c.From != merge3.Theirs {
			continue
		}
		x, ok := sa[c.Key]
		if !ok || strings.Contains(c.Key, "@") {
			cs = append(cs, MergeConflict{Key: c.Key, BBox: c.BBox, Reason: "their tile has no block of its own in our file (a shared, split or new tile)"})
			continue
		}
		b, _, err := r.read.Get(ctx, c.ID)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("their tile %s (%s): %w", c.Key, c.ID.Short(), err)
		}
		repl = append(repl, tiff.Replacement{Off: x.Off, Src: bytes.NewReader(b), N: int64(len(b))})
	}
	return repl, sa, cs, nil
}

// skeletonReader reads a file from its layout alone: inline pieces as
// they are, chunk and derived pieces as zeros. A TIFF's walk reads only
// inline bytes (header, IFDs, tag values, GDAL's block leaders).
type skeletonReader struct {
	lay  *manifest.Layout
	offs []int64 // start of each piece, then the size
}

func newSkeletonReader(lay *manifest.Layout) *skeletonReader {
	s := &skeletonReader{lay: lay, offs: make([]int64, 0, lay.Len()+1)}
	var off int64
	for _, pc := range lay.All() {
		s.offs = append(s.offs, off)
		off += pc.Len
	}
	s.offs = append(s.offs, off)
	return s
}

func (s *skeletonReader) ReadAt(p []byte, off int64) (int, error) {
	size := s.offs[len(s.offs)-1]
	if off < 0 || off >= size {
		return 0, io.EOF
	}
	n := 0
	i := sort.Search(len(s.offs)-1, func(i int) bool { return s.offs[i+1] > off })
	for n < len(p) && i < len(s.offs)-1 {
		pc := s.lay.Piece(i)
		from := off + int64(n) - s.offs[i]
		k := int(min(int64(len(p)-n), pc.Len-from))
		if pc.IsInline() {
			copy(p[n:n+k], pc.Inline[from:])
		} else {
			clear(p[n : n+k])
		}
		n += k
		i++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// chunkSegments indexes a layout's chunk segments (not aliases) by key.
func chunkSegments(l *formats.Layout) map[string]formats.Segment {
	out := make(map[string]formats.Segment, len(l.Segments))
	for _, s := range l.Segments {
		if s.IsChunk() {
			out[s.Key] = s
		}
	}
	return out
}

// chunkMerged chunks the merged file in the work tree and stores its
// chunks and layout, as a commit does; its manifest must pass check.
func (r *Repo) chunkMerged(ctx context.Context, ours *manifest.Manifest, check func(*chunked) error) (*chunked, error) {
	up, err := newUpload(ctx, r.Store, VerifySize, nil)
	if err != nil {
		return nil, err
	}
	defer up.abort()
	ch, err := r.chunkFile(ctx, ours.Path, func() (*manifest.Manifest, error) { return ours, nil }, version{}, up, 0)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(ch.named.Wait(), ch.put.Wait()); err != nil {
		return nil, err
	}
	if err := up.finish(ctx); err != nil {
		return nil, err
	}
	if err := check(ch); err != nil {
		return nil, err
	}
	return ch, nil
}
