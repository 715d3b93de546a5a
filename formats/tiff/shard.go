package tiff

import (
	"strconv"

	"github.com/chunkvc/chunkvc/formats"
)

var _ formats.Sharder = Adapter{}

// shardSide is the side, in tiles, of the square of tiles one shard of a
// split manifest holds (64 tiles; a strip image's shard holds 64 strips):
// a window of a few tiles touches one to four shards.
const shardSide = 8

// Shard names the shard of a split manifest that key goes to: its image
// (ifd, mask, level) and the block of 8×8 tiles or 64 strips it lies in,
// all planes of a tile together; gaps share one shard.
func (Adapter) Shard(key string) string {
	k, ok := ParseKey(key)
	switch {
	case !ok:
		return "other"
	case k.Gap:
		return "gap"
	}
	var b []byte
	if k.IFD >= 0 {
		b = strconv.AppendInt(append(b, "ifd"...), int64(k.IFD), 10)
		b = append(b, '/')
	}
	if k.Mask {
		b = append(b, "mask/"...)
	}
	if k.Level >= 0 {
		b = strconv.AppendInt(append(b, 'z'), int64(k.Level), 10)
		b = append(b, '/')
	}
	if k.Tiled {
		b = strconv.AppendInt(append(b, 'r'), int64(k.Row/shardSide*shardSide), 10)
		b = strconv.AppendInt(append(b, "/c"...), int64(k.Col/shardSide*shardSide), 10)
	} else {
		b = strconv.AppendInt(append(b, 's'), int64(k.Row/(shardSide*shardSide)*shardSide*shardSide), 10)
	}
	return string(b)
}
