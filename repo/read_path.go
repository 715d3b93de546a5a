package repo

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/local"
)

// DefaultCacheBytes bounds the local read cache unless CHUNKVC_CACHE_BYTES
// says otherwise.
const DefaultCacheBytes = 4 << 30

// readPath is where chunk bytes come from, nearest first: the embedded
// store (chunks of offline commits, or everything when it is the configured
// store), alternates (another repository's embedded store, for clones of a
// local path), the read cache, and finally the configured store, whose
// chunks are then kept in the cache.
type readPath struct {
	local      store.Store   // .git/chunkvc/store
	alternates []store.Store // read-only
	cache      *local.Store  // nil when the configured store is local
	cacheDir   string
	cacheMax   int64
	// cacheUsed is what the cache holds as of the last listing plus what
	// was put since; -1 before the first listing. Each put adds to it and
	// only a cache over its bound is listed again: listing (and stat-ing)
	// every cached object after each download made a checkout of n chunks
	// from a remote store cost n² stats.
	cacheMu   sync.Mutex
	cacheUsed int64
	remote    store.Store
}

func (r *Repo) setupReadPath() error {
	rp := &readPath{remote: r.Store, cacheUsed: -1}
	embedded := filepath.Join(r.gitDir(), "chunkvc", "store")
	if l, ok := r.Store.(*local.Store); ok && l.Root() == embedded {
		rp.local = r.Store
	} else {
		l, err := local.Open(embedded)
		if err != nil {
			return err
		}
		rp.local = l
	}
	if data, err := os.ReadFile(filepath.Join(r.gitDir(), "chunkvc", "alternates")); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			if p := strings.TrimSpace(sc.Text()); p != "" && !strings.HasPrefix(p, "#") {
				if a, err := local.Open(p); err == nil {
					rp.alternates = append(rp.alternates, a)
				}
			}
		}
	}
	if _, isLocal := r.Store.(*local.Store); !isLocal {
		rp.cacheDir = filepath.Join(r.gitDir(), "chunkvc", "cache")
		c, err := local.Open(rp.cacheDir)
		if err != nil {
			return err
		}
		rp.cache = c
		rp.cacheMax = DefaultCacheBytes
		if v, err := strconv.ParseInt(os.Getenv("CHUNKVC_CACHE_BYTES"), 10, 64); err == nil && v >= 0 {
			rp.cacheMax = v
		}
	}
	r.read = rp
	return nil
}

// ReadStats counts where chunks came from.
type readSource int

const (
	fromLocal readSource = iota
	fromCache
	fromRemote
)

// get returns the verified bytes of object id and where they came from.
func (rp *readPath) get(ctx context.Context, id hashing.ID) ([]byte, readSource, error) {
	near := append([]store.Store{rp.local}, rp.alternates...)
	if rp.local == rp.remote {
		near = rp.alternates
	}
	for _, s := range near {
		if b, err := store.ReadAll(ctx, s, id); err == nil {
			return b, fromLocal, nil
		}
	}
	if rp.cache != nil {
		if b, err := store.ReadAll(ctx, rp.cache, id); err == nil {
			rp.touch(id)
			return b, fromCache, nil
		}
	}
	b, err := store.ReadAll(ctx, rp.remote, id)
	if err != nil {
		return nil, fromRemote, err
	}
	if rp.cache != nil && int64(len(b)) <= rp.cacheMax {
		if err := rp.cache.Put(ctx, id, b); err == nil {
			rp.added(ctx, int64(len(b)))
		}
	}
	return b, fromRemote, nil
}

// touch marks a cache object as recently used (the cache is LRU by mtime).
func (rp *readPath) touch(id hashing.ID) {
	h := id.String()
	now := time.Now()
	_ = os.Chtimes(filepath.Join(rp.cacheDir, h[:2], h), now, now)
}

// added counts n bytes put into the cache and evicts when that takes the
// cache over its bound (or when its size is not known yet).
func (rp *readPath) added(ctx context.Context, n int64) {
	rp.cacheMu.Lock()
	defer rp.cacheMu.Unlock()
	if rp.cacheUsed >= 0 {
		rp.cacheUsed += n
		if rp.cacheUsed <= rp.cacheMax {
			return
		}
	}
	rp.cacheUsed = rp.evict(ctx)
}

// evict deletes least-recently-used cache objects until the cache fits,
// and returns what it then holds. rp.cacheMu is held.
func (rp *readPath) evict(ctx context.Context) int64 {
	type ent struct {
		id    hashing.ID
		size  int64
		mtime time.Time
	}
	var all []ent
	var total int64
	_ = rp.cache.List(ctx, func(i store.Info) error {
		total += i.Size
		h := i.ID.String()
		fi, err := os.Stat(filepath.Join(rp.cacheDir, h[:2], h))
		if err == nil {
			all = append(all, ent{i.ID, i.Size, fi.ModTime()})
		}
		return nil
	})
	if total <= rp.cacheMax {
		return total
	}
	// Down to nine tenths, so that the next downloads do not each list
	// the cache again.
	low := rp.cacheMax - rp.cacheMax/10
	sort.Slice(all, func(i, j int) bool { return all[i].mtime.Before(all[j].mtime) })
	for _, e := range all {
		if total <= low {
			break
		}
		if rp.cache.Delete(ctx, e.id) == nil {
			total -= e.size
		}
	}
	return total
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
