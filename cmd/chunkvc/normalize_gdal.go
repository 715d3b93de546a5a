//go:build gdal

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/gdal"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

// gdalAvailable succeeds: this chunkvc was built with GDAL.
func gdalAvailable() error { return nil }

// normalizeFile rewrites p (a slash path in r) as a COG with prof into a
// temp file beside it, compares it with HEAD's version (head, nil if none)
// and renames it into place unless that would churn unchanged tiles
// (or o.checkOnly).
func normalizeFile(ctx context.Context, r *repo.Repo, p string, head *manifest.Manifest, prof []string, o normalizeOptions) (normalizeResult, error) {
	res := normalizeResult{Path: p, Profile: strings.Join(prof, ","), InHead: head != nil}
	if err := r.CheckWritable(p); err != nil { // GDAL writes beside it by name
		return res, err
	}
	abs := filepath.Join(r.Root, filepath.FromSlash(p))
	st, err := os.Stat(abs)
	if err != nil {
		return res, err
	}
	res.BytesBefore = st.Size()
	tmp, err := tempBeside(abs, "normalize")
	if err != nil {
		return res, err
	}
	defer os.Remove(tmp)
	if err := gdal.Normalize(abs, tmp, prof); err != nil {
		if errors.Is(err, gdal.ErrProfile) {
			return res, usageError{fmt.Errorf("%s: %w", p, err)}
		}
		return res, fmt.Errorf("%s: %w", p, err)
	}
	tst, err := os.Stat(tmp)
	if err != nil {
		return res, err
	}
	res.BytesAfter = tst.Size()

	if head == nil {
		g, err := gdal.Inspect(tmp)
		if err != nil {
			return res, err
		}
		res.Tiles = g.Tiles()
	} else if err := compareWithHead(ctx, r, p, head, abs, tmp, &res); err != nil {
		return res, err
	}
	if res.Status == normRefused && !o.force {
		return res, nil
	}
	same, err := sameFile(abs, tmp)
	switch {
	case err != nil:
		return res, err
	case same:
		res.Status = normUnchanged
	case o.checkOnly:
		res.Status = normChecked
	default:
		if err := os.Chmod(tmp, st.Mode().Perm()); err != nil {
			return res, err
		}
		if err := os.Rename(tmp, abs); err != nil {
			return res, err
		}
		res.Status = normNormalized
	}
	return res, nil
}

// compareWithHead fills res's tile counts from HEAD's version of p and
// sets Status to "refused" (with a Reason) when the normalized file tmp
// would churn tiles whose pixels did not change.
func compareWithHead(ctx context.Context, r *repo.Repo, p string, head *manifest.Manifest, abs, tmp string, res *normalizeResult) error {
	old, err := tempBeside(abs, "head")
	if err != nil {
		return err
	}
	defer os.Remove(old)
	f, err := os.OpenFile(old, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = r.Cat(ctx, "", p, w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: reading HEAD's version: %w", p, err)
	}
	c, err := gdal.TileChurn(old, tmp)
	if errors.Is(err, gdal.ErrGridMismatch) {
		return gridChanged(old, tmp, res)
	}
	if err != nil {
		return err
	}
	res.Tiles, res.ChangedTiles, res.ChurnedTiles = c.Tiles, len(c.Changed), len(c.Churned)
	res.Changed, res.Churned = tileKeys(c.Changed), tileKeys(c.Churned)
	if len(c.Churned) > 0 {
		res.Status = normRefused
		res.Reason = fmt.Sprintf("re-encoding with %s gives new bytes to %d tile(s) whose pixels did not change (%s); pin %s with --profile, or pass --force to accept the churn; the file was left as it was",
			res.Profile, len(c.Churned), listKeys(res.Churned, 8), settingToPin(head, tmp))
	}
	return nil
}

// gridChanged handles HEAD and the normalized file being on different
// tile grids: a change of tile size alone is churn of every tile (refused);
// a change of raster size, bands or type is a content change.
func gridChanged(old, tmp string, res *normalizeResult) error {
	a, err := gdal.Inspect(old)
	if err != nil {
		return err
	}
	b, err := gdal.Inspect(tmp)
	if err != nil {
		return err
	}
	res.Tiles, res.ChangedTiles = b.Tiles(), b.Tiles()
	if a.Width == b.Width && a.Height == b.Height && a.Bands == b.Bands && a.DataType == b.DataType {
		res.Status = normRefused
		res.ChangedTiles = 0
		res.ChurnedTiles = b.Tiles()
		res.Reason = fmt.Sprintf("the tile size changes from %dx%d (HEAD) to %dx%d, so every tile would get new bytes; pin BLOCKSIZE=%d with --profile, or pass --force to accept the churn; the file was left as it was",
			a.TileWidth, a.TileHeight, b.TileWidth, b.TileHeight, a.TileWidth)
	}
	return nil
}

// settingToPin names the profile setting that most likely differs from
// the committed encoding.
func settingToPin(head *manifest.Manifest, tmp string) string {
	now := tiffSummary(tmp)
	var diffs []string
	if c0, c1 := head.SummaryValue("compression"), now["compression"]; c0 != c1 {
		diffs = append(diffs, fmt.Sprintf("COMPRESS=%s (HEAD has %s, the profile gives %s)", compressionOptions[c0], c0, c1))
	}
	if p0, p1 := head.SummaryValue("predictor"), now["predictor"]; p0 != p1 {
		diffs = append(diffs, fmt.Sprintf("PREDICTOR=%s (HEAD has %s, the profile gives %s)", p0, p0, p1))
	}
	if len(diffs) == 0 {
		return "the compression LEVEL (or QUALITY) HEAD's tiles were written with (same codec and predictor, so the level or the zlib/libdeflate build differs)"
	}
	return strings.Join(diffs, " and ")
}

// tiffSummary reads the tiff adapter's summary of the file at path
// (empty if it cannot).
func tiffSummary(path string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return out
	}
	l, err := tiff.Adapter{}.Layout(context.Background(), f, st.Size())
	if err != nil {
		return out
	}
	for _, s := range l.Summary {
		out[s.Name] = s.Value
	}
	return out
}

func tileKeys(ts []gdal.Tile) []string {
	if len(ts) == 0 {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// listKeys joins up to max keys, then "and N more".
func listKeys(keys []string, max int) string {
	if len(keys) <= max {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:max], ", "), len(keys)-max)
}

// tempBeside creates an empty hidden temp file in path's directory.
func tempBeside(path, what string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"."+what+"-*")
	if err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// sameFile reports whether two files have the same bytes.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	sa, err := fa.Stat()
	if err != nil {
		return false, err
	}
	sb, err := fb.Stat()
	if err != nil {
		return false, err
	}
	if sa.Size() != sb.Size() {
		return false, nil
	}
	ra, rb := bufio.NewReaderSize(fa, 1<<20), bufio.NewReaderSize(fb, 1<<20)
	var pa, pb [64 << 10]byte
	for {
		na, ea := io.ReadFull(ra, pa[:])
		nb, eb := io.ReadFull(rb, pb[:])
		if na != nb || !bytes.Equal(pa[:na], pb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == ea, nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil {
			return false, eb
		}
	}
}
