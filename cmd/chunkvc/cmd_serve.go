package main

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
	"github.com/chunkvc/chunkvc/serve"
)

type serveOptions struct {
	addr    string
	token   string
	jsonLog bool
	memMB   int64
	fetches int
}

func newServeCmd(g *globalOptions) *cobra.Command {
	var o serveOptions
	c := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--token T] [--json-log]",
		Short: "Serve every version of every tracked file over HTTP, with Range",
		Long: `Serve tracked files over HTTP/1.1: GET or HEAD /<rev>/<path> for any branch,
tag or commit (a rev with "/" such as feature/x works: the longest prefix of
the URL path that is a revision naming a tracked file wins). Bytes are
assembled on demand from the layout and the chunks, so a lazy clone fetches
only the chunks a reader touches; every chunk is hash-verified before any of
its bytes are sent. Range (single, multiple, suffix, open-ended), ETag (the
file's BLAKE3 digest), If-None-Match and If-Range are supported, so GDAL's
/vsicurl/ and Parquet range readers work. Ranges past the end, and bytes=-0,
are left out; a GET with none left is answered 416 (Content-Range:
bytes */SIZE), as RFC 9110 says.

Files Git tracks itself at that revision (a lake's _manifest.json, a
README; up to 64 MiB) are served too, with their Git blob id as ETag, so
a reader can pin a whole snapshot over HTTP.

  gdalinfo /vsicurl/http://127.0.0.1:8080/main/dem.tif

A tracked dataset (a Zarr store) answers /<rev>/<dir>/<member>: metadata
documents and other listed members from its layout, chunk files from the
store, each with its chunk ID as ETag; a chunk the revision lacks (the
fill value), the directory itself and any path that is no member are 404,
as Zarr readers expect. Directories are not listed: readers use the
consolidated .zmetadata, or probe .zgroup, .zarray and .zattrs.

  gdalinfo 'ZARR:"/vsicurl/http://127.0.0.1:8080/v1/cube.zarr"'
  xarray.open_zarr("http://127.0.0.1:8080/v1/cube.zarr")

GET /review/A..B returns the review page of A..B, as diff A B --format html
writes it. Previews of JPEG and WebP rasters need GDAL: the plain binary
asks chunkvc-gdal for the page when it is installed (one run per page,
stopped after 5 minutes); without it those rasters get a warning.

GET /debug/stats returns JSON counters: requests, bytes served, chunks and
bytes fetched from the store. Reading a FlatGeobuf's spatial index (which is
regenerated, not stored) first assembles the whole file once.

The server listens on loopback unless told otherwise; binding any other
address requires --token (or CHUNKVC_SERVE_TOKEN), which clients send as
"Authorization: Bearer T" or ?token=T. Interrupt (Ctrl-C) stops it
gracefully.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error { return runServe(g, o, c) },
	}
	c.Flags().StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one)")
	c.Flags().StringVar(&o.token, "token", "", "require this bearer `TOKEN` (default $CHUNKVC_SERVE_TOKEN)")
	c.Flags().BoolVar(&o.jsonLog, "json-log", false, "log one JSON object per request on stderr")
	c.Flags().Int64Var(&o.memMB, "memory", repo.DefaultChunkMemory>>20, "keep up to `MiB` of recently used chunks in memory")
	c.Flags().IntVar(&o.fetches, "fetches", repo.DefaultFetchLimit, "at most `N` chunk reads at once")
	return c
}

func runServe(g *globalOptions, o serveOptions, c *cobra.Command) error {
	if o.token == "" {
		o.token = os.Getenv("CHUNKVC_SERVE_TOKEN")
	}
	if err := serve.CheckAddr(o.addr, o.token); err != nil {
		return usageError{err}
	}
	r, err := g.open()
	if err != nil {
		return err
	}
	opt := serve.Options{Token: o.token, MemBytes: o.memMB << 20, FetchLimit: o.fetches, Review: reviewPages(r)}
	if o.jsonLog {
		opt.Log = g.stderr
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	// Always printed (also with -q): scripts read the address from here.
	fmt.Fprintf(g.stderr, "chunkvc: serving %s on http://%s/<rev>/<path>\n", r.Root, ln.Addr())
	return serve.New(r, opt).Serve(c.Context(), ln)
}
