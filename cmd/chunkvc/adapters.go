package main

import (
	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/formats/parquet"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/repo"
)

// nativeAdapters lists the format adapters in detection order. Anything
// none of them claims is chunked by the generic content-defined chunker.
func nativeAdapters() repo.Adapters {
	return repo.Adapters{tiff.Adapter{}, parquet.Adapter{}, flatgeobuf.Adapter{}}
}
