package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/formats/zarr/codec"
	"github.com/chunkvc/chunkvc/manifest"
)

// ZarrStats fills in the value statistics (diff.ZarrArray Chunks and
// Stats) of each changed array of every modified Zarr dataset in res: the
// changed chunks alone are read, in both versions (stored ones through
// the read path, the working store's from its files), decoded by package
// codec and compared (diff.CompareZarr); an absent chunk is the fill
// value. An array whose codec or data type this build cannot decode adds
// one warning to the file naming the array and the codec, never an error;
// a re-chunked array is not compared.
func (r *Repo) ZarrStats(ctx context.Context, res *diff.Result) error {
	cr := r.NewChunkReader(0, 0)
	for i := range res.Files {
		f := &res.Files[i]
		if f.Zarr == nil || f.Old() == nil || f.New() == nil || !IsDataset(f.Old()) || !IsDataset(f.New()) {
			continue
		}
		if err := r.datasetStats(ctx, cr, f, res.ToCommit == ""); err != nil {
			return fmt.Errorf("stats of %s: %w", f.Path, err)
		}
	}
	return nil
}

// zarrVersion is one version of a dataset as ZarrStats reads it: its
// arrays by key prefix and the stored bytes of a keyed chunk (ok false
// when the version has none: the fill value).
type zarrVersion struct {
	array func(prefix string) *zarr.Array
	chunk func(ctx context.Context, a *zarr.Array, key string, coords []int64) (b []byte, ok bool, err error)
}

// datasetStats measures the changed chunks of one dataset FileDiff.
func (r *Repo) datasetStats(ctx context.Context, cr *ChunkReader, f *diff.FileDiff, work bool) error {
	d := manifest.Diff(f.Old(), f.New())
	old, err := r.storedVersion(ctx, cr, f.Old(), d, true)
	if err != nil {
		return err
	}
	cur, done, err := r.workVersion(f.New(), work)
	if err != nil {
		return err
	}
	defer done()
	if cur.array == nil {
		if cur, err = r.storedVersion(ctx, cr, f.New(), d, false); err != nil {
			return err
		}
	}
	for i := range f.Zarr.Arrays {
		a := &f.Zarr.Arrays[i]
		if a.Change != diff.ChunkChanged {
			continue
		}
		if err := arrayStats(ctx, a, f, old, cur); err != nil {
			return err
		}
	}
	return nil
}

// arrayStats measures the changed chunks of array a.
func arrayStats(ctx context.Context, a *diff.ZarrArray, f *diff.FileDiff, old, cur zarrVersion) error {
	oa, ca := old.array(a.Array), cur.array(a.Array)
	if oa == nil || ca == nil || !slices.Equal(oa.KeyChunkShape(), ca.KeyChunkShape()) {
		return nil // re-chunked: its chunks do not pair up
	}
	dec := [2]*codec.Pipeline{}
	fill := [2]float64{}
	for i, ar := range []*zarr.Array{oa, ca} {
		p, err := ar.KeyChunkDecoder()
		if err == nil {
			fill[i], err = ar.Fill()
		}
		var unsup *codec.UnsupportedError
		if errors.As(err, &unsup) {
			f.Warnings = append(f.Warnings, fmt.Sprintf("stats: array %s not measured: %s", zarrArrayName(a.Array), unsup))
			return nil
		}
		if err != nil {
			return fmt.Errorf("array %s: %w", zarrArrayName(a.Array), err)
		}
		dec[i] = p
	}
	shape := ca.KeyChunkShape()
	for _, c := range changedChunks(f.Changes, a.Array) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var sides [2]diff.ZarrValues
		err := error(nil)
		for i, v := range []zarrVersion{old, cur} {
			ar := []*zarr.Array{oa, ca}[i]
			if err == nil {
				sides[i], err = chunkValues(ctx, v, ar, dec[i], fill[i], c.Key, c.Coords)
			}
		}
		if err == nil {
			err = diff.CompareZarr(&c, shape, sides[0], sides[1])
		}
		var unsup *codec.UnsupportedError
		if errors.As(err, &unsup) {
			f.Warnings = append(f.Warnings, fmt.Sprintf("stats: array %s not measured: %s", zarrArrayName(a.Array), unsup))
			a.Chunks, a.Stats = nil, nil
			return nil
		}
		if err != nil {
			c.Error = "stats: " + err.Error()
		}
		a.Chunks = append(a.Chunks, c)
	}
	a.Stats = diff.TotalZarr(a.Chunks)
	return nil
}

func zarrArrayName(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// changedChunks lists the chunks of the array keyed by prefix that
// changes add, remove or change, once each however many pieces changed,
// in change order.
func changedChunks(changes []diff.ChunkChange, prefix string) []diff.ZarrChunkStats {
	var out []diff.ZarrChunkStats
	seen := map[string]bool{}
	for _, c := range changes {
		base, _, _ := strings.Cut(c.Key, "@")
		p, coords, ok := zarr.ParseKey(base)
		if !ok || p != prefix || seen[base] {
			continue
		}
		seen[base] = true
		out = append(out, diff.ZarrChunkStats{Key: base, Coords: coords, Change: c.Change})
	}
	return out
}

// chunkValues decodes one version of the chunk keyed key (the fill value
// when the version has none) and says how much of it lies inside the
// array's shape.
func chunkValues(ctx context.Context, v zarrVersion, a *zarr.Array, p *codec.Pipeline, fill float64, key string, coords []int64) (diff.ZarrValues, error) {
	shape := a.KeyChunkShape()
	out := diff.ZarrValues{Fill: fill, Valid: make([]int64, len(shape))}
	n := 1
	for i, s := range shape {
		n *= int(s)
		if i < len(coords) && i < len(a.Shape) {
			out.Valid[i] = max(0, min(s, a.Shape[i]-coords[i]*s))
		}
	}
	b, ok, err := v.chunk(ctx, a, key, coords)
	if err != nil {
		return out, err
	}
	if !ok {
		out.Values = make([]float64, n)
		for i := range out.Values {
			out.Values[i] = fill
		}
		return out, nil
	}
	raw, err := p.Decode(b)
	if err == nil {
		out.Values, err = raw.Float64()
	}
	if err != nil {
		return out, fmt.Errorf("chunk %s: %w", key, err)
	}
	return out, nil
}

// storedVersion reads dataset version m from the store: its arrays from
// its layout blob, and a changed chunk by its chunk line in d (the whole
// chunk file, or a shard's inner chunk) or, cut into pieces, from its
// member: the whole chunk file, or its shard's index and the inner
// chunk's range, read through cr (only the pieces they touch are fetched).
func (r *Repo) storedVersion(ctx context.Context, cr *ChunkReader, m *manifest.Manifest, d manifest.Delta, old bool) (zarrVersion, error) {
	ms, err := r.DatasetMembers(ctx, m)
	if err != nil {
		return zarrVersion{}, err
	}
	lines := map[string]*manifest.Chunk{}
	for _, k := range d.Keys {
		c := k.New
		if old {
			c = k.Old
		}
		if c != nil && k.Change != manifest.Unchanged {
			lines[k.Key] = c
		}
	}
	chunk := func(ctx context.Context, a *zarr.Array, key string, coords []int64) ([]byte, bool, error) {
		if c := lines[key]; c != nil {
			b, _, err := r.read.Get(ctx, c.ID)
			return b, err == nil, err
		}
		// Cut into pieces ("key@" lines): read from its member, a chunk
		// file or, in its shard, the index and the inner chunk's range.
		fileCoords, inner := shardCoords(a, coords)
		p, err := a.ChunkFile(fileCoords)
		if err != nil {
			return nil, false, err
		}
		e, err := ms.Lookup(p)
		if errors.Is(err, ErrNoMember) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		mm := MemberManifest(m, e)
		if inner != nil {
			return innerChunk(a, p, ctxReaderAt{ctx, cr.OpenLayout(mm, e.Layout)}, e.Size, inner)
		}
		var buf bytes.Buffer
		if _, _, err := r.stream(ctx, mm, e.Layout, &buf, nil, nil, nil); err != nil {
			return nil, false, err
		}
		return buf.Bytes(), true, nil
	}
	return zarrVersion{array: ms.Array, chunk: chunk}, nil
}

// shardCoords splits the key-grid coords of a chunk of array a into its
// chunk file's coords and, when a is sharded, its inner coords in that
// shard (nil otherwise).
func shardCoords(a *zarr.Array, coords []int64) (fileCoords, inner []int64) {
	s := a.Sharding
	if s == nil {
		return coords, nil
	}
	fileCoords, inner = make([]int64, len(coords)), make([]int64, len(coords))
	for i, c := range coords {
		fileCoords[i], inner[i] = c/s.PerShard[i], c%s.PerShard[i]
	}
	return fileCoords, inner
}

// innerChunk reads the inner chunk at inner coords of shard file p of
// array a (size bytes, read through ra): its index, then its bytes; ok is
// false when the index marks it empty (the fill value).
func innerChunk(a *zarr.Array, p string, ra io.ReaderAt, size int64, inner []int64) ([]byte, bool, error) {
	idx, err := a.Sharding.ReadIndex(p, ra, size)
	if err != nil {
		return nil, false, err
	}
	for _, in := range idx.Chunks {
		if !slices.Equal(in.Coords, inner) {
			continue
		}
		if in.Empty {
			return nil, false, nil
		}
		b := make([]byte, in.Len)
		if _, err := ra.ReadAt(b, in.Off); err != nil {
			return nil, false, fmt.Errorf("%s: inner chunk %v: %w", p, inner, err)
		}
		return b, true, nil
	}
	return nil, false, nil
}

// workVersion reads the working store of dataset m when work is set (a
// zero zarrVersion otherwise): arrays from its metadata, chunks from its
// chunk and shard files.
func (r *Repo) workVersion(m *manifest.Manifest, work bool) (zarrVersion, func(), error) {
	if !work {
		return zarrVersion{}, func() {}, nil
	}
	root, err := os.OpenRoot(r.abs(m.Path))
	if err != nil {
		return zarrVersion{}, nil, err
	}
	st, _, err := zarr.Scan(root.FS())
	if err != nil {
		root.Close()
		return zarrVersion{}, nil, fmt.Errorf("zarr store %s: %w", m.Path, err)
	}
	arrays := map[string]*zarr.Array{}
	for _, n := range st.Nodes {
		if n.Array != nil {
			arrays[zarr.KeyPrefix(n.Array.Path)] = n.Array
		}
	}
	chunk := func(_ context.Context, a *zarr.Array, _ string, coords []int64) ([]byte, bool, error) {
		return workChunk(root, a, coords)
	}
	return zarrVersion{array: func(p string) *zarr.Array { return arrays[p] }, chunk: chunk}, func() { root.Close() }, nil
}

// workChunk reads the chunk at key-grid coords of array a in the working
// store root: its chunk file, or its bytes in its shard file.
func workChunk(root *os.Root, a *zarr.Array, coords []int64) ([]byte, bool, error) {
	fileCoords, inner := shardCoords(a, coords)
	p, err := a.ChunkFile(fileCoords)
	if err != nil {
		return nil, false, err
	}
	if inner == nil {
		b, err := fs.ReadFile(root.FS(), p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return b, err == nil, err
	}
	fh, err := root.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, false, err
	}
	return innerChunk(a, p, fh, fi.Size(), inner)
}
