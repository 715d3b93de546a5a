// Package generic is the fallback adapter: content-defined chunking (the JC
// "jump-condition" CDC of github.com/PlakarKorp/go-cdc-chunkers, a
// Gear-hash FastCDC descendant) over the whole file, or over any byte range
// another adapter hands it (a huge strip, a dead gap).
//
// Parameters are fixed and recorded in every manifest (Params):
// min 16 KiB, normal 64 KiB, max 256 KiB. Changing them changes chunk
// boundaries, so they are part of the adapter version.
//
// Keys are content-keyed ("cdc@", completed with the chunk hash by the
// manifest), so inserting bytes early in a file does not rename every later
// chunk.
package generic

import (
	"context"
	"errors"
	"fmt"
	"io"

	chunkers "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/PlakarKorp/go-cdc-chunkers/chunkers/jc" // registers "jc"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
)

// Chunking parameters (bytes).
const (
	MinSize    = 16 << 10
	NormalSize = 64 << 10
	MaxSize    = 256 << 10
	algorithm  = "jc"
)

// Params is the parameter string written in manifests.
var Params = fmt.Sprintf("cdc=%s min=%d avg=%d max=%d", algorithm, MinSize, NormalSize, MaxSize)

// Adapter chunks any file by content.
type Adapter struct{}

// Name implements formats.Adapter.
func (Adapter) Name() string { return formats.Generic }

// Detect accepts everything.
func (Adapter) Detect([]byte) bool { return true }

// Layout implements formats.Adapter.
func (Adapter) Layout(ctx context.Context, r io.ReaderAt, size int64) (*formats.Layout, error) {
	segs, err := Split(ctx, r, 0, size, "cdc", nil)
	if err != nil {
		return nil, err
	}
	return &formats.Layout{
		Format:   formats.Generic,
		Version:  1,
		Params:   Params,
		Segments: segs,
		Summary:  []formats.Field{{Name: "chunks", Value: fmt.Sprint(len(segs))}},
	}, nil
}

// Split cuts bytes [off, off+n) of r into content-defined chunk segments
// keyed prefix+"@" (content-keyed), each carrying bbox. Ranges no longer
// than MaxSize come back as a single chunk.
func Split(ctx context.Context, r io.ReaderAt, off, n int64, prefix string, bbox *geom.BBox) ([]formats.Segment, error) {
	key := prefix + "@"
	if n <= 0 {
		return nil, nil
	}
	if n <= MaxSize {
		return []formats.Segment{{Off: off, Len: n, Key: key, BBox: bbox}}, nil
	}
	c, err := chunkers.NewChunker(algorithm, io.NewSectionReader(r, off, n), &chunkers.ChunkerOpts{
		MinSize: MinSize, NormalSize: NormalSize, MaxSize: MaxSize,
	})
	if err != nil {
		return nil, fmt.Errorf("cdc: %w", err)
	}
	var segs []formats.Segment
	pos := off
	for i := 0; ; i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b, err := c.Next()
		if len(b) > 0 {
			segs = append(segs, formats.Segment{Off: pos, Len: int64(len(b)), Key: key, BBox: bbox})
			pos += int64(len(b))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cdc at byte %d: %w", pos, err)
		}
	}
	if pos != off+n {
		return nil, fmt.Errorf("cdc: read %d of %d bytes: %w", pos-off, n, io.ErrUnexpectedEOF)
	}
	return segs, nil
}
