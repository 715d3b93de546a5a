// Package serve is chunkvc's HTTP server: GET and HEAD of /<rev>/<path>
// for any version of any tracked file, or of any member of a tracked
// dataset (a Zarr store), with Range, ETag and bearer-token auth,
// assembled on demand from a repository's chunks through
// repo.ChunkReader (every chunk verified before a byte of it is sent).
package serve
