package repo

import (
	"context"
	"errors"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// checkDataset is checkFile for dataset p (h its manifest in HEAD when
// committed): unchanged when its stamp matches the stat cache's entry for
// h; else the store is hashed (nothing stored; the seen cache spares the
// files that did not change) and its digest decides. A modified dataset's
// entry says which arrays changed and how (diff.ZarrArray).
func (j *statusJob) checkDataset(ctx context.Context, p string, h gitdb.Hash, committed bool, fi fileInfo) error {
	st, err := j.r.statTracked(p, fi)
	if err != nil {
		return err
	}
	if !committed {
		j.out = append(j.out, StatusEntry{Path: p, Status: FileAdded, Size: st.Size})
		return nil
	}
	if j.cache.Unchanged(p, st, h) {
		return nil
	}
	ch, err := j.r.chunkDataset(ctx, p, nil, nil, 0, nil)
	if errors.Is(err, dataset.ErrNotRegular) {
		// What commit refuses, shown as refused (with the member named).
		j.out = append(j.out, StatusEntry{Path: p, Status: FileRefused, Reason: err.Error()})
		return nil
	}
	if err != nil {
		return err
	}
	old, _, err := j.r.git.readManifestBlob(h, p)
	if err != nil {
		return err
	}
	e := statcache.Entry{Stat: ch.stat, Digest: ch.m.Digest, Layout: ch.m.Layout, Hashed: ch.hashed}
	j.dirty = true
	if ch.m.Digest == old.Digest {
		// Remember which manifest these members match, for next time.
		e.Manifest = h.String()
		j.cache.Put(p, e)
		return nil
	}
	j.cache.Put(p, e)
	se := StatusEntry{Path: p, Status: FileModified, Size: ch.m.Size}
	if fd := diff.Compare(old, ch.m); fd.Zarr != nil {
		se.Arrays = fd.Zarr.Arrays
	}
	j.out = append(j.out, se)
	return nil
}
