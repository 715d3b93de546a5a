package reach

import (
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// Manifests reads the manifests of commits.
type Manifests interface {
	// Manifests maps each manifest's data path to its blob in commit c
	// (nil c: none).
	Manifests(c *gitdb.Commit) (map[string]gitdb.Hash, error)
	// ReadManifest decodes blob h, checked to describe path p.
	ReadManifest(h gitdb.Hash, p string) (*manifest.Manifest, error)
}

// Use says where a referenced object first appears, for messages.
type Use struct {
	Commit, Path, Key string
	Size              int64
}

// Set holds referenced objects by id.
type Set map[hashing.ID]Use

// Has reports whether id is in s.
func (s Set) Has(id hashing.ID) bool {
	_, ok := s[id]
	return ok
}

// Referenced collects every chunk and layout id the commits' manifests
// name.
func Referenced(g Manifests, commits []*gitdb.Commit) (Set, error) {
	need := Set{}
	seen := map[gitdb.Hash]bool{}
	for _, c := range commits {
		blobs, err := g.Manifests(c)
		if err != nil {
			return nil, err
		}
		for p, h := range blobs {
			if seen[h] {
				continue
			}
			seen[h] = true
			m, err := g.ReadManifest(h, p)
			if err != nil {
				return nil, err
			}
			if _, ok := need[m.Layout]; !ok {
				need[m.Layout] = Use{c.Hash.String(), p, "(layout)", m.LayoutSize}
			}
			for _, ch := range m.Chunks {
				if _, ok := need[ch.ID]; !ok {
					need[ch.ID] = Use{c.Hash.String(), p, ch.Key, ch.Size}
				}
			}
		}
	}
	return need, nil
}
