package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/store"
)

// SplitRevPath splits "REV:PATH" (PATH alone means HEAD).
func SplitRevPath(s string) (rev, p string) {
	if i := strings.LastIndex(s, ":"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

// Manifest returns the manifest of path p at rev ("" = HEAD).
func (r *Repo) Manifest(rev, p string) (*manifest.Manifest, error) {
	s, err := r.Snapshot(rev)
	if err != nil {
		return nil, err
	}
	m, ok, err := s.Manifest(p)
	if err == nil && !ok {
		err = fmt.Errorf("%s is %w in %s", p, ErrNotTracked, revName(rev))
	}
	return m, err
}

// Cat writes the bytes of p at rev to w, verified chunk by chunk and as a
// whole; p may be a member of a dataset (cube.zarr/t2m/.zarray, a chunk
// file), whose bytes are verified chunk by chunk. Like git cat-file, it writes nothing of a file it cannot give
// whole: the layout is read and every chunk confirmed stored, at its
// length, before the first byte. A chunk whose bytes are damaged shows only
// when it is read; then w has received a prefix, and the error says so.
//
// A version whose chunks gc --expire deleted is an *ExpiredError
// (ErrExpired) saying when and under which window.
func (r *Repo) Cat(ctx context.Context, rev, p string, w io.Writer) (AssembleStats, error) {
	st, err := r.cat(ctx, rev, p, w)
	if errors.Is(err, store.ErrNotFound) {
		if c, cerr := r.git.Resolve(rev); cerr == nil {
			err = (&expiryCheck{r: r, c: c}).explain(ctx, p, err)
		}
	}
	return st, err
}

func (r *Repo) cat(ctx context.Context, rev, p string, w io.Writer) (AssembleStats, error) {
	m, err := r.Manifest(rev, p)
	if errors.Is(err, ErrNotTracked) {
		if st, ok, merr := r.catMember(ctx, rev, p, w); ok || merr != nil {
			return st, merr
		}
	}
	if err != nil {
		return AssembleStats{}, err
	}
	if IsDataset(m) {
		return AssembleStats{}, fmt.Errorf("%s is a dataset (a directory) in %s: name one of its members, such as %s/.zmetadata or %s/zarr.json", p, revName(rev), p, p)
	}
	lay, err := r.layoutFor(ctx, m)
	if err != nil {
		return AssembleStats{}, err
	}
	if lay.HasDerived() {
		return r.catVia(ctx, m, w) // assembled whole before it is written
	}
	if err := r.checkStored(ctx, m, lay); err != nil {
		return AssembleStats{}, err
	}
	st, digest, err := r.stream(ctx, m, lay, w, nil, nil, nil)
	if err == nil && digest != m.Digest {
		err = fmt.Errorf("%s: %w: assembled bytes hash to %s, manifest says %s (the output is wrong)", m.Path, ErrIntegrity, digest, m.Digest)
	}
	return st, err
}

// catVia assembles into a temp file first: derived bytes are regenerated
// from the rest of the file, which a stream cannot offer.
func (r *Repo) catVia(ctx context.Context, m *manifest.Manifest, w io.Writer) (AssembleStats, error) {
	t := r.gitTree()
	defer t.Close()
	f, err := t.Create("chunkvc/cat")
	if err != nil {
		return AssembleStats{}, err
	}
	defer f.Abort()
	st, err := r.assembleFile(ctx, m, f.File, nil, nil)
	if err != nil {
		return st, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return st, err
	}
	_, err = io.Copy(w, f)
	return st, err
}

// checkStored confirms, without reading them, that every chunk lay uses is
// in a store the read path reaches (near ones first, as it reads), at the
// length lay gives it. It costs a lookup per chunk, and for chunks only
// the configured store holds one Confirm (a local store) or a Stat each
// (S3: from its pack indexes, else a request).
func (r *Repo) checkStored(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout) error {
	rp := r.read
	near := rp.Near()
	if rp.Cache != nil {
		near = append(near, rp.Cache)
	}
	seen := make(map[hashing.ID]bool, len(m.Chunks))
	var far []store.Sized
	for _, pc := range lay.All() {
		if !pc.Chunk || seen[pc.ID] {
			continue
		}
		seen[pc.ID] = true
		if !storedIn(ctx, near, pc.ID, pc.Len) {
			far = append(far, store.Sized{ID: pc.ID, Size: pc.Len})
		}
	}
	if c, ok := rp.Remote.(store.Confirmer); ok && c.Confirm(ctx, far) == nil {
		return nil
	}
	// One by one, to name the chunk that is not there.
	key := make(map[hashing.ID]string, len(far))
	for _, c := range m.Chunks {
		if _, ok := key[c.ID]; !ok {
			key[c.ID] = c.Key
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, c := range far {
		g.Go(func() error {
			if err := store.Verify(gctx, rp.Remote, c.ID, c.Size, false); err != nil {
				return fmt.Errorf("%s: chunk %s (%s): %w", m.Path, key[c.ID], c.ID, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// storedIn reports whether one of stores holds id at length n.
func storedIn(ctx context.Context, stores []store.Store, id hashing.ID, n int64) bool {
	for _, s := range stores {
		if info, err := s.Stat(ctx, id); err == nil && info.Size == n {
			return true
		}
	}
	return false
}
