package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// Git's merge driver for manifests: `chunkvc install` writes
// MergeAttribute to .gitattributes and merge.chunkvc.driver to
// .git/config, so that a plain `git merge` merges data files chunk by
// chunk. Git calls the driver only for a manifest both sides changed.
const (
	MergeDriverName   = "chunkvc"
	MergeAttribute    = ManifestDir + "/** merge=" + MergeDriverName
	MergeDriverKey    = "merge." + MergeDriverName + ".driver"
	MergeDriverNameKy = "merge." + MergeDriverName + ".name"
)

// ErrMergeConflict is returned by MergeDriver when the sides cannot be
// merged; the conflict is recorded in the result file.
var ErrMergeConflict = errors.New("merge conflict")

// errDatasetManifest is a dataset's manifest handed to the driver.
var errDatasetManifest = errors.New("a dataset")

// Merge outcomes.
const (
	MergedOurs     = "ours"     // the result is our version
	MergedTheirs   = "theirs"   // the result is their version
	MergedChunks   = "merged"   // chunks from both sides, a new file
	MergedConflict = "conflict" // nothing merged: see Conflicts
)

// MergeConflict is one reason a merge stopped: a chunk both sides changed
// (Key, BBox) or, with Key empty, the whole file.
type MergeConflict struct {
	Key    string     `json:"key,omitempty"`
	BBox   *geom.BBox `json:"bbox,omitempty"`
	Reason string     `json:"reason"`
}

// MergeResult is what MergeDriver did with one manifest.
type MergeResult struct {
	Path       string `json:"path"` // the data file (or the manifest file, if it is no manifest)
	Outcome    string `json:"outcome"`
	FromTheirs int    `json:"chunks_from_theirs,omitempty"`
	// Regenerated counts the overview tiles both sides changed that GDAL
	// computed anew from the merged full-resolution tiles.
	Regenerated int             `json:"overview_tiles_regenerated,omitempty"`
	Conflicts   []MergeConflict `json:"conflicts,omitempty"`
}

// MergeDriver merges the manifest file name (Git's %P) three ways: base,
// ours and theirs are the paths of the merge base's, our and their
// version (Git's %O %A %B), and the result replaces ours. A file one side
// left as the base takes the other side; a COG both sides changed in
// different full-resolution tiles is spliced into a new file in the work
// tree (a Parquet file row group by row group, a FlatGeobuf file feature
// by feature), its chunks and layout stored and its manifest written as
// the result. Anything else is a conflict: the result then holds a readable
// list of the conflicts above our manifest, and the error wraps
// ErrMergeConflict, for Git to stop the merge.
func (r *Repo) MergeDriver(ctx context.Context, base, ours, theirs, name string) (*MergeResult, error) {
	var texts [3][]byte
	for i, p := range []string{base, ours, theirs} {
		b, err := readBounded(p, manifest.MaxManifest)
		if err != nil {
			return nil, fmt.Errorf("merge %s: %w", name, err)
		}
		texts[i] = b
	}
	res := &MergeResult{Path: name, Outcome: MergedOurs}
	switch {
	case bytes.Equal(texts[1], texts[2]) || bytes.Equal(texts[0], texts[2]):
		return res, nil
	case bytes.Equal(texts[0], texts[1]):
		res.Outcome = MergedTheirs
		return res, os.WriteFile(ours, texts[2], 0o644)
	}
	ms, err := decodeThree(texts)
	if err != nil || !strings.HasPrefix(name, ManifestDir+"/") {
		why := "both sides changed it and it is no manifest chunkvc merges"
		switch {
		case manifest.IsSplit(texts[1]) || manifest.IsSplit(texts[2]) || errors.Is(err, errDatasetManifest):
			why = "both sides changed this large file or dataset, which git hands over in pieces: chunkvc merge settles it (after a plain git merge: chunkvc merge --continue)"
		case err != nil:
			why += ": " + err.Error()
		}
		return r.conflict(res, ours, texts[1], []MergeConflict{{Reason: why}})
	}
	res.Path = ms[1].Path
	switch {
	case bothFormat(ms, formats.Parquet):
		return r.mergeFileDriver(ctx, res, ms, texts[1], ours, func(ctx context.Context, res *MergeResult, ms [3]*manifest.Manifest) (*chunked, []MergeConflict, error) {
			return r.mergeParquet(ctx, res, ms, nil)
		})
	case bothFormat(ms, formats.FlatGeobuf):
		return r.mergeFileDriver(ctx, res, ms, texts[1], ours, func(ctx context.Context, res *MergeResult, ms [3]*manifest.Manifest) (*chunked, []MergeConflict, error) {
			return r.mergeFlatGeobuf(ctx, res, ms, nil)
		})
	}
	mr, conflicts := mergeChunks(res, ms, nil)
	regen, conflicts := r.overviewPlan(ms, &mr, conflicts)
	if len(conflicts) == 0 {
		// Both sides changed the file: what is not in its chunks (tags,
		// metadata) must be the same on both, whatever tiles merge.
		conflicts, err = r.sameSkeleton(ctx, ms[1], ms[2])
		if len(conflicts) == 0 && err == nil && (res.FromTheirs > 0 || len(regen) > 0) {
			res.Outcome, res.Regenerated = MergedChunks, len(regen)
			conflicts, err = r.writeMerged(ctx, ms, mr, regen, ours)
		}
		if err != nil {
			// Git takes any exit but 0 as a conflict and keeps the result
			// file: it must say why, never pass for our version.
			_, cerr := r.conflict(res, ours, texts[1], []MergeConflict{{Reason: "the merge failed: " + manifest.SanitizeValue(err.Error())}})
			return res, fmt.Errorf("merge %s: %w", res.Path, errors.Join(err, cerr))
		}
	}
	if len(conflicts) > 0 {
		return r.conflict(res, ours, texts[1], conflicts)
	}
	return res, nil
}

// bothFormat reports whether ours and theirs are files of format.
func bothFormat(ms [3]*manifest.Manifest, format string) bool {
	return ms[1].Format == format && ms[2].Format == format
}

// decodeThree decodes three single-file manifests of one path; an empty
// base (no common ancestor) is a manifest with no chunks.
func decodeThree(texts [3][]byte) ([3]*manifest.Manifest, error) {
	var ms [3]*manifest.Manifest
	for i, t := range texts {
		if i == 0 && len(t) == 0 {
			ms[0] = &manifest.Manifest{}
			continue
		}
		m, err := manifest.Decode(t)
		if err != nil {
			return ms, err
		}
		if IsDataset(m) {
			return ms, errDatasetManifest
		}
		ms[i] = m
	}
	if ms[1].Path != ms[2].Path || (len(texts[0]) > 0 && ms[0].Path != ms[1].Path) {
		return ms, errors.New("the versions name different files")
	}
	if ms[0].Path == "" {
		ms[0].Path = ms[1].Path
	}
	return ms, nil
}

// mergeChunks sets res from the three-way merge of ms's chunks (with the
// conflicts take settles) and returns the conflicts: changed keys, and what stops the sides' files
// from being spliced (different formats or profiles, a generic file).
func mergeChunks(res *MergeResult, ms [3]*manifest.Manifest, take func(string) merge3.Side) (merge3.Result, []MergeConflict) {
	ours, theirs := ms[1], ms[2]
	mr := merge3.ChunksTaking(ms[0].Chunks, ours.Chunks, theirs.Chunks, take)
	var out []MergeConflict
	for _, c := range mr.Conflicts {
		out = append(out, MergeConflict{Key: c.Key, BBox: c.BBox, Reason: keyConflictReason(c)})
	}
	if ours.Format != "tiff" || theirs.Format != "tiff" {
		return mr, append(out, MergeConflict{Reason: fmt.Sprintf("both sides changed this %s file (only COG/GeoTIFF files merge tile by tile, Parquet row group by row group, FlatGeobuf feature by feature)", ours.Format)})
	}
	if why := sameProfile(ours, theirs); why != "" {
		return mr, append(out, MergeConflict{Reason: "the sides' files differ in structure: " + why})
	}
	for _, c := range mr.Chunks {
		if c.From == merge3.Theirs {
			res.FromTheirs++
		}
	}
	// A key both sides changed is in ours: counted as one of our tiles,
	// whichever way it is settled.
	n := len(mr.Chunks)
	for _, c := range mr.Conflicts {
		if !c.Ours.IsZero() {
			n++
		}
	}
	if n != len(ours.Chunks) {
		out = append(out, MergeConflict{Reason: "the merge adds or removes tiles: the sides' IFD structures differ"})
	}
	return mr, out
}

// keyConflictReason words a key conflict; an overview tile says its level.
func keyConflictReason(c merge3.Conflict) string {
	k := strings.TrimPrefix(c.Key, "mask/")
	if lv, _, ok := strings.Cut(k, "/"); ok && strings.HasPrefix(lv, "z") && lv != "z0" {
		return fmt.Sprintf("overview level %s tile changed on both sides", strings.TrimPrefix(lv, "z"))
	}
	switch {
	case c.Ours.IsZero():
		return "deleted by ours, changed by theirs"
	case c.Theirs.IsZero():
		return "changed by ours, deleted by theirs"
	}
	return fmt.Sprintf("changed on both sides (ours %s, theirs %s)", c.Ours.Short(), c.Theirs.Short())
}

// sameProfile says how two TIFF manifests differ beyond their tiles, or "".
func sameProfile(a, b *manifest.Manifest) string {
	switch {
	case a.FormatVersion != b.FormatVersion || a.Params != b.Params || a.Fallback != b.Fallback:
		return "adapter version or parameters"
	case len(a.Summary) != len(b.Summary):
		return "summary"
	}
	for i, f := range a.Summary {
		if g := b.Summary[i]; f != g {
			return fmt.Sprintf("%s is %q on ours, %q on theirs", f.Name, f.Value, g.Value)
		}
	}
	return ""
}

// conflict writes the conflicts above our manifest into the result file.
func (r *Repo) conflict(res *MergeResult, result string, oursText []byte, cs []MergeConflict) (*MergeResult, error) {
	res.Outcome, res.Conflicts, res.FromTheirs, res.Regenerated = MergedConflict, cs, 0, 0
	var b bytes.Buffer
	fmt.Fprintf(&b, "<<<<<<< chunkvc merge conflict in %s\n", res.Path)
	for _, c := range cs {
		b.WriteString(ConflictLine(c))
		b.WriteByte('\n')
	}
	b.WriteString("=======\n")
	b.WriteString("keep a side with git checkout --ours|--theirs on this file, or undo with git merge --abort\n")
	b.WriteString(">>>>>>> our manifest follows\n")
	b.Write(oursText)
	if err := os.WriteFile(result, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return res, fmt.Errorf("%s: %w (%d)", res.Path, ErrMergeConflict, len(cs))
}

// ConflictLine is one conflict in words: "conflict KEY [BBOX]: reason".
func ConflictLine(c MergeConflict) string {
	s := "conflict"
	if c.Key != "" {
		s += " " + c.Key
	}
	if c.BBox != nil {
		s += " [" + manifest.FormatBBox(*c.BBox) + "]"
	}
	return s + ": " + c.Reason
}

// readBounded reads a file of at most limit bytes.
func readBounded(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than a manifest may have", p, fi.Size())
	}
	b := make([]byte, fi.Size())
	_, err = f.ReadAt(b, 0)
	if err != nil && fi.Size() > 0 {
		return nil, err
	}
	return b, nil
}
