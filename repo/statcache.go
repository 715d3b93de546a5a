package repo

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
)

// fileStat is what the stat cache compares: Git's set (size, mtime, ctime,
// inode), in nanoseconds.
type fileStat struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
}

func statOf(fi fs.FileInfo) fileStat {
	s := fileStat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	s.Ctime, s.Ino = ctimeIno(fi)
	return s
}

// cacheEntry records what a file's bytes were when it had a given stat.
type cacheEntry struct {
	fileStat
	Digest hashing.ID `json:"digest"`
	// Layout is the layout blob of the file's bytes, when known; checkout
	// uses it to reuse chunks from the working file.
	Layout hashing.ID `json:"layout,omitzero"`
	// Hashed is when reading started (ns). The entry is trusted only if the
	// file's mtime is more than racyWindow older than that: a change made
	// after we read would then have moved the mtime. Files modified just
	// before being hashed are "racily clean" and simply re-read next time.
	Hashed int64 `json:"hashed"`
	// Manifest is the Git blob hash of the committed manifest that
	// describes these bytes, so commit and status can tell "unchanged"
	// without reading it.
	Manifest string `json:"manifest,omitempty"`
	// Lazy marks a file that is tracked but deliberately not materialised
	// (clone --lazy): its absence is not a deletion.
	Lazy bool `json:"lazy,omitempty"`
}

// racyWindow covers coarse file-system timestamps (FAT: 2 s) where the
// file system's granularity is not known to be fine (see fsWindow).
const racyWindow = int64(2 * time.Second)

// statCache is .git/chunkvc/statcache.json.
type statCache struct {
	mu      sync.Mutex
	path    string
	window  int64                 // racy window for this file system, ns
	Entries map[string]cacheEntry `json:"entries"`
}

func (r *Repo) loadStatCache() *statCache {
	dir, err := r.stateDir()
	c := &statCache{Entries: map[string]cacheEntry{}, window: fsWindow(r.Root)}
	if err != nil {
		return c
	}
	c.path = filepath.Join(dir, "statcache.json")
	if data, err := os.ReadFile(c.path); err == nil {
		var onDisk statCache
		if json.Unmarshal(data, &onDisk) == nil && onDisk.Entries != nil {
			c.Entries = onDisk.Entries
		}
	}
	return c
}

// lookup returns the entry for p if st matches it and it is not racy.
func (c *statCache) lookup(p string, st fileStat) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.Entries[p]
	w := c.window
	if w == 0 {
		w = racyWindow
	}
	if !ok || e.fileStat != st || e.Mtime+w >= e.Hashed {
		return cacheEntry{}, false
	}
	return e, true
}

// layoutOf returns the cached layout of p's bytes when st still matches,
// racy or not: callers verify every chunk they read by hash anyway.
func (c *statCache) layoutOf(p string, st fileStat) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.Entries[p]
	return e, ok && e.fileStat == st
}

func (c *statCache) put(p string, e cacheEntry) {
	c.mu.Lock()
	c.Entries[p] = e
	c.mu.Unlock()
}

func (c *statCache) drop(p string) {
	c.mu.Lock()
	delete(c.Entries, p)
	c.mu.Unlock()
}

// save writes the cache; failures only cost speed next time.
func (c *statCache) save() error {
	if c.path == "" {
		return errors.New("no state directory")
	}
	c.mu.Lock()
	data, err := json.Marshal(c)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return writeFileAtomic(c.path, data)
}

// isLazy reports whether p is a not-yet-materialised file.
func (c *statCache) isLazy(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Entries[p].Lazy
}
