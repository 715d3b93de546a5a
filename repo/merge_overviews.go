package repo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/merge3"
)

// A COG's overviews reach down to one tile, so any two edits on two
// branches change its top overview tiles on both sides. When those are
// a merge's only conflicts, the overview tiles are computed anew from
// the merged full-resolution pixels by GDAL (OverviewRegenerator: the
// gdal build itself, the plain one through chunkvc-gdal) and spliced in;
// every other tile keeps its bytes.

// OverviewSpec says how the merged COG's overview tiles are encoded and
// which of them the merge regenerates.
type OverviewSpec struct {
	Compress  string   `json:"compress"`  // GDAL's COMPRESS value
	Predictor int      `json:"predictor"` // 1 none, 2 horizontal, 3 floating point
	Allowed   []string `json:"allowed"`   // the overview tiles regenerated
}

// RegeneratedOverviews are the overviews GDAL built for a merged COG:
// Blocks are each overview tile's offset and byte count in the TIFF at
// Overviews, Path what the regenerator compares other files with.
type RegeneratedOverviews struct {
	Path       string              `json:"path"`
	Overviews  string              `json:"overviews"`
	Resampling string              `json:"resampling"`
	Blocks     map[string][2]int64 `json:"blocks"`
}

// OverviewRegenerator builds a COG's overviews with GDAL.
type OverviewRegenerator interface {
	// Regenerate builds the overviews of the COG at src from its full
	// resolution into dir, with the resampling its overviews were made
	// with: the one under which every overview tile but spec.Allowed has
	// the pixels src has.
	Regenerate(ctx context.Context, src, dir string, spec OverviewSpec) (*RegeneratedOverviews, error)
	// Differ lists the overview tiles of the COG at path whose pixels
	// differ from reg's.
	Differ(ctx context.Context, path string, reg *RegeneratedOverviews) ([]string, error)
}

// gdalCompress is GDAL's COMPRESS value for the lossless codecs whose
// tiles GDAL encodes as the COG driver does.
var gdalCompress = map[string]string{"none": "NONE", "deflate": "DEFLATE", "lzw": "LZW", "zstd": "ZSTD", "lzma": "LZMA", "packbits": "PACKBITS"}

// overviewKey reports whether key is a tile of an overview level (not a
// mask, plane, cut or second pyramid) and its level.
func overviewKey(key string) (int, bool) {
	k, ok := tiff.ParseKey(key)
	if !ok || k.Level < 1 || k.IFD >= 0 || k.Mask || k.Plane >= 0 || k.Cut || !k.Tiled {
		return k.Level, false
	}
	return k.Level, true
}

// overviewPlan settles the overview tiles both sides changed when they
// are the merge's only conflicts and GDAL can regenerate them: they are
// taken from ours in mr (spliceMerged replaces them) and returned.
// Otherwise each such conflict says why it is not regenerated.
func (r *Repo) overviewPlan(ms [3]*manifest.Manifest, mr *merge3.Result, cs []MergeConflict) ([]string, []MergeConflict) {
	var ovr []string
	why := ""
	for _, c := range cs {
		if _, ok := overviewKey(c.Key); ok {
			ovr = append(ovr, c.Key)
			continue
		}
		switch {
		case c.Key == "" && strings.HasPrefix(c.Reason, "the sides' files differ in structure"):
			why = "the sides' profiles differ"
		case c.Key == "" && why == "":
			why = "the sides cannot be spliced"
		case why == "":
			why = "full-resolution tiles conflict"
		}
	}
	if len(ovr) == 0 {
		return nil, cs
	}
	summary := map[string]string{}
	for _, f := range ms[1].Summary {
		summary[f.Name] = f.Value
	}
	switch {
	case why != "":
	case r.Overviews == nil:
		why = "regenerating overviews needs GDAL (install chunkvc-gdal beside chunkvc)"
	case gdalCompress[summary["compression"]] == "":
		why = fmt.Sprintf("%s tiles are not regenerated (lossless codecs only)", summary["compression"])
	case summary["masks"] != "0" || summary["interleave"] != "pixel" || summary["pages"] != "":
		why = "only overviews of a COG without masks, band interleaving or pages are regenerated"
	}
	if why != "" {
		for i, c := range cs {
			if _, ok := overviewKey(c.Key); ok {
				cs[i].Reason += ": not regenerated, " + why
			}
		}
		return nil, cs
	}
	ours := map[string]manifest.Chunk{}
	for _, c := range ms[1].Chunks {
		ours[c.Key] = c
	}
	for _, k := range ovr {
		c, ok := ours[k]
		if !ok {
			return nil, append(cs, MergeConflict{Key: k, Reason: "overview tile deleted by ours"})
		}
		mr.Chunks = append(mr.Chunks, merge3.Taken{Chunk: c, From: merge3.Ours})
	}
	slices.SortFunc(mr.Chunks, func(a, b merge3.Taken) int { return manifest.NaturalCompare(a.Key, b.Key) })
	mr.Conflicts = nil
	return ovr, nil
}

// regenerated is the overview tiles GDAL rebuilt for a merge: their
// bytes, by key, and the regenerator's result to verify the merged file
// with.
type regenerated struct {
	tiles map[string][]byte
	reg   *RegeneratedOverviews
	dir   string // GDAL's files, removed by close
}

func (rg *regenerated) close() { os.RemoveAll(rg.dir) }

// withOverviews regenerates the overview tiles in keys (see
// regenerateOverviews) and adds them to repl, their IDs to mr. The
// result's close removes GDAL's files once the merged file is verified.
func (r *Repo) withOverviews(ctx context.Context, a io.ReaderAt, ours *manifest.Manifest, repl []tiff.Replacement, segs map[string]formats.Segment, keys []string, mr *merge3.Result) (*regenerated, []tiff.Replacement, error) {
	dir, err := os.MkdirTemp(r.gitDir(), "chunkvc-overviews-")
	if err != nil {
		return nil, nil, err
	}
	rg, err := r.regenerateOverviews(ctx, a, ours, repl, keys, dir)
	if err == nil {
		repl, err = rg.replace(repl, segs, mr)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return rg, repl, nil
}

// regenerateOverviews writes the merge without the overview tiles both
// sides changed (ours stand in for them) to a temporary file, has GDAL
// rebuild its overviews from its full resolution, and returns the new
// bytes of the tiles in keys. dir is a temporary directory the caller
// removes.
func (r *Repo) regenerateOverviews(ctx context.Context, a io.ReaderAt, ours *manifest.Manifest, repl []tiff.Replacement, keys []string, dir string) (*regenerated, error) {
	tmp := filepath.Join(dir, "merged.tif")
	f, err := os.Create(tmp)
	if err != nil {
		return nil, err
	}
	_, err = tiff.Splice(f, a, ours.Size, repl)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	summary := map[string]string{}
	for _, f := range ours.Summary {
		summary[f.Name] = f.Value
	}
	spec := OverviewSpec{Compress: gdalCompress[summary["compression"]], Allowed: keys}
	_, _ = fmt.Sscan(summary["predictor"], &spec.Predictor)
	reg, err := r.Overviews.Regenerate(ctx, tmp, dir, spec)
	if err != nil {
		return nil, err
	}
	ovr, err := os.Open(reg.Overviews)
	if err != nil {
		return nil, err
	}
	defer ovr.Close()
	out := &regenerated{tiles: map[string][]byte{}, reg: reg, dir: dir}
	for _, k := range keys {
		b, ok := reg.Blocks[k]
		if !ok || b[1] <= 0 || b[1] > manifest.MaxManifest {
			return nil, fmt.Errorf("regenerated overviews lack tile %s", k)
		}
		buf := make([]byte, b[1])
		if _, err := ovr.ReadAt(buf, b[0]); err != nil {
			return nil, fmt.Errorf("regenerated tile %s: %w", k, err)
		}
		out.tiles[k] = buf
	}
	return out, nil
}

// replace adds rg's tiles to repl, at their blocks in our file (segs),
// and records their chunk IDs in mr.
func (rg *regenerated) replace(repl []tiff.Replacement, segs map[string]formats.Segment, mr *merge3.Result) ([]tiff.Replacement, error) {
	for i, c := range mr.Chunks {
		b, ok := rg.tiles[c.Key]
		if !ok {
			continue
		}
		seg, ok := segs[c.Key]
		if !ok {
			return nil, fmt.Errorf("overview tile %s has no block of its own in our file", c.Key)
		}
		repl = append(repl, tiff.Replacement{Off: seg.Off, Src: bytes.NewReader(b), N: int64(len(b))})
		mr.Chunks[i].ID = hashing.Sum(b)
	}
	return repl, nil
}

// verify checks the merged file at p: every overview tile has the pixels
// GDAL computes from its full resolution.
func (rg *regenerated) verify(ctx context.Context, o OverviewRegenerator, p string) error {
	diff, err := o.Differ(ctx, p, rg.reg)
	if err != nil {
		return err
	}
	if len(diff) > 0 {
		return fmt.Errorf("%w: overview tiles %s of the merged file differ from GDAL's (%s) overviews of its pixels", ErrIntegrity, strings.Join(diff, " "), rg.reg.Resampling)
	}
	return nil
}
