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
	return r.assemble(ctx, m, w, nil)
}
