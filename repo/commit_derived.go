package repo

import (
	"context"
	"io"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/repo/internal/derived"
)

// checkDerived checks l's derived segments against what the adapter of
// l.Format regenerates from f (derived.Check).
func (r *Repo) checkDerived(ctx context.Context, l *formats.Layout, f io.ReaderAt, size int64) (map[int64]derived.Hash, error) {
	var d formats.Deriver
	if a := r.formats.ByName(l.Format); a != nil {
		d, _ = a.(formats.Deriver)
	}
	return derived.Check(ctx, d, l, f, size)
}
