package repo

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/chunkvc/chunkvc/manifest"
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
	c, err := r.git.resolve(rev)
	if err != nil {
		return nil, err
	}
	blobs, err := r.git.manifestBlobs(c)
	if err != nil {
		return nil, err
	}
	h, ok := blobs[p]
	if !ok {
		return nil, fmt.Errorf("%s is not a tracked file in %s", p, revName(rev))
	}
	m, _, err := r.git.readManifestBlob(h, p)
	return m, err
}

// Cat writes the bytes of p at rev to w, verified chunk by chunk and as a
// whole. On an integrity error w has received a prefix; the error says so.
func (r *Repo) Cat(ctx context.Context, rev, p string, w io.Writer) (AssembleStats, error) {
	m, err := r.Manifest(rev, p)
	if err != nil {
		return AssembleStats{}, err
	}
	lay, err := r.layoutFor(ctx, m)
	if err != nil {
		return AssembleStats{}, err
	}
	if lay.HasDerived() {
		return r.catVia(ctx, m, w)
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
	defer t.close()
	f, err := t.create("chunkvc/cat")
	if err != nil {
		return AssembleStats{}, err
	}
	defer f.abort()
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
