//go:build gdal

package gdal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"
)

// Merges (chunkvc merge): when both sides of a COG merge changed the
// same overview tiles, those tiles are regenerated from the merged
// full-resolution pixels. GDAL's COG driver builds overviews with the
// same machinery as gdaladdo, so building external overviews of a VRT
// over the merged file's full resolution, at the factors the file's
// overviews have, gives exactly the overview pixels a fresh
// `gdal_translate -of COG` would, encoded with the file's compression,
// predictor and tile size, without re-encoding a full-resolution tile.

// OverviewSpec says how a COG's overviews are encoded.
type OverviewSpec struct {
	Compress  string // the COMPRESS creation option: DEFLATE, LZW, ZSTD, NONE…
	Predictor int    // 1 none, 2 horizontal, 3 floating point
	// Resamplings are tried in order; the first whose overviews equal the
	// file's everywhere but in Allowed tiles is kept. Empty: the one the
	// file records, else the COG driver's default, then the others.
	Resamplings []string
	// Allowed are the overview tiles ("z1/r0/c0") the merge regenerates:
	// their pixels may differ from the file's.
	Allowed []string
}

// Regenerated is a file's overviews built anew: Path is a VRT of the
// file's full resolution whose overviews (Path+".ovr") are the new ones.
type Regenerated struct {
	Path       string              `json:"path"`
	Overviews  string              `json:"overviews"` // the .ovr TIFF holding the tiles
	Resampling string              `json:"resampling"`
	Blocks     map[string][2]int64 `json:"blocks"` // tile key -> offset, byte count in Overviews
}

// ErrOverviews means no resampling rebuilds the file's overviews: they
// were not made from its full resolution by GDAL (stale, or another tool).
var ErrOverviews = errors.New("the overviews cannot be rebuilt as they were made")

// resamplings GDAL's COG driver offers, the default (CUBIC) first.
var cogResamplings = []string{"CUBIC", "AVERAGE", "NEAREST", "BILINEAR", "CUBICSPLINE", "LANCZOS", "MODE", "GAUSS"}

// RegenerateOverviews builds the overviews of the COG at src from its
// full-resolution pixels into dir, trying spec's resamplings until one
// gives the file's overview pixels in every tile but spec.Allowed.
func RegenerateOverviews(src, dir string, spec OverviewSpec) (*Regenerated, error) {
	ds, err := open(src)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ds.Close() }() // read-only
	factors, err := overviewFactors(ds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	tries := spec.Resamplings
	if len(tries) == 0 {
		tries = recordedResampling(ds)
	}
	allowed := map[string]bool{}
	for _, k := range spec.Allowed {
		allowed[k] = true
	}
	var why []string
	for i, rs := range tries {
		vrt := filepath.Join(dir, "overviews-"+strconv.Itoa(i)+".vrt")
		reg, err := buildOverviews(ds, vrt, rs, factors, spec)
		if err != nil {
			return nil, err
		}
		diff, err := DifferentOverviewTiles(src, reg)
		if err != nil {
			return nil, err
		}
		bad := ""
		for _, k := range diff {
			if !allowed[k] {
				bad = k
				break
			}
		}
		if bad == "" {
			return reg, nil
		}
		why = append(why, rs+": "+bad)
		os.Remove(reg.Overviews) // GDAL's files of a resampling not taken
		os.Remove(vrt)
	}
	return nil, fmt.Errorf("%w (tiles that differ from GDAL's overviews of the merged pixels, by resampling: %s)", ErrOverviews, strings.Join(why, ", "))
}

// recordedResampling is the resampling src's metadata records, else the
// COG driver's (NEAREST for a paletted image, else CUBIC), then the rest.
func recordedResampling(ds *godal.Dataset) []string {
	first := "CUBIC"
	if b := ds.Bands(); len(b) > 0 && b[0].ColorInterp() == godal.CIPalette {
		first = "NEAREST"
	}
	for _, k := range []string{"OVERVIEW_RESAMPLING", "RESAMPLING"} {
		if v := ds.Metadata(k, godal.Domain("IMAGE_STRUCTURE")); v != "" {
			first = strings.ToUpper(v)
			break
		}
	}
	out := []string{first}
	for _, r := range cogResamplings {
		if r != first {
			out = append(out, r)
		}
	}
	return out
}

// overviewFactors are the decimation factors of ds's overviews, which
// must be powers of two as the COG driver makes them.
func overviewFactors(ds *godal.Dataset) ([]int, error) {
	st := ds.Structure()
	var out []int
	for _, o := range ds.Bands()[0].Overviews() {
		ost := o.Structure()
		f := 1
		for (st.SizeX+f-1)/f > ost.SizeX {
			f *= 2
		}
		if (st.SizeX+f-1)/f != ost.SizeX || (st.SizeY+f-1)/f != ost.SizeY {
			return nil, fmt.Errorf("%w: overview %dx%d of %dx%d is no power-of-two reduction", ErrOverviews, ost.SizeX, ost.SizeY, st.SizeX, st.SizeY)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no overviews", ErrOverviews)
	}
	return out, nil
}

// buildOverviews writes a VRT of ds's full resolution at vrt and builds
// its overviews at factors with resampling rs, encoded as spec says.
func buildOverviews(ds *godal.Dataset, vrt, rs string, factors []int, spec OverviewSpec) (*Regenerated, error) {
	var w warnings
	v, err := ds.Translate(vrt, []string{"-of", "VRT"}, godal.ErrLogger(w.handler))
	if err != nil {
		return nil, fmt.Errorf("vrt of the merged file: %w", err)
	}
	if err := v.Close(godal.ErrLogger(w.handler)); err != nil {
		return nil, err
	}
	if v, err = open(vrt); err != nil {
		return nil, err
	}
	defer func() { _ = v.Close() }()
	alg, err := resamplingAlg(rs)
	if err != nil {
		return nil, err
	}
	st := ds.Structure()
	cfg := []string{
		"COMPRESS_OVERVIEW=" + spec.Compress,
		"GDAL_TIFF_OVR_BLOCKSIZE=" + strconv.Itoa(st.BlockSizeX),
		"INTERLEAVE_OVERVIEW=PIXEL",
	}
	if spec.Predictor > 1 {
		cfg = append(cfg, "PREDICTOR_OVERVIEW="+strconv.Itoa(spec.Predictor))
	}
	if err := v.BuildOverviews(godal.Levels(factors...), godal.Resampling(alg), godal.ConfigOption(cfg...), godal.ErrLogger(w.handler)); err != nil {
		return nil, fmt.Errorf("build overviews (%s): %w", rs, err)
	}
	reg := &Regenerated{Path: vrt, Overviews: vrt + ".ovr", Resampling: rs, Blocks: map[string][2]int64{}}
	for li, o := range v.Bands()[0].Overviews() {
		ost := o.Structure()
		if ost.BlockSizeX != st.BlockSizeX || ost.BlockSizeY != st.BlockSizeY {
			return nil, fmt.Errorf("regenerated overview %d has %dx%d tiles, not %dx%d", li+1, ost.BlockSizeX, ost.BlockSizeY, st.BlockSizeX, st.BlockSizeY)
		}
		for r := 0; r*ost.BlockSizeY < ost.SizeY; r++ {
			for c := 0; c*ost.BlockSizeX < ost.SizeX; c++ {
				sfx := strconv.Itoa(c) + "_" + strconv.Itoa(r)
				off, err1 := strconv.ParseInt(o.Metadata("BLOCK_OFFSET_"+sfx, godal.Domain("TIFF")), 10, 64)
				n, err2 := strconv.ParseInt(o.Metadata("BLOCK_SIZE_"+sfx, godal.Domain("TIFF")), 10, 64)
				if err1 != nil || err2 != nil || n <= 0 {
					return nil, fmt.Errorf("regenerated overview %d tile r%d c%d has no block", li+1, r, c)
				}
				reg.Blocks[ovKey(li+1, r, c)] = [2]int64{off, n}
			}
		}
	}
	return reg, nil
}

func ovKey(level, r, c int) string {
	return "z" + strconv.Itoa(level) + "/r" + strconv.Itoa(r) + "/c" + strconv.Itoa(c)
}

func resamplingAlg(s string) (godal.ResamplingAlg, error) {
	for _, a := range []godal.ResamplingAlg{godal.Nearest, godal.Bilinear, godal.Cubic, godal.CubicSpline, godal.Lanczos, godal.Average, godal.Mode, godal.Gauss} {
		if strings.EqualFold(a.String(), s) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%w: resampling %q unknown", ErrOverviews, s)
}

// DifferentOverviewTiles lists the overview tiles ("z1/r0/c0", in level,
// row, column order) of the COG at path whose pixels, in any band,
// differ from reg's.
func DifferentOverviewTiles(path string, reg *Regenerated) ([]string, error) {
	a, err := open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = a.Close() }()
	// godal names only the file itself as its sibling: the .ovr must be
	// named too, or GDAL shows the VRT's implicit overviews (the source's).
	register()
	var w warnings
	base := filepath.Base(reg.Path)
	b, err := godal.Open(reg.Path, godal.RasterOnly(), godal.SiblingFiles(base, base+".ovr"), godal.ErrLogger(w.handler))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", reg.Path, err)
	}
	defer func() { _ = b.Close() }()
	ba, bb := a.Bands(), b.Bands()
	if len(ba) != len(bb) || len(ba) == 0 {
		return nil, fmt.Errorf("%w: %s has %d bands, the regenerated overviews %d", ErrGridMismatch, path, len(ba), len(bb))
	}
	st := ba[0].Structure()
	n := st.BlockSizeX * st.BlockSizeY
	bufA, viewA, err := pixelBuffer(st.DataType, n)
	if err != nil {
		return nil, err
	}
	bufB, viewB, _ := pixelBuffer(st.DataType, n)
	var out []string
	for li, oa := range ba[0].Overviews() {
		ost := oa.Structure()
		for r := 0; r*st.BlockSizeY < ost.SizeY; r++ {
			for c := 0; c*st.BlockSizeX < ost.SizeX; c++ {
				x, y := c*st.BlockSizeX, r*st.BlockSizeY
				w, h := min(st.BlockSizeX, ost.SizeX-x), min(st.BlockSizeY, ost.SizeY-y)
				size := w * h * len(viewA) / n
				for i := range ba {
					ova, ovb := ba[i].Overviews(), bb[i].Overviews()
					if len(ova) != len(ovb) {
						return nil, fmt.Errorf("%w: %s has %d overviews, the regenerated %d", ErrGridMismatch, path, len(ova), len(ovb))
					}
					if err := errors.Join(ova[li].Read(x, y, bufA, w, h), ovb[li].Read(x, y, bufB, w, h)); err != nil {
						return nil, fmt.Errorf("read overview %d tile r%d c%d band %d: %w", li+1, r, c, i+1, err)
					}
					if !bytes.Equal(viewA[:size], viewB[:size]) {
						out = append(out, ovKey(li+1, r, c))
						break
					}
				}
			}
		}
	}
	return out, nil
}
