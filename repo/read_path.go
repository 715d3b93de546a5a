package repo

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"github.com/chunkvc/chunkvc/repo/internal/readpath"
)

// DefaultCacheBytes bounds the local read cache unless CHUNKVC_CACHE_BYTES
// says otherwise.
const DefaultCacheBytes = 4 << 30

// setupReadPath sets up where chunk bytes come from, nearest first
// (package repo/internal/readpath), for the store r.Store.
func (r *Repo) setupReadPath() error {
	cacheMax := int64(DefaultCacheBytes)
	if v, err := strconv.ParseInt(os.Getenv("CHUNKVC_CACHE_BYTES"), 10, 64); err == nil && v >= 0 {
		cacheMax = v
	}
	rp, err := readpath.Open(r.gitDir(), r.Store, cacheMax)
	if err != nil {
		return err
	}
	r.read = rp
	return nil
}

// addAlternate records a read-only store path for this repository.
func (r *Repo) addAlternate(p string) error {
	t := r.gitTree()
	defer t.Close()
	old, err := t.ReadFile("chunkvc/alternates", maxTextFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return t.WriteFile("chunkvc/alternates", append(old, p+"\n"...), true)
}

var errNoChunk = errors.New("chunk is in no store")
