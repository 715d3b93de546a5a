package manifest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/hashing"
)

// Split manifests (version 2). A file of more than SplitAt chunks is
// described by a root and shards instead of one text, so that Git grows
// with an edit, not with the file:
//
//	root, where the single manifest would be (.chunkvc/manifests/<path>):
//	  chunkvc-manifest 2
//	  path … format … [params …] [fallback …] size … digest … layout …
//	  summary …                       as in version 1
//	  chunks <n>                      every chunk of the file
//	  shards <m> blake3:<64 hex>      the shard files, see ShardsDigest
//
//	shard <name> (.chunkvc/shards/<path>/<name>):
//	  chunkvc-shard 1
//	  path <path>
//	  shard <name>
//	  chunks <k>
//	  <key> <size> <64 hex> [bbox]    version 1 chunk lines, natural key order
//
// Which shard a chunk goes to depends on its key alone (the adapter's
// shard function, or hash buckets): a chunk that changes rewrites its
// shard and the root, and a chunk added elsewhere touches no other shard.
// A shard name is one or more slash-separated words; its file sits under
// the shard folder at that path. No name is a folder of another.

// SplitAt is the chunk count above which a manifest is split.
const SplitAt = 1024

// MaxShardChunks bounds one shard: a shard the adapter's function makes
// larger is divided into hash buckets below its name.
const MaxShardChunks = 2048

// ShardDir is the folder, relative to the work tree root, that holds the
// shards of split manifests: ShardDir/<path>/<shard name>.
const ShardDir = ".chunkvc/shards"

// Part is one shard file of a split manifest.
type Part struct {
	Name string // the shard's name, e.g. "z0/r8/c16"
	Data []byte
}

// IsSplit reports whether data is the root of a split manifest.
func IsSplit(data []byte) bool { return bytes.HasPrefix(data, []byte("chunkvc-manifest 2\n")) }

// EncodeSplit writes m as a root and its shards, sorted by name. shardOf
// names each key's shard (nil: hash buckets, see BucketShards).
func (m *Manifest) EncodeSplit(shardOf func(key string) string) (root []byte, parts []Part, err error) {
	if err := m.validate(); err != nil {
		return nil, nil, err
	}
	if shardOf == nil {
		shardOf = func(string) string { return "" }
	}
	buckets := BucketShards(len(m.Chunks))
	groups := map[string][]int32{} // chunks by index: no copy of 500,000 of them
	for i, c := range m.Chunks {
		n := shardOf(c.Key)
		if checkShardName(n) != nil {
			n = buckets(c.Key) // a name no path may hold: a bucket instead
		}
		groups[n] = append(groups[n], int32(i))
	}
	var big []string
	for n, cs := range groups {
		if len(cs) > MaxShardChunks {
			big = append(big, n)
		}
	}
	for _, n := range big {
		cs := groups[n]
		delete(groups, n)
		sub := BucketShards(len(cs))
		for _, i := range cs {
			k := n + "/" + sub(m.Chunks[i].Key)
			groups[k] = append(groups[k], i)
		}
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		if err := checkShardName(n); err != nil {
			return nil, nil, err
		}
		names = append(names, n)
	}
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		if strings.HasPrefix(names[i], names[i-1]+"/") {
			return nil, nil, fmt.Errorf("%w: shard %q would be a folder of shard %q", ErrInvalid, names[i], names[i-1])
		}
	}
	parts = make([]Part, len(names))
	var cs []Chunk
	// Each text is made in buf and copied out at its length: grown by
	// doubling, the texts of a large file's shards held up to twice their
	// bytes.
	var buf []byte
	for i, n := range names {
		cs = cs[:0]
		for _, at := range groups[n] {
			cs = append(cs, m.Chunks[at])
		}
		buf = appendShard(buf[:0], m.Path, n, cs)
		parts[i] = Part{Name: n, Data: bytes.Clone(buf)}
	}
	root, err = m.encodeRoot(len(parts), ShardsDigest(parts))
	return root, parts, err
}

// encodeRoot is the root text of m.
func (m *Manifest) encodeRoot(shards int, digest hashing.ID) ([]byte, error) {
	head := *m
	head.Chunks = nil
	b, err := head.Encode()
	if err != nil {
		return nil, err
	}
	// Version 1's text of a manifest with no chunks, turned into the root.
	b = bytes.Replace(b, []byte("chunkvc-manifest 1\n"), []byte("chunkvc-manifest 2\n"), 1)
	b = bytes.TrimSuffix(b, []byte("chunks 0\n"))
	b = fmt.Appendf(b, "chunks %d\nshards %d %s\n", len(m.Chunks), shards, digest.Tagged())
	return b, nil
}

// encodeShard is the text of shard name of path's manifest.
func encodeShard(p, name string, chunks []Chunk) []byte { return appendShard(nil, p, name, chunks) }

// appendShard appends encodeShard's text to b.
func appendShard(b []byte, p, name string, chunks []Chunk) []byte {
	b = fmt.Appendf(b, "chunkvc-shard 1\npath %s\nshard %s\nchunks %d\n", p, name, len(chunks))
	sp := spellings{at: map[uint64][2]int{}}
	for _, c := range chunks {
		b = appendChunkLine(b, c, &sp)
	}
	return b
}

// ShardsDigest binds a root to its shard files: the BLAKE3 of every shard
// in name order, each as its name, a newline, its length in decimal, a
// newline and its bytes. parts must be sorted by name.
func ShardsDigest(parts []Part) hashing.ID {
	d := hashing.New() // streamed: the shards of a 500,000-chunk file are 50 MB
	var num []byte
	for _, p := range parts {
		num = strconv.AppendInt(num[:0], int64(len(p.Data)), 10)
		_, _ = d.Write([]byte(p.Name))
		_, _ = d.Write([]byte{'\n'})
		_, _ = d.Write(num)
		_, _ = d.Write([]byte{'\n'})
		_, _ = d.Write(p.Data)
	}
	return d.ID()
}

// DecodeRoot parses the root of a split manifest alone: the manifest
// without its chunks, how many chunks its shards hold, and the shards line
// ("shards <m> blake3:<digest>"), which DecodeSplit checks against them.
func DecodeRoot(root []byte) (m *Manifest, chunks int, shardsLine string, err error) {
	if !IsSplit(root) || len(root) > MaxManifest {
		return nil, 0, "", fmt.Errorf("%w: not a split manifest root", ErrInvalid)
	}
	// The root without its shards line is version 1's text of the file
	// with no chunk lines, which parse knows.
	body, last, ok := cutLastLine(root[len("chunkvc-manifest 2\n"):])
	if !ok || !bytes.HasPrefix(last, []byte("shards ")) {
		return nil, 0, "", fmt.Errorf("%w: root has no shards line", ErrInvalid)
	}
	body, countLine, ok := cutLastLine(body)
	count, err := strconv.Atoi(strings.TrimPrefix(string(countLine), "chunks "))
	if !ok || !bytes.HasPrefix(countLine, []byte("chunks ")) || err != nil || count < 0 {
		return nil, 0, "", fmt.Errorf("%w: root has no chunk count", ErrInvalid)
	}
	m, err = parse(slices.Concat([]byte("chunkvc-manifest 1\n"), body, []byte("chunks 0\n")))
	if err != nil {
		return nil, 0, "", err
	}
	return m, count, string(last), nil
}

// DecodeSplit reads a split manifest from its root and its shards, in any
// order, and accepts only the canonical encoding: the shards the root's
// digest names, each canonical, every key once. It sorts parts by name and
// sets the Data of each part it has decoded to nil: the texts of a large
// manifest take as much memory as its chunks, and go as they are read.
func DecodeSplit(root []byte, parts []Part) (*Manifest, error) {
	m, count, shardsLine, err := DecodeRoot(root)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(parts, func(a, b Part) int { return strings.Compare(a.Name, b.Name) })
	digest := ShardsDigest(parts)
	want := fmt.Sprintf("shards %d %s", len(parts), digest.Tagged())
	if shardsLine != want {
		return nil, fmt.Errorf("%w: %s's shards do not match its root (%q, have %q)", ErrInvalid, m.Path, shardsLine, want)
	}
	// count is checked against the shards below; bounded here by what
	// they could hold.
	total := 0
	for _, p := range parts {
		total += len(p.Data)
	}
	m.Chunks = make([]Chunk, 0, min(count, total/70+1))
	// One parser for every shard: its bboxes are allocated in slabs, and
	// a slab a shard of 64 chunks would waste most of 8,000 times over.
	cp := &chunkParser{coords: map[string]float64{}}
	for i := range parts {
		cs, err := decodeShard(m.Path, parts[i], cp)
		if err != nil {
			return nil, err
		}
		m.Chunks = append(m.Chunks, cs...)
		parts[i].Data = nil
	}
	if len(m.Chunks) != count {
		return nil, fmt.Errorf("%w: %s: root counts %d chunks, shards hold %d", ErrInvalid, m.Path, count, len(m.Chunks))
	}
	slices.SortFunc(m.Chunks, func(a, b Chunk) int { return NaturalCompare(a.Key, b.Key) })
	if err := m.validate(); err != nil { // keys repeated across shards, …
		return nil, err
	}
	again, err := m.encodeRoot(len(parts), digest)
	if err != nil || !bytes.Equal(again, root) {
		return nil, fmt.Errorf("%w: %s: root not in canonical form (line %d)", ErrInvalid, m.Path, firstDiffLine(again, root))
	}
	return m, nil
}

// DecodeShard parses a shard file on its own, its path and name read from
// its header, and checks that it is canonical.
func DecodeShard(data []byte) (path, name string, chunks []Chunk, err error) {
	var head [3]string
	rest := string(data)
	for i, want := range []string{"chunkvc-shard 1", "path ", "shard "} {
		var line string
		var ok bool
		if line, rest, ok = strings.Cut(rest, "\n"); !ok || !strings.HasPrefix(line, want) {
			return "", "", nil, fmt.Errorf("%w: not a shard (line %d)", ErrInvalid, i+1)
		}
		head[i] = strings.TrimPrefix(line, want)
	}
	if err := CheckPath(head[1]); err != nil {
		return "", "", nil, err
	}
	chunks, err = decodeShard(head[1], Part{Name: head[2], Data: data}, &chunkParser{coords: map[string]float64{}})
	return head[1], head[2], chunks, err
}

// decodeShard parses one shard of path p's manifest and checks that it is
// canonical.
func decodeShard(p string, part Part, cp *chunkParser) ([]Chunk, error) {
	if err := checkShardName(part.Name); err != nil {
		return nil, err
	}
	head := fmt.Sprintf("chunkvc-shard 1\npath %s\nshard %s\nchunks ", p, part.Name)
	rest, ok := bytes.CutPrefix(part.Data, []byte(head))
	countText, lines, ok2 := bytes.Cut(rest, []byte("\n"))
	count, err := strconv.Atoi(string(countText))
	if !ok || !ok2 || err != nil || count < 0 || count > len(lines)/70+1 {
		return nil, fmt.Errorf("%w: shard %s of %s: bad header", ErrInvalid, part.Name, p)
	}
	cs := make([]Chunk, 0, count)
	text := string(lines)
	for i := 0; i < count; i++ {
		l, r, ok := strings.Cut(text, "\n")
		if !ok {
			return nil, fmt.Errorf("%w: shard %s of %s: want %d chunk lines, have %d", ErrInvalid, part.Name, p, count, i)
		}
		c, err := cp.parse(l)
		if err != nil {
			return nil, fmt.Errorf("%w: shard %s of %s: %w", ErrInvalid, part.Name, p, err)
		}
		if i > 0 && !NaturalLess(cs[i-1].Key, c.Key) {
			return nil, fmt.Errorf("%w: shard %s of %s: keys %q and %q out of order or repeated", ErrInvalid, part.Name, p, cs[i-1].Key, c.Key)
		}
		cs = append(cs, c)
		text = r
	}
	// The canonical text is as long as the shard's when the shard is
	// canonical: made in room of that size, it is not grown by doubling.
	if again := appendShard(make([]byte, 0, len(part.Data)), p, part.Name, cs); !bytes.Equal(again, part.Data) {
		return nil, fmt.Errorf("%w: shard %s of %s not in canonical form (line %d)", ErrInvalid, part.Name, p, firstDiffLine(again, part.Data))
	}
	ownKeys(cs)
	return cs, nil
}

// ownKeys moves the keys of cs, substrings of their shard's text, into
// one string of their own: kept, they kept the whole text (IDs, sizes and
// boxes spelled out) alive with the manifest, 80 bytes a chunk instead
// of the key's 12 or so.
func ownKeys(cs []Chunk) {
	n := 0
	for _, c := range cs {
		n += len(c.Key)
	}
	var b strings.Builder
	b.Grow(n)
	for _, c := range cs {
		b.WriteString(c.Key)
	}
	all := b.String()
	for i := range cs {
		n := len(cs[i].Key)
		cs[i].Key, all = all[:n], all[n:]
	}
}

// BucketShards is the shard function for keys with no structure to follow:
// the key's BLAKE3, its first hex digits naming one of 16^k buckets, with
// k chosen so that n chunks fill them about 256 at a time. It changes only
// when n crosses a power of 16 times 256.
func BucketShards(n int) func(key string) string {
	digits := 1
	for buckets := 16; n/buckets > 256 && digits < 8; buckets *= 16 {
		digits++
	}
	return func(key string) string {
		id := hashing.Sum([]byte(key))
		return "h" + hex.EncodeToString(id[:4])[:digits]
	}
}

// checkShardName accepts slash-separated words of the characters chunk
// keys use, none "." or "..".
func checkShardName(n string) error {
	if n == "" || len(n) > MaxKeyLen {
		return fmt.Errorf("%w: shard name %q", ErrInvalid, n)
	}
	for _, el := range strings.Split(n, "/") {
		if el == "" || el == "." || el == ".." || !isWord(el) {
			return fmt.Errorf("%w: shard name %q", ErrInvalid, n)
		}
	}
	return nil
}

// ShardPath is the work-tree path of shard name of the file at p.
func ShardPath(p, name string) string { return path.Join(ShardDir, p, name) }

// cutLastLine splits b before its last line (which must end in a newline).
func cutLastLine(b []byte) (before, last []byte, ok bool) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, nil, false
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '\n')
	return b[:i+1], b[i+1 : len(b)-1], true
}
