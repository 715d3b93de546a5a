package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/featurediff"
	"github.com/chunkvc/chunkvc/internal/diffview"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

type diffOptions struct {
	format   string
	png      string
	exitCode bool
	features bool
	stats    bool
	output   string
	key      string // --key: feature-level diff by this column
	conflict bool   // --conflicts: what a stopped merge left conflicted
}

// diffFormats are the values --format takes.
var diffFormats = []string{"text", "markdown", "json", "geojson", "html", "png"}

// errDifferences makes --exit-code exit 1 without a message.
var errDifferences = errors.New("differences found")

func newDiffCmd(g *globalOptions) *cobra.Command {
	var o diffOptions
	c := &cobra.Command{
		Use:   "diff [REV [REV]] [-- PATH...]",
		Short: "Show what changed in tracked files, and where on the map",
		Long: `Show what changed in tracked files, chunk by chunk and as map areas.

  chunkvc diff                 working tree versus HEAD
  chunkvc diff REV             working tree versus REV
  chunkvc diff REV1 REV2       REV1 versus REV2 (also REV1..REV2)

Per file: status (added, deleted, modified, renamed), format, chunk counts,
the bytes a commit would move, the changed area as a bbox in the file's CRS
(from the finest level that changed: TIFF overview tiles do not widen it)
and format-aware details (COG levels and re-encodes; Parquet rows, row
groups, columns, schema and geo metadata; FlatGeobuf features, blocks and
header). Working files are chunked and hashed but nothing is stored.

--format json prints one object {"from","to","files":[…]} (fields in the
README); geojson prints the changed chunks' footprints in EPSG:4326 (RFC 7946)
for GitHub or QGIS; markdown prints a table per file for a pull request;
html writes one self-contained review page (maps, previews, tables) that
opens offline; rasters whose tiles chunkvc cannot decode (JPEG, WebP…) are
previewed with GDAL (chunkvc-gdal, when installed). -o FILE writes the output there instead of stdout.
--features (given) also lists the rows and features of GeoParquet, Parquet
and FlatGeobuf files added, removed, modified (old -> new values) or moved
between the files of a lake, paired by --key, a config "key = COLUMN
PATTERN" line or a detected id column, decoding only the changed row
groups and blocks; geojson then writes their before/after geometries,
in EPSG:4326 when built with GDAL (else in the files' own CRS).
--stats (also on with --features given, and for html) decodes each changed
raster tile in both versions: changed pixels and per-band min, max and
mean of new − old; for a Zarr dataset, each changed chunk of an array whose
codecs chunkvc decodes: changed elements and min, max and mean of new − old.
--png draws the file's extent with the changed tiles or blocks outlined, over
a low-resolution rendering of the raster when built with GDAL; --format png
-o FILE writes that picture alone.
--conflicts (no revisions) lists what a stopped merge, cherry-pick or
rebase left conflicted in the data files: per file the chunk keys, their
bboxes and the reasons, as text, markdown, json or geojson (a map of the
conflicted tiles, blocks and chunks for QGIS); --png draws them. It is
empty, and exits 0, when nothing is stopped.

Exit status is 0 whether or not there are differences; with --exit-code it
is 1 when there are (with --conflicts: when anything is conflicted).`,
		Args: argsUsage(cobra.ArbitraryArgs),
		RunE: func(c *cobra.Command, args []string) error {
			revs, paths := args, []string(nil)
			if dash := c.ArgsLenAtDash(); dash >= 0 {
				revs, paths = args[:dash], args[dash:]
			}
			if g.json {
				o.format = "json"
			}
			if o.format == "png" { // the map alone, into -o FILE
				if o.output == "" || o.png != "" {
					return usageError{errors.New("--format png writes the map to -o FILE (--png FILE draws it beside another format)")}
				}
				o.png, o.output = o.output, ""
			}
			if o.conflict {
				return runDiffConflicts(c, g, o, revs, paths)
			}
			o.stats = o.stats || o.format == "html" || c.Flags().Changed("features") && o.features
			rowsAsked := c.Flags().Changed("features") && o.features || o.key != "" || o.format == "html"
			return runDiff(c, g, o, rowsAsked, revs, paths)
		},
	}
	c.Flags().StringVar(&o.format, "format", "text", "output `FORMAT`: "+strings.Join(diffFormats, ", "))
	c.Flags().StringVar(&o.png, "png", "", "also draw the changes into PNG `FILE`")
	c.Flags().BoolVar(&o.exitCode, "exit-code", false, "exit 1 when there are differences")
	c.Flags().BoolVar(&o.features, "features", true, "compare FlatGeobuf files feature by feature; given, list the rows and features that changed (GeoParquet, Parquet, FlatGeobuf)")
	c.Flags().StringVar(&o.key, "key", "", "with --features, pair rows by `COLUMN` (default: the config's key line, else a detected id column)")
	c.Flags().BoolVar(&o.stats, "stats", false, "measure changed raster tiles and Zarr chunks (changed values, min/max/mean of new − old)")
	c.Flags().StringVarP(&o.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	c.Flags().BoolVar(&o.conflict, "conflicts", false, "list what the stopped merge left conflicted: keys, bboxes, reasons")
	addJSON(c, g)
	return c
}

// parseDiffRevs turns 0–2 revision arguments (or one A..B) into from, to.
func parseDiffRevs(revs []string) (from, to string, err error) {
	switch len(revs) {
	case 0:
		return "", "", nil
	case 1:
		if a, b, ok := strings.Cut(revs[0], ".."); ok {
			if strings.HasPrefix(b, ".") {
				return "", "", usageError{fmt.Errorf("%s: symmetric differences (A...B) are not supported", revs[0])}
			}
			if a == "" {
				a = "HEAD"
			}
			if b == "" {
				b = "HEAD"
			}
			return a, b, nil
		}
		return revs[0], "", nil
	case 2:
		if strings.Contains(revs[0], "..") || strings.Contains(revs[1], "..") {
			return "", "", usageError{errors.New("give either REV REV or REV..REV, not both")}
		}
		return revs[0], revs[1], nil
	}
	return "", "", usageError{fmt.Errorf("at most two revisions, got %d (paths go after --)", len(revs))}
}

func runDiff(c *cobra.Command, g *globalOptions, o diffOptions, rows bool, revs, args []string) error {
	valid := false
	for _, f := range diffFormats {
		valid = valid || f == o.format
	}
	if !valid {
		return usageError{fmt.Errorf("--format %q: want one of %s", o.format, strings.Join(diffFormats, ", "))}
	}
	from, to, err := parseDiffRevs(revs)
	if err != nil {
		return err
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
		if p == "." {
			paths[i] = ""
		}
	}
	ctx := c.Context()
	res, err := r.Diff(ctx, repo.DiffOptions{From: from, To: to, Paths: paths, Features: o.features})
	if err != nil {
		return err
	}
	if o.stats {
		if err := r.RasterStats(ctx, res, diffWindows()); err != nil {
			return err
		}
		if err := r.ZarrStats(ctx, res); err != nil {
			return err
		}
	}
	if rows {
		if res.Features, err = r.DiffFeatures(ctx, res, repo.FeatureOptions{Key: o.key}); err != nil {
			return err
		}
	}
	if o.format != "png" {
		if err := writeDiffResult(ctx, g, r, o, res); err != nil {
			return err
		}
	}
	if o.png != "" {
		note, err := writeDiffPNG(ctx, o.png, res, diffRasters(r))
		if err != nil {
			return err
		}
		g.say("--png: %s; wrote %s\n", note, o.png)
	}
	if o.exitCode && len(res.Files) > 0 {
		return silentError{errDifferences}
	}
	return nil
}

// writeDiffResult writes res in o.format to o.output (or stdout).
func writeDiffResult(ctx context.Context, g *globalOptions, r *repo.Repo, o diffOptions, res *diff.Result) error {
	out, done, err := diffOutput(g, o.output)
	if err != nil {
		return err
	}
	switch o.format {
	case "json":
		err = writeJSON(out, res)
	case "html":
		err = writeReview(ctx, r, res, out)
	case "markdown":
		err = diffview.Markdown(out, res)
		if err == nil && res.Features != nil {
			err = featurediff.Markdown(out, res.Features)
		}
	case "geojson":
		var note string
		if res.Features != nil {
			if note, err = diffview.FeaturesToLonLat(res, diffToLonLat()); err == nil {
				err = featurediff.GeoJSON(out, res.Features)
			}
		} else {
			note, err = diffview.GeoJSON(out, res, diffToLonLat())
		}
		if note != "" {
			fmt.Fprintf(g.stderr, "chunkvc: %s\n", note)
		}
	default:
		err = diffview.Text(out, res)
		if err == nil && res.Features != nil {
			err = featurediff.Text(out, res.Features)
		}
	}
	return done(err)
}

// runDiffConflicts is diff --conflicts: the stopped merge's conflicts.
func runDiffConflicts(c *cobra.Command, g *globalOptions, o diffOptions, revs, paths []string) error {
	switch {
	case len(revs) > 0 || len(paths) > 0:
		return usageError{errors.New("--conflicts takes no revisions or paths: it reads the stopped merge")}
	case c.Flags().Changed("features") || o.stats || o.key != "":
		return usageError{errors.New("--conflicts cannot be combined with --features, --stats or --key")}
	case o.format == "html":
		return usageError{errors.New("--conflicts --format html: want one of text, markdown, json, geojson, png")}
	}
	r, err := g.open()
	if err != nil {
		return err
	}
	ctx := c.Context()
	rep, m, err := r.Conflicts(ctx)
	if err != nil {
		return err
	}
	if o.format != "png" {
		if err := writeConflicts(g, o, rep, m); err != nil {
			return err
		}
	}
	if o.png != "" && len(m.Files) == 0 {
		g.say("nothing is conflicted: %s not written\n", o.png)
	}
	if o.png != "" && len(m.Files) > 0 {
		note, err := writeDiffPNG(ctx, o.png, m, diffRasters(r))
		if err != nil {
			return err
		}
		g.say("--png: %s; wrote %s\n", note, o.png)
	}
	if o.exitCode && rep.Count() > 0 {
		return silentError{errDifferences}
	}
	return nil
}

// writeConflicts writes rep (m its map) in o.format to o.output.
func writeConflicts(g *globalOptions, o diffOptions, rep *diff.ConflictReport, m *diff.Result) error {
	out, done, err := diffOutput(g, o.output)
	if err != nil {
		return err
	}
	switch o.format {
	case "json":
		err = writeJSON(out, rep)
	case "markdown":
		err = diffview.ConflictMarkdown(out, rep)
	case "geojson":
		var note string
		note, err = diffview.ConflictGeoJSON(out, rep, m, diffToLonLat())
		if note != "" {
			fmt.Fprintf(g.stderr, "chunkvc: %s\n", note)
		}
	default:
		err = diffview.ConflictText(out, rep)
	}
	return done(err)
}

// writeDiffPNG draws res into the PNG file name (see diffview.PNG).
func writeDiffPNG(ctx context.Context, name string, res *diff.Result, rasters *diffview.Rasters) (string, error) {
	out, err := os.Create(name)
	if err != nil {
		return "", err
	}
	note, err := diffview.PNG(ctx, out, res, rasters)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return note, nil
}

// newDiffTextconvCmd is Git's textconv driver for manifests (hidden; set up
// by chunkvc install): `git diff` then shows one readable line per chunk.
func newDiffTextconvCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "diff-textconv FILE",
		Short:  "Print a manifest as a readable per-chunk listing (Git textconv driver)",
		Hidden: true,
		Args:   argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			return writeTextconv(g.stdout, data)
		},
	}
}

// writeTextconv prints a manifest header in words and one line per chunk:
// key, size, short hash, bbox. Lines depend only on their own chunk, so a
// one-tile edit is a one-line diff. A split manifest's root prints its
// header and counts; each shard prints its chunk lines. Anything else is
// printed as it is.
func writeTextconv(w io.Writer, data []byte) error {
	var b strings.Builder
	if m, err := manifest.Decode(data); err == nil {
		textconvHeader(&b, m)
		fmt.Fprintf(&b, "chunks  %d\n", len(m.Chunks))
		textconvChunks(&b, m.Chunks)
	} else if m, count, shards, err := manifest.DecodeRoot(data); err == nil {
		textconvHeader(&b, m)
		n, _, _ := strings.Cut(strings.TrimPrefix(shards, "shards "), " ")
		fmt.Fprintf(&b, "chunks  %d in %s shards (.chunkvc/shards/%s/)\n", count, n, m.Path)
	} else if p, name, chunks, err := manifest.DecodeShard(data); err == nil {
		fmt.Fprintf(&b, "shard   %s of %s, %d chunks\n", name, p, len(chunks))
		textconvChunks(&b, chunks)
	} else {
		_, err := w.Write(data)
		return err
	}
	_, err := w.Write([]byte(b.String()))
	return err
}

// textconvHeader prints a manifest's header lines in words.
func textconvHeader(b *strings.Builder, m *manifest.Manifest) {
	fmt.Fprintf(b, "file    %s\n", m.Path)
	fmt.Fprintf(b, "format  %s (adapter version %d)\n", m.Format, m.FormatVersion)
	if m.Params != "" {
		fmt.Fprintf(b, "params  %s\n", m.Params)
	}
	if m.Fallback != "" {
		fmt.Fprintf(b, "fallback %s\n", m.Fallback)
	}
	fmt.Fprintf(b, "size    %d (%s)\n", m.Size, diffview.HumanBytes(m.Size))
	fmt.Fprintf(b, "digest  %s\n", m.Digest.Short())
	fmt.Fprintf(b, "layout  %s (%d bytes)\n", m.Layout.Short(), m.LayoutSize)
	for _, f := range m.Summary {
		fmt.Fprintf(b, "%-7s %s\n", f.Name, f.Value)
	}
}

// textconvChunks prints one line per chunk.
func textconvChunks(b *strings.Builder, chunks []manifest.Chunk) {
	for _, ch := range chunks {
		fmt.Fprintf(b, "%-16s %10d  %s", ch.Key, ch.Size, ch.ID.Short())
		if ch.BBox != nil {
			b.WriteString("  " + manifest.FormatBBox(*ch.BBox))
		}
		b.WriteByte('\n')
	}
}
