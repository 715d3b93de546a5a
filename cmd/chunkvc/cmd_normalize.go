package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

// defaultProfile is used when neither --profile nor HEAD says otherwise.
const defaultProfile = "COMPRESS=DEFLATE,PREDICTOR=2,BLOCKSIZE=256"

type normalizeOptions struct {
	profile    string
	profileSet bool // --profile given: it overrides HEAD's encoding
	checkOnly  bool
	force      bool
}

// errChurn marks a refusal: normalizing would change the bytes of tiles
// whose pixels did not change.
var errChurn = errors.New("normalize refused")

func newNormalizeCmd(g *globalOptions) *cobra.Command {
	var o normalizeOptions
	c := &cobra.Command{
		Use:   "normalize [--profile OPTS] [--check-only] [--force] PATH...",
		Short: "Rewrite rasters as COGs with a pinned profile, without churning unchanged tiles",
		Long: `Rewrite each tracked raster PATH as a cloud-optimized GeoTIFF with GDAL's COG
driver, so that an edit costs the edited tiles and nothing else. Overviews
are always rebuilt from the full-resolution pixels (OVERVIEWS=IGNORE_EXISTING),
so overviews left stale by an in-place edit are not kept, and the dead space
an in-place edit leaves in the file is dropped.

The profile is a list of COG creation options: ` + defaultProfile + `,
overridden by the encoding HEAD's version was committed with (compression,
predictor, tile size, no overviews if it had none), overridden by the
KEY=VALUE options given with --profile. So by default a file keeps its
committed encoding.

When the file is in HEAD, the result is compared with HEAD's version tile by
tile: pixels decoded by GDAL and stored bytes. If a tile whose pixels did not
change would be stored as different bytes (another codec, level or zlib build),
normalize refuses, leaves the file as it was and names the tiles and the
setting to pin with --profile; --force accepts the churn. A change of tile
size is refused the same way.

A refusal exits non-zero after the other PATHs are done. --check-only
reports what would happen without touching any file, and exits non-zero
where normalize would refuse. Requires a chunkvc built with GDAL
(-tags gdal).

` + exitHelp,
		Args: argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			o.profileSet = c.Flags().Changed("profile")
			return runNormalize(c.Context(), g, o, args)
		},
	}
	c.Flags().StringVar(&o.profile, "profile", "", "COG creation options `KEY=VALUE,...`, over HEAD's encoding and the default "+defaultProfile)
	c.Flags().BoolVar(&o.checkOnly, "check-only", false, "compare with HEAD and report; do not rewrite the file")
	c.Flags().BoolVar(&o.force, "force", false, "rewrite even if unchanged tiles would get new bytes")
	addJSON(c, g)
	return c
}

// normalizeStatus is what normalize did to one file.
type normalizeStatus string

// Normalize statuses, as --json spells them.
const (
	normNormalized normalizeStatus = "normalized" // rewritten
	normUnchanged  normalizeStatus = "unchanged"  // already normalized
	normChecked    normalizeStatus = "checked"    // --check-only: would be rewritten
	normRefused    normalizeStatus = "refused"
)

// normalizeResult is one file in the report (--json: "files").
type normalizeResult struct {
	Path    string          `json:"path"`
	Status  normalizeStatus `json:"status"`
	Profile string          `json:"profile"`
	// InHead says whether HEAD has the file; tile counts compare with it.
	InHead       bool     `json:"in_head"`
	Tiles        int      `json:"tiles"`
	ChangedTiles int      `json:"changed_tiles"`
	ChurnedTiles int      `json:"churned_tiles"`
	BytesBefore  int64    `json:"bytes_before"`
	BytesAfter   int64    `json:"bytes_after"`
	Changed      []string `json:"changed,omitempty"`
	Churned      []string `json:"churned,omitempty"`
	// Reason says why a file was refused.
	Reason string `json:"reason,omitempty"`
}

func runNormalize(ctx context.Context, g *globalOptions, o normalizeOptions, args []string) error {
	if err := gdalAvailable(); err != nil {
		return err
	}
	if _, err := parseProfile(o.profile); err != nil {
		return usageError{err}
	}
	r, err := g.open()
	if err != nil {
		return err
	}
	paths, err := g.relPaths(r, args)
	if err != nil {
		return err
	}
	for i, p := range paths {
		if !r.Config.IsTracked(p) {
			return usageError{fmt.Errorf("%s is not a tracked file (see chunkvc track)", args[i])}
		}
	}
	var results []normalizeResult
	var refused []error
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		head, err := headManifest(r, p)
		if err != nil {
			return err
		}
		prof, err := resolveProfile(o, head)
		if err != nil {
			return usageError{err}
		}
		g.say("normalizing %s with %s\n", p, strings.Join(prof, ","))
		res, err := normalizeFile(ctx, r, p, head, prof, o)
		if err != nil {
			return err
		}
		results = append(results, res)
		if res.Status == normRefused {
			refused = append(refused, fmt.Errorf("%w: %s: %s", errChurn, res.Path, res.Reason))
		}
		if !g.json {
			printNormalized(g, res)
		}
	}
	if g.json {
		if err := g.printJSON(struct {
			Files []normalizeResult `json:"files"`
		}{results}); err != nil {
			return err
		}
	}
	return errors.Join(refused...)
}

func printNormalized(g *globalOptions, res normalizeResult) {
	cmp := "not in HEAD"
	if res.InHead {
		cmp = fmt.Sprintf("%d changed, %d churned vs HEAD", res.ChangedTiles, res.ChurnedTiles)
	}
	fmt.Fprintf(g.stdout, "%-10s %s: %d tiles, %s (%s → %s)\n", res.Status, res.Path, res.Tiles, cmp,
		humanBytes(res.BytesBefore), humanBytes(res.BytesAfter))
}

// headManifest returns p's manifest in HEAD, or nil when HEAD has no p.
func headManifest(r *repo.Repo, p string) (*manifest.Manifest, error) {
	m, err := r.Manifest("", p)
	switch {
	case errors.Is(err, repo.ErrNoCommits):
		return nil, nil
	case errors.Is(err, repo.ErrNotTracked):
		return nil, nil
	}
	return m, err
}

// parseProfile splits "K=V,K=V" into creation options.
func parseProfile(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--profile: %q is not KEY=VALUE", f)
		}
		out = append(out, strings.ToUpper(k)+"="+v)
	}
	return out, nil
}

// compressionOptions maps the tiff summary's compression names to COG
// COMPRESS values.
var compressionOptions = map[string]string{
	"none": "NONE", "deflate": "DEFLATE", "lzw": "LZW", "zstd": "ZSTD", "jpeg": "JPEG",
	"webp": "WEBP", "lerc": "LERC", "lzma": "LZMA", "packbits": "PACKBITS", "jxl": "JXL",
}

// resolveProfile picks the creation options: the default, with HEAD's
// committed encoding (compression, predictor, tile size, no overviews)
// laid over it, and the keys given with --profile over that.
func resolveProfile(o normalizeOptions, head *manifest.Manifest) ([]string, error) {
	prof, err := parseProfile(defaultProfile)
	if err != nil {
		return nil, err
	}
	set := func(k, v string) {
		for i, p := range prof {
			if strings.HasPrefix(p, k+"=") {
				if v == "" {
					prof = append(prof[:i], prof[i+1:]...)
				} else {
					prof[i] = k + "=" + v
				}
				return
			}
		}
		if v != "" {
			prof = append(prof, k+"="+v)
		}
	}
	if head != nil && head.Format == formats.TIFF {
		comp, hasComp := compressionOptions[head.SummaryValue("compression")]
		if hasComp {
			set("COMPRESS", comp)
		}
		switch pred := head.SummaryValue("predictor"); {
		case pred == "2" || pred == "3":
			set("PREDICTOR", pred)
		case pred == "1" || hasComp && (comp == "JPEG" || comp == "WEBP" || comp == "NONE"):
			set("PREDICTOR", "")
		}
		var w, h int
		if n, _ := fmt.Sscanf(head.SummaryValue("tile"), "%dx%d", &w, &h); n == 2 && w == h && w > 0 {
			set("BLOCKSIZE", fmt.Sprint(w))
		}
		if head.SummaryValue("cog") == "yes" && head.SummaryValue("overviews") == "0" {
			set("OVERVIEWS", "NONE")
		}
	}
	if o.profileSet {
		given, err := parseProfile(o.profile)
		if err != nil {
			return nil, err
		}
		for _, p := range given {
			k, v, _ := strings.Cut(p, "=")
			set(k, v)
		}
	}
	return prof, nil
}
