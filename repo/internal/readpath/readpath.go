package readpath

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/local"
)

// Path is a repository's read path (see the package doc).
type Path struct {
	Local      store.Store   // .git/chunkvc/store
	Alternates []store.Store // read-only
	Cache      *local.Store  // nil when the configured store is local
	Remote     store.Store
	cacheDir   string
	cacheMax   int64
	// cacheUsed is what the cache holds as of the last listing plus what
	// was put since; -1 before the first listing. Each put adds to it and
	// only a cache over its bound is listed again: listing (and stat-ing)
	// every cached object after each download made a checkout of n chunks
	// from a remote store cost n² stats.
	cacheMu   sync.Mutex
	cacheUsed int64
}

// Open sets up the read path of the repository whose git directory is
// gitDir and whose configured store is remote; the read cache, when there
// is one, holds at most cacheMax bytes.
func Open(gitDir string, remote store.Store, cacheMax int64) (*Path, error) {
	p := &Path{Remote: remote, cacheUsed: -1}
	embedded := filepath.Join(gitDir, "chunkvc", "store")
	if l, ok := remote.(*local.Store); ok && l.Root() == embedded {
		p.Local = remote
	} else {
		l, err := local.Open(embedded)
		if err != nil {
			return nil, err
		}
		p.Local = l
	}
	if data, err := os.ReadFile(filepath.Join(gitDir, "chunkvc", "alternates")); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); isAlternate(line) {
				if a, err := local.Open(line); err == nil {
					p.Alternates = append(p.Alternates, a)
				}
			}
		}
	}
	if _, isLocal := remote.(*local.Store); !isLocal {
		p.cacheDir = filepath.Join(gitDir, "chunkvc", "cache")
		c, err := local.Open(p.cacheDir)
		if err != nil {
			return nil, err
		}
		p.Cache = c
		p.cacheMax = cacheMax
	}
	return p, nil
}

// isAlternate reports whether a line of the alternates file names a store
// to read: the absolute path of an existing directory. Opening anything
// else as a local store would make it: a URL such as gs://b/p, or a
// relative path, became folders under whatever directory chunkvc ran in,
// and an empty store read in its place.
func isAlternate(line string) bool {
	if line == "" || strings.HasPrefix(line, "#") || !filepath.IsAbs(line) {
		return false
	}
	fi, err := os.Stat(line)
	return err == nil && fi.IsDir()
}

// Source says where Get found a chunk.
type Source int

const (
	FromLocal  Source = iota // the embedded store or an alternate
	FromCache                // the read cache
	FromRemote               // the configured store
)

// Near returns the stores read before the cache, nearest first: the
// embedded store unless it is the configured one, then the alternates.
// The slice is the caller's.
func (p *Path) Near() []store.Store {
	if p.Local == p.Remote {
		return slices.Clone(p.Alternates)
	}
	return append([]store.Store{p.Local}, p.Alternates...)
}

// Get returns the verified bytes of object id and where they came from.
func (p *Path) Get(ctx context.Context, id hashing.ID) ([]byte, Source, error) {
	for _, s := range p.Near() {
		if b, err := store.ReadAll(ctx, s, id); err == nil {
			return b, FromLocal, nil
		}
	}
	if p.Cache != nil {
		if b, err := store.ReadAll(ctx, p.Cache, id); err == nil {
			p.touch(id)
			return b, FromCache, nil
		}
	}
	b, err := store.ReadAll(ctx, p.Remote, id)
	if err != nil {
		return nil, FromRemote, err
	}
	if p.Cache != nil && int64(len(b)) <= p.cacheMax {
		if err := p.Cache.Put(ctx, id, b); err == nil {
			p.added(ctx, int64(len(b)))
		}
	}
	return b, FromRemote, nil
}

// touch marks a cache object as recently used (the cache is LRU by mtime).
func (p *Path) touch(id hashing.ID) {
	h := id.String()
	now := time.Now()
	_ = os.Chtimes(filepath.Join(p.cacheDir, h[:2], h), now, now)
}

// added counts n bytes put into the cache and evicts when that takes the
// cache over its bound (or when its size is not known yet).
func (p *Path) added(ctx context.Context, n int64) {
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if p.cacheUsed >= 0 {
		p.cacheUsed += n
		if p.cacheUsed <= p.cacheMax {
			return
		}
	}
	p.cacheUsed = p.evict(ctx)
}

// evict deletes least-recently-used cache objects until the cache fits,
// and returns what it then holds. p.cacheMu is held.
func (p *Path) evict(ctx context.Context) int64 {
	type ent struct {
		id    hashing.ID
		size  int64
		mtime time.Time
	}
	var all []ent
	var total int64
	_ = p.Cache.List(ctx, func(i store.Info) error {
		total += i.Size
		h := i.ID.String()
		fi, err := os.Stat(filepath.Join(p.cacheDir, h[:2], h))
		if err == nil {
			all = append(all, ent{i.ID, i.Size, fi.ModTime()})
		}
		return nil
	})
	if total <= p.cacheMax {
		return total
	}
	// Down to nine tenths, so that the next downloads do not each list
	// the cache again.
	low := p.cacheMax - p.cacheMax/10
	sort.Slice(all, func(i, j int) bool { return all[i].mtime.Before(all[j].mtime) })
	for _, e := range all {
		if total <= low {
			break
		}
		if p.Cache.Delete(ctx, e.id) == nil {
			total -= e.size
		}
	}
	return total
}
