package parquet

import (
	"strconv"

	"github.com/chunkvc/chunkvc/formats"
)

var _ formats.Sharder = Adapter{}

// Shard names the shard of a split manifest that key goes to: its row
// group (a row group's pages change together when it is rewritten); the
// gaps between column chunks share one.
func (Adapter) Shard(key string) string {
	k, ok := ParseKey(key)
	switch {
	case !ok:
		return "other"
	case k.Gap:
		return "gap"
	}
	return "rg" + strconv.Itoa(k.RowGroup)
}
