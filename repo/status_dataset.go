package repo

import (
	"context"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// checkDataset is checkFile for dataset p (h its manifest in HEAD when
// committed): unchanged when its stamp matches the stat cache's entry for
// h, else its digest decides, from the cache when the stamp matches an
// entry, else by hashing the store (nothing stored).
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
	e, ok := j.cache.Lookup(p, st)
	if !ok {
		ch, err := j.r.chunkDataset(ctx, p, nil, nil, 0, nil)
		if err != nil {
			return err
		}
		e = statcache.Entry{Stat: ch.stat, Digest: ch.m.Digest, Layout: ch.m.Layout, Hashed: ch.hashed}
		st = ch.stat
		j.dirty = true
	}
	old, _, err := j.r.git.readManifestBlob(h, p)
	if err != nil {
		return err
	}
	if e.Digest != old.Digest {
		if !ok {
			j.cache.Put(p, e)
		}
		j.out = append(j.out, StatusEntry{Path: p, Status: FileModified, Size: st.Size})
		return nil
	}
	if e.Manifest != h.String() {
		// Remember which manifest these members match, for next time.
		e.Manifest = h.String()
		j.cache.Put(p, e)
		j.dirty = true
	}
	return nil
}
