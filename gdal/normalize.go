//go:build gdal

package gdal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airbusgeo/godal"
)

// ErrProfile means a profile entry is malformed or not accepted by GDAL's
// COG driver.
var ErrProfile = errors.New("bad COG profile")

// Normalize rewrites the raster src as a cloud-optimized GeoTIFF at dst
// with GDAL's COG driver and the creation options in profile (KEY=VALUE,
// e.g. COMPRESS=DEFLATE, PREDICTOR=2, BLOCKSIZE=256, LEVEL=6).
//
// Overviews are always regenerated from the full-resolution pixels
// (OVERVIEWS=IGNORE_EXISTING unless the profile says OVERVIEWS=NONE), so
// overviews left stale by an in-place edit are not carried over. The
// output depends only on src's pixels, metadata and the profile: the same
// input gives the same bytes, equal to `gdal_translate -of COG` with the
// same options, and a full-resolution tile whose pixels did not change is
// encoded to the same bytes as before (TileChurn verifies it).
//
// dst is overwritten; on error it is removed. An unknown creation option
// or value is an error wrapping ErrProfile, not a warning.
func Normalize(src, dst string, profile []string) error {
	sw, err := cogSwitches(profile)
	if err != nil {
		return err
	}
	if same, _ := samePath(src, dst); same {
		return fmt.Errorf("normalize %s: source and destination are the same file", src)
	}
	ds, err := open(src)
	if err != nil {
		return err
	}
	defer func() { _ = ds.Close() }() // the source, read-only; out's Close is checked
	var w warnings
	var profErr error
	eh := func(ec godal.ErrorCategory, code int, msg string) error {
		if ec == godal.CE_Warning && strings.Contains(msg, "creation option") {
			profErr = fmt.Errorf("%w: %s", ErrProfile, strings.TrimSpace(msg))
			return profErr
		}
		return w.handler(ec, code, msg)
	}
	out, err := ds.Translate(dst, sw, godal.ErrLogger(eh))
	if err == nil {
		err = out.Close(godal.ErrLogger(eh))
	}
	if err != nil {
		os.Remove(dst)
		if profErr != nil {
			return profErr
		}
		return fmt.Errorf("normalize %s: %w", src, err)
	}
	return nil
}

// cogSwitches turns a profile into gdal_translate switches.
func cogSwitches(profile []string) ([]string, error) {
	sw := []string{"-of", "COG"}
	ovr := false
	for _, p := range profile {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(p, " \t\n") {
			return nil, fmt.Errorf("%w: %q is not KEY=VALUE", ErrProfile, p)
		}
		if strings.EqualFold(k, "OVERVIEWS") {
			switch strings.ToUpper(v) {
			case "IGNORE_EXISTING", "NONE":
				ovr = true
			default:
				return nil, fmt.Errorf("%w: OVERVIEWS=%s would keep overviews made before an edit (stale); use IGNORE_EXISTING (the default) or NONE", ErrProfile, v)
			}
		}
		sw = append(sw, "-co", k+"="+v)
	}
	if !ovr {
		sw = append(sw, "-co", "OVERVIEWS=IGNORE_EXISTING")
	}
	return sw, nil
}

func samePath(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return filepath.Clean(a) == filepath.Clean(b), nil
	}
	return os.SameFile(fa, fb), nil
}
