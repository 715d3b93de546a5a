package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/repo"
)

type checkoutOptions struct {
	force   bool
	bbox    string
	bboxCRS string
}

func newCheckoutCmd(g *globalOptions) *cobra.Command {
	var o checkoutOptions
	c := &cobra.Command{
		Use:   "checkout [REV] [--bbox minx,miny,maxx,maxy [--bbox-crs EPSG:N]] [-- PATH...]",
		Short: "Write tracked files as recorded at REV into the work tree",
		Long: `Write the tracked files as recorded at REV (default HEAD) into the work tree,
fetching only chunks the working files do not already hold. HEAD does not
move (use git switch, then chunkvc checkout). Every chunk and every whole
file is verified before it is renamed into place, so a file written anew is
never half-written or wrong under its real name.

A large working file (8 MiB or more, one name only) that differs from REV's
version in a few pieces at the same offsets (an edit in place, rows
appended) is patched instead: only those pieces are written, so the cost
follows the tiles, not the file. Their old bytes go first into an undo
journal (.git/chunkvc/patch). The patched file's digest is checked before
the journal is dropped: the blocks the patch wrote are read, the others are
taken as the version the file was, on the stat cache's word (as commit
does for an unchanged file). If the checkout is killed half-way, the next
chunkvc command puts the old bytes back.

A working file whose bytes are not stored (uncommitted changes) is not
overwritten unless --force is given; that refusal comes before anything is
written.

A file that cannot be written (a manifest that does not decode, a path
through a symbolic link, a chunk no store has) does not stop the others:
they are written, and the command then fails listing the ones that were not
(--json: "failed"). Before writing, checkout records the files it is to
write in .git/chunkvc/checkout-unfinished and strikes each off once written,
so a checkout that fails or is killed leaves its unwritten files listed.
While such a file is missing, status shows it as "not-checked-out" and
commit leaves it as HEAD has it instead of recording it as deleted. A later
checkout that writes it takes it off the list.

With --bbox only what meets the box is materialised (coordinates in the
file's CRS, or in --bbox-crs: without GDAL only EPSG:4326 <-> EPSG:3857
is converted):
  tiff        a valid GeoTIFF with every IFD (overviews, masks) but only the
              tiles whose footprint meets the box; the other tiles are sparse
              (offset 0, byte count 0: GDAL reads them as nodata) and take no
              space. status shows the file as "partial" and commit refuses
              it; a later checkout without --bbox replaces it with the whole
              file.
  parquet     no file is written: the chunks of every row group that meets
  flatgeobuf  the box (FlatGeobuf: feature blocks) are read into the local
              read cache, so serve and a later checkout need not fetch them.
Other formats are refused.`,
		RunE: func(c *cobra.Command, args []string) error { return runCheckout(g, o, c, args) },
	}
	c.Flags().BoolVarP(&o.force, "force", "f", false, "overwrite working files even if they hold uncommitted changes")
	c.Flags().StringVar(&o.bbox, "bbox", "", "materialise only what meets `minx,miny,maxx,maxy`")
	c.Flags().StringVar(&o.bboxCRS, "bbox-crs", "", "CRS of --bbox as `EPSG:N` (default: each file's own)")
	addJSON(c, g)
	return c
}

func runCheckout(g *globalOptions, o checkoutOptions, c *cobra.Command, args []string) error {
	rev, paths := "", args
	if dash := c.ArgsLenAtDash(); dash >= 0 {
		if dash > 1 {
			return usageError{fmt.Errorf("checkout takes one REV before --, got %d", dash)}
		}
		if dash == 1 {
			rev = args[0]
		}
		paths = args[dash:]
	} else if len(args) > 0 {
		rev, paths = args[0], args[1:]
	}
	opt := repo.CheckoutOptions{Rev: rev, Force: o.force, Progress: g.progress(), BBoxCRS: o.bboxCRS}
	if o.bbox != "" {
		box, err := geom.Parse(o.bbox)
		if err != nil {
			return usageError{err}
		}
		opt.BBox = &box
	} else if o.bboxCRS != "" {
		return usageError{fmt.Errorf("--bbox-crs needs --bbox")}
	}
	r, err := g.open()
	if err != nil {
		return err
	}
	rel, err := g.relPaths(r, paths)
	if err != nil {
		return err
	}
	opt.Paths = rel
	// A checkout that could not write some files wrote the others: they
	// are reported, then the error that lists the rest.
	res, err := r.Checkout(c.Context(), opt)
	if res == nil {
		return err
	}
	if g.json {
		if perr := g.printJSON(res); perr != nil {
			return perr
		}
		return err
	}
	for _, f := range res.Files {
		switch f.Status {
		case repo.FileUpToDate:
			g.say("up to date %s\n", f.Path)
			continue
		case repo.FilePartial:
			g.say("partial    %s  (%s of %s; %d chunks fetched = %s)\n", f.Path, humanBytes(f.Size), humanBytes(f.FullSize), f.ChunksFetched, humanBytes(f.BytesFetched))
			continue
		case repo.FilePrefetched:
			g.say("prefetched %s  (no file written; %d chunks fetched = %s into the read cache)\n", f.Path, f.ChunksFetched, humanBytes(f.BytesFetched))
			continue
		}
		if f.InPlace {
			g.say("patched    %s  (%s; %s written in place, %d chunks fetched = %s)\n", f.Path, humanBytes(f.Size), humanBytes(f.BytesWritten), f.ChunksFetched, humanBytes(f.BytesFetched))
			continue
		}
		g.say("wrote      %s  (%s; %d chunks reused, %d fetched = %s)\n", f.Path, humanBytes(f.Size), f.ChunksReused, f.ChunksFetched, humanBytes(f.BytesFetched))
	}
	return err
}
