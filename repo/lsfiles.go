package repo

import (
	"fmt"
	"sort"
	"time"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// ListedFile is one file a commit tracks, for ls-files: the auditor's
// table of contents of a revision.
type ListedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"` // BLAKE3 of the whole file (a dataset's: the dataset digest)
	Format string `json:"format"`
	Chunks int    `json:"chunks"`
	// Commit is the newest commit, on the first-parent line from the
	// listed one, whose manifest of the file differs from its parent's
	// (or that added it); Date is its author date.
	Commit string    `json:"commit"`
	Date   time.Time `json:"date"`
}

// ListFiles lists the files tracked at rev ("" = HEAD), in path order.
// Only manifest headers are read (a split manifest's root, never its
// shards), and history is walked back only until every file's last
// change is found.
func (r *Repo) ListFiles(rev string) ([]ListedFile, error) {
	c, err := r.git.Resolve(rev)
	if err != nil {
		return nil, err
	}
	blobs, err := r.git.ManifestBlobs(c, ManifestDir)
	if err != nil {
		return nil, err
	}
	out := make([]ListedFile, 0, len(blobs))
	for p, h := range blobs {
		m, chunks, err := r.manifestHeader(h, p)
		if err != nil {
			return nil, err
		}
		out = append(out, ListedFile{Path: p, Size: m.Size, Digest: m.Digest.String(), Format: m.Format, Chunks: chunks})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if err := r.lastChanges(c, blobs, out); err != nil {
		return nil, err
	}
	return out, nil
}

// manifestHeader decodes the header of the manifest blob h of file p and
// counts its chunks, without reading a split manifest's shards.
func (r *Repo) manifestHeader(h gitdb.Hash, p string) (*manifest.Manifest, int, error) {
	b, err := r.git.readText(h, manifestPath(p))
	if err != nil {
		return nil, 0, fmt.Errorf("manifest of %s: %w", p, err)
	}
	if manifest.IsSplit(b) {
		m, n, _, err := manifest.DecodeRoot(b)
		if err != nil {
			return nil, 0, fmt.Errorf("manifest of %s: %w", p, err)
		}
		return m, n, nil
	}
	m, err := manifest.Decode(b)
	if err != nil {
		return nil, 0, fmt.Errorf("manifest of %s: %w", p, err)
	}
	return m, len(m.Chunks), nil
}

// lastChanges fills in each listed file's last change: walking first
// parents from c, a file whose manifest blob in the parent differs (or
// is absent) was last changed by the child.
func (r *Repo) lastChanges(c *gitdb.Commit, blobs map[string]gitdb.Hash, files []ListedFile) error {
	pending := make(map[string]int, len(files))
	for i, f := range files {
		pending[f.Path] = i
	}
	for len(pending) > 0 {
		var parent *gitdb.Commit
		var pb map[string]gitdb.Hash
		if len(c.ParentHashes) > 0 {
			var err error
			if parent, err = r.git.ReadCommit(c.ParentHashes[0]); err != nil {
				return fmt.Errorf("commit %s: parent: %w", c.Hash, err)
			}
			if pb, err = r.git.ManifestBlobs(parent, ManifestDir); err != nil {
				return err
			}
		}
		for p, i := range pending {
			if h, ok := pb[p]; !ok || h != blobs[p] {
				files[i].Commit, files[i].Date = c.Hash.String(), c.Author.When
				delete(pending, p)
			}
		}
		if parent == nil {
			break
		}
		c, blobs = parent, pb
	}
	return nil
}
