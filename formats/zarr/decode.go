package zarr

import (
	"errors"

	"github.com/chunkvc/chunkvc/formats/zarr/codec"
)

// What diff --stats needs to read the values of the chunks chunkvc keys:
// their shape, their decoder and the fill value that stands for an
// absent one.

// KeyChunkShape is the shape of the chunks the array's keys name (ChunkKey):
// the inner chunk shape when sharded, else the chunk shape.
func (a *Array) KeyChunkShape() []int64 {
	if a.Sharding != nil {
		return a.Sharding.InnerShape
	}
	return a.ChunkShape
}

// KeyChunkDecoder returns the decoder (package codec) of the stored bytes
// of one keyed chunk: a chunk file, or an inner chunk of a shard. What
// package codec cannot decode is an error matching codec.ErrUnsupported;
// so is a sharded array chunkvc keeps whole (ShardingNote).
func (a *Array) KeyChunkDecoder() (*codec.Pipeline, error) {
	if a.Sharding != nil {
		return a.pipelineOf(a.Sharding.InnerShape, a.Sharding.Codecs)
	}
	if a.ShardingNote != "" {
		return nil, &codec.UnsupportedError{Kind: "codec", Name: "sharding_indexed (" + a.ShardingNote + ")"}
	}
	return a.pipeline()
}

// Fill returns the array's fill value as a number, what an absent chunk
// holds: null and the strings v3 allows for floats are NaN (±Inf for
// "Infinity" and "-Infinity"), except that an integer or boolean array's
// null fill is 0.
func (a *Array) Fill() (float64, error) {
	v, err := fillValue(a.FillValue)
	if err != nil {
		return 0, errors.Join(ErrMetadata, err)
	}
	if v != v { // NaN
		d, err := a.dataType()
		if err == nil && d.Kind != 'f' && d.Kind != 'c' {
			return 0, nil
		}
	}
	return v, nil
}

// dataType parses the array's dtype (v2) or data_type (v3).
func (a *Array) dataType() (codec.DType, error) {
	if a.Version == 2 {
		return codec.ParseV2DType(a.DType)
	}
	return codec.ParseV3DataType(a.DType)
}
