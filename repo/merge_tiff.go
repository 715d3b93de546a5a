package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// writeMerged makes the merged COG: our file with the tiles merge3 took
// from theirs spliced in (tiff.Splice rewrites the offsets), written over
// the working file, chunked and stored like a commit does, and checked to
// hold exactly the merged chunks; its manifest goes to result. What
// cannot be spliced is returned as conflicts, the working file untouched.
func (r *Repo) writeMerged(ctx context.Context, ms [3]*manifest.Manifest, mr merge3.Result, result string) ([]MergeConflict, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	ours, theirs := ms[1], ms[2]
	a, err := os.Open(r.abs(ours.Path))
	if err != nil {
		return []MergeConflict{{Reason: fmt.Sprintf("our file is not in the work tree: %v", err)}}, nil
	}
	defer a.Close()
	if d, err := hashing.SumReaderAt(ctx, a, ours.Size); err != nil || d != ours.Digest {
		return []MergeConflict{{Reason: "the working file is not our committed version (commit or check it out first)"}}, nil
	}
	gt := r.gitTree()
	defer gt.Close()
	b, err := gt.Create("chunkvc/merge-theirs")
	if err != nil {
		return nil, err
	}
	defer b.Abort()
	if _, err := r.assembleFile(ctx, theirs, b.File, nil, nil); err != nil {
		return nil, fmt.Errorf("assemble their version: %w", err)
	}
	ka, errA := tiff.Skeleton(a, ours.Size)
	kb, errB := tiff.Skeleton(b.File, theirs.Size)
	if errA != nil || errB != nil || ka != kb {
		why := "the sides' TIFF tags or IFD structure differ (metadata changed, or the file was re-encoded)"
		if err := errors.Join(errA, errB); err != nil {
			why = "a side's TIFF structure cannot be spliced: " + err.Error()
		}
		return []MergeConflict{{Reason: why}}, nil
	}
	repl, cs, err := r.replacements(ctx, a, ours, b.File, theirs, mr)
	if err != nil || len(cs) > 0 {
		return cs, err
	}
	wt := r.workTree()
	defer wt.Close()
	f, err := wt.Create(ours.Path)
	if err != nil {
		return nil, err
	}
	if _, err := tiff.Splice(f, a, ours.Size, repl); err != nil {
		f.Abort()
		return []MergeConflict{{Reason: "the tiles cannot be spliced: " + err.Error()}}, nil
	}
	if err := errors.Join(f.Sync(), f.Commit(true)); err != nil {
		return nil, err
	}
	text, err := r.chunkMerged(ctx, ours, mr)
	if err != nil {
		// Our version goes back: the work tree must match what Git keeps.
		wt2 := r.workTree()
		defer wt2.Close()
		cache := r.loadStatCache()
		defer func() { _ = cache.Save() }()
		_, rerr := r.writeFile(ctx, wt2, ours, nil, cache, nil)
		return nil, errors.Join(err, rerr)
	}
	return nil, os.WriteFile(result, text, 0o644)
}

// replacements pairs each tile taken from theirs with its block in our
// file (a) and in theirs (b), as the TIFF adapter lays both files out.
func (r *Repo) replacements(ctx context.Context, a io.ReaderAt, ours *manifest.Manifest, b io.ReaderAt, theirs *manifest.Manifest, mr merge3.Result) ([]tiff.Replacement, []MergeConflict, error) {
	la, err := r.formats.Enumerate(ctx, a, ours.Size)
	if err != nil {
		return nil, nil, err
	}
	lb, err := r.formats.Enumerate(ctx, b, theirs.Size)
	if err != nil {
		return nil, nil, err
	}
	if la.Format != "tiff" || lb.Format != "tiff" {
		return nil, []MergeConflict{{Reason: "a side is not read as a TIFF any more"}}, nil
	}
	sa, sb := chunkSegments(la), chunkSegments(lb)
	var repl []tiff.Replacement
	var cs []MergeConflict
	for _, c := range mr.Chunks {
		if c.From != merge3.Theirs {
			continue
		}
		x, okA := sa[c.Key]
		y, okB := sb[c.Key]
		if !okA || !okB || strings.Contains(c.Key, "@") {
			cs = append(cs, MergeConflict{Key: c.Key, BBox: c.BBox, Reason: "their tile has no block of its own in our file (a shared, split or new tile)"})
			continue
		}
		repl = append(repl, tiff.Replacement{Off: x.Off, Src: b, SrcOff: y.Off, N: y.Len})
	}
	return repl, cs, nil
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
// chunks and layout, as a commit does; its manifest must list exactly the
// merged chunks. It returns the manifest's text.
func (r *Repo) chunkMerged(ctx context.Context, ours *manifest.Manifest, mr merge3.Result) ([]byte, error) {
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
	got := ch.m.Chunks
	if len(got) != len(mr.Chunks) || len(ch.parts) > 0 {
		return nil, fmt.Errorf("%w: the merged file has %d chunks, the merge %d", ErrIntegrity, len(got), len(mr.Chunks))
	}
	for i, c := range mr.Chunks {
		if got[i].Key != c.Key || got[i].ID != c.ID {
			return nil, fmt.Errorf("%w: the merged file's chunk %s is %s, the merge took %s", ErrIntegrity, got[i].Key, got[i].ID.Short(), c.ID.Short())
		}
	}
	return ch.encoded, nil
}
