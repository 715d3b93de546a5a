package statcache

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/zeebo/blake3"
)

// Stat is what the stat cache compares: Git's set (size, mtime, ctime,
// inode), in nanoseconds.
type Stat struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
}

// StatOf returns the Stat of fi (ctime and inode are zero where the
// platform does not give them).
func StatOf(fi fs.FileInfo) Stat {
	s := Stat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	s.Ctime, s.Ino = ctimeIno(fi)
	return s
}

// Entry records what a file's bytes were when it had a given stat.
type Entry struct {
	Stat
	Digest hashing.ID `json:"digest"`
	// Layout is the layout blob of the file's bytes, when known; checkout
	// uses it to reuse chunks from the working file.
	Layout hashing.ID `json:"layout,omitzero"`
	// Hashed is when reading started (ns). The entry is trusted only if the
	// file's mtime is more than racyWindow older than that: a change made
	// after we read would then have moved the mtime. Files modified just
	// before being hashed are "racily clean" and simply re-read next time.
	// Where times move after a stat (TimesMoveAfterStat), an entry whose
	// stat followed our own last write is set past the window at once.
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
// file system's granularity is not known to be fine (see FSWindow).
const racyWindow = int64(2 * time.Second)

// Cache is the stat cache, .git/chunkvc/statcache (statcache.json
// before): an Entry per work-tree path. It is safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	t      *confine.Tree // .git
	window int64         // racy window for this file system, ns
	// Entries is every entry, by slash path; read it only while no one
	// else uses the cache, and only of a cache Load made. One that
	// LoadIndexed made holds here only what was Put since.
	Entries map[string]Entry `json:"entries"`

	// An indexed cache leaves the file's entries in the file's bytes
	// (body, whose paths and manifests it hands out as substrings),
	// found by path through idx (where each entry begins, in path order)
	// until Save needs them all; next is the entry after the last one
	// found, gone holds the paths dropped since.
	body   string
	mapped bool // body is a mapping of the file (mapFile)
	idx    []int32
	next   int
	gone   map[string]bool
}

const statCacheRel = "chunkvc/statcache"

// Load reads the stat cache from git (.git) for the work tree at root,
// whose file system sets the racy window (FSWindow). A missing or damaged
// cache is an empty one: every file is then simply read again. The JSON
// cache of earlier versions is read when there is no binary one; Save
// replaces it.
func Load(git *confine.Tree, root string) *Cache {
	c := &Cache{Entries: map[string]Entry{}, window: FSWindow(root), t: git}
	defer c.t.Close()
	if data, err := c.t.ReadFile(statCacheRel, confine.NoLimit); err == nil {
		if entries, err := decode(data); err == nil {
			c.Entries = entries
		}
		return c
	}
	// The JSON cache of earlier versions, read once: starting over would
	// re-read every tracked file.
	if data, err := c.t.ReadFile(statCacheRel+".json", confine.NoLimit); err == nil {
		var onDisk Cache
		if json.Unmarshal(data, &onDisk) == nil && onDisk.Entries != nil {
			c.Entries = onDisk.Entries
		}
	}
	return c
}

// Lookup returns the entry for p if st matches it and it is not racy: the
// file's mtime was more than the racy window older than when it was
// hashed, so a later change would have moved its stat.
func (c *Cache) Lookup(p string, st Stat) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.get(p)
	if !ok || !c.trusted(e, st) {
		return Entry{}, false
	}
	return e, true
}

// trusted reports whether e, an entry of c, holds for a file of stat st:
// the same stat, and not racy.
func (c *Cache) trusted(e Entry, st Stat) bool {
	w := c.window
	if w == 0 {
		w = racyWindow
	}
	return e.Stat == st && e.Mtime+w < e.Hashed
}

// Unchanged reports whether Lookup(p, st) finds an entry that records h
// as the manifest of its bytes: the file of stat st holds what h
// describes. It copies nothing out of the cache (status asks it of
// every tracked file).
func (c *Cache) Unchanged(p string, st Stat, h gitdb.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.borrow(p)
	return ok && c.trusted(e, st) && e.DescribedBy(h)
}

// LayoutOf returns p's entry, for the layout of p's bytes, when st still
// matches, racy or not: callers verify every chunk they read by hash
// anyway.
func (c *Cache) LayoutOf(p string, st Stat) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.get(p)
	return e, ok && e.Stat == st
}

// Last returns p's entry whatever the file's stat now: the version the
// file had when chunkvc last hashed or wrote it.
func (c *Cache) Last(p string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.get(p)
}

// Put records e as p's entry.
func (c *Cache) Put(p string, e Entry) {
	c.mu.Lock()
	c.Entries[p] = e
	delete(c.gone, p)
	c.mu.Unlock()
}

// Drop forgets p.
func (c *Cache) Drop(p string) {
	c.mu.Lock()
	delete(c.Entries, p)
	if c.idx != nil {
		if c.gone == nil {
			c.gone = map[string]bool{}
		}
		c.gone[p] = true
	}
	c.mu.Unlock()
}

// Save writes the cache, without fsync, and removes the JSON cache of
// earlier versions. Callers may ignore its error: a cache that is not
// saved costs only speed next time.
func (c *Cache) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.t.Close()
	// Not synced: any whole cache file is a right one (its entries hold
	// for the stats they record), and a torn one fails its checksum.
	if err := c.t.WriteFrom(statCacheRel, c.writeTo, false); err != nil {
		return err
	}
	_ = c.t.Remove(statCacheRel + ".json") // the old format, now migrated
	return nil
}

// statCacheMagic begins the binary cache file (the package doc gives its
// layout). It replaced JSON, which took 140 ms to read for 20,000 files
// (half of status).
const statCacheMagic = "chunkvc-statcache 1\n"

// idLen is the size of a hashing.ID (the assignment below checks it).
const idLen = 32

var _ hashing.ID = [idLen]byte{}

// The bits of an entry's flags byte.
const (
	scLayout = 1 << iota
	scManifest
	scLazy
)

// encode returns the cache file of entries (see the package doc).
func encode(entries map[string]Entry) []byte {
	var buf bytes.Buffer
	_ = encodeTo(&buf, entries) // a bytes.Buffer takes every write
	return buf.Bytes()
}

// encodeTo writes the cache file of entries to w.
func encodeTo(w io.Writer, entries map[string]Entry) error {
	paths := slices.AppendSeq(make([]string, 0, len(entries)), maps.Keys(entries))
	slices.Sort(paths)
	s := newSink(w)
	s.b = append(s.b, statCacheMagic...)
	s.b = binary.AppendUvarint(s.b, uint64(len(paths)))
	for _, p := range paths {
		s.b = appendEntry(s.b, p, entries[p])
		s.spill()
	}
	return s.close()
}

// sinkChunk is how much of a cache file a sink holds before writing it
// out: the file is not built whole in fresh memory, a page fault per 4
// KiB (about 14 µs each where make bench runs; 3 MB for 20,000 files).
const sinkChunk = 64 << 10

// sink writes a cache file to w in chunks, and its checksum after them.
type sink struct {
	b   []byte // not yet written
	w   io.Writer
	sum *blake3.Hasher // hashing.Sum, streamed
	err error
}

func newSink(w io.Writer) *sink {
	return &sink{b: make([]byte, 0, 2*sinkChunk), w: w, sum: blake3.New()}
}

// spill writes b out once it holds a chunk.
func (s *sink) spill() {
	if len(s.b) >= sinkChunk {
		s.copy("")
	}
}

// copy writes b out, then data.
func (s *sink) copy(data string) {
	if s.err == nil && len(s.b) > 0 {
		_, _ = s.sum.Write(s.b) // a hash takes every write
		_, s.err = s.w.Write(s.b)
	}
	if s.err == nil && data != "" {
		_, _ = s.sum.WriteString(data)
		_, s.err = io.WriteString(s.w, data)
	}
	s.b = s.b[:0]
}

// close writes what is left, then the checksum.
func (s *sink) close() error {
	s.copy("")
	if s.err == nil {
		_, s.err = s.w.Write(s.sum.Sum(nil))
	}
	return s.err
}

// appendEntry appends p's entry e to b (see the package doc).
func appendEntry(b []byte, p string, e Entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	b = append(b, p...)
	b = binary.AppendVarint(b, e.Size)
	b = binary.AppendVarint(b, e.Mtime)
	b = binary.AppendVarint(b, e.Ctime)
	b = binary.AppendUvarint(b, e.Ino)
	b = append(b, e.Digest[:]...)
	var flags byte
	if !e.Layout.IsZero() {
		flags |= scLayout
	}
	if e.Manifest != "" {
		flags |= scManifest
	}
	if e.Lazy {
		flags |= scLazy
	}
	b = append(b, flags)
	if flags&scLayout != 0 {
		b = append(b, e.Layout[:]...)
	}
	b = binary.AppendVarint(b, e.Hashed)
	if flags&scManifest != 0 {
		b = binary.AppendUvarint(b, uint64(len(e.Manifest)))
		b = append(b, e.Manifest...)
	}
	return b
}

var errStatCache = errors.New("stat cache damaged")

// checked returns the entries' bytes of a cache file (after the magic,
// before the checksum) if its magic and checksum are right.
func checked(b []byte) ([]byte, bool) {
	if len(b) < len(statCacheMagic)+idLen || string(b[:len(statCacheMagic)]) != statCacheMagic {
		return nil, false
	}
	body := b[:len(b)-idLen]
	if hashing.ID(b[len(body):]) != hashing.Sum(body) {
		return nil, false
	}
	return body[len(statCacheMagic):], true
}

// decode returns the entries of a cache file, or errStatCache if it is
// not one, whole and undamaged. Their paths and manifests share one
// string.
func decode(b []byte) (map[string]Entry, error) {
	body, ok := checked(b)
	if !ok {
		return nil, errStatCache
	}
	n, _ := binary.Uvarint(body)
	out := make(map[string]Entry, min(n, uint64(len(body))))
	if err := scan(string(body), func(p string, _ int, e Entry) { out[p] = e }); err != nil {
		return nil, err
	}
	return out, nil
}

// scan calls each with every entry of body (a checked file's entries),
// its path, the offset of its fields and the entry; errStatCache if a
// field does not parse or bytes are left after the last entry.
func scan(body string, each func(p string, at int, e Entry)) error {
	d := decoder{s: body}
	n := d.uvarint()
	if n > uint64(len(body)) { // every entry takes more than a byte
		return errStatCache
	}
	for range n {
		p := d.str(d.uvarint())
		at := d.pos
		e := d.entry()
		if d.bad {
			return errStatCache
		}
		each(p, at, e)
	}
	if d.bad || d.pos != len(d.s) {
		return errStatCache
	}
	return nil
}

// scanSpans calls each with every entry of body, its path and where its
// bytes (from its path's length to its last field) begin and end.
func scanSpans(body string, each func(p string, start, end int)) error {
	d := decoder{s: body}
	n := d.uvarint()
	if n > uint64(len(body)) {
		return errStatCache
	}
	for range n {
		start := d.pos
		p := d.str(d.uvarint())
		d.entry()
		if d.bad {
			return errStatCache
		}
		each(p, start, d.pos)
	}
	if d.bad || d.pos != len(d.s) {
		return errStatCache
	}
	return nil
}

// decoder reads the stat cache's fields from s, from pos on; a short or
// malformed field sets bad and yields zeros.
type decoder struct {
	s   string
	pos int
	bad bool
}

// entry reads an entry's fields, those after its path.
func (d *decoder) entry() Entry {
	var e Entry
	e.Size, e.Mtime, e.Ctime = d.varint(), d.varint(), d.varint()
	e.Ino = d.uvarint()
	copy(e.Digest[:], d.str(idLen))
	flags := d.str(1)
	if len(flags) == 1 {
		if flags[0]&scLayout != 0 {
			copy(e.Layout[:], d.str(idLen))
		}
		e.Hashed = d.varint()
		if flags[0]&scManifest != 0 {
			e.Manifest = d.str(d.uvarint())
		}
		e.Lazy = flags[0]&scLazy != 0
	}
	return e
}

// uvarint reads encoding/binary's unsigned varint.
func (d *decoder) uvarint() uint64 {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.bad || d.pos >= len(d.s) {
			break
		}
		c := d.s[d.pos]
		d.pos++
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break // past 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	d.bad = true
	return 0
}

// varint reads encoding/binary's signed (zig-zag) varint.
func (d *decoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decoder) str(n uint64) string {
	if d.bad || n > uint64(len(d.s)-d.pos) {
		d.bad = true
		return ""
	}
	v := d.s[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return v
}

// DescribedBy reports whether e records h as the manifest of its bytes,
// without spelling h out on the heap (status asks once per tracked file).
func (e Entry) DescribedBy(h gitdb.Hash) bool {
	var b [2 * len(gitdb.Hash{})]byte
	hex.Encode(b[:], h[:])
	return e.Manifest == string(b[:])
}

// IsLazy reports whether p is a not-yet-materialised file.
func (c *Cache) IsLazy(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.borrow(p)
	return e.Lazy
}
