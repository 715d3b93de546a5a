package zarr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
)

// ErrKey is wrapped by errors about a path that is not a chunk key of an
// array, and about chunk coordinates that have no key.
var ErrKey = errors.New("not a zarr chunk key")

// maxDigits bounds a coordinate's decimal spelling so parsing never
// overflows: KeyGrid sides stay under 2^54, 17 digits.
const maxDigits = 17

// KeyGrid is the grid chunkvc keys an array's chunks by: its chunk grid,
// or for a sharded array the grid of inner chunks (shards × PerShard).
func (a *Array) KeyGrid() []int64 {
	g := a.Grid()
	if a.Sharding != nil {
		for i := range g {
			g[i] *= a.Sharding.PerShard[i]
		}
	}
	return g
}

// ChunkFile spells the store path of the chunk (shard, when sharded) file
// at grid coordinates coords, in the array's key encoding.
func (a *Array) ChunkFile(coords []int64) (string, error) {
	if err := inGrid(coords, a.Grid()); err != nil {
		return "", fmt.Errorf("%w: array %q: %w", ErrKey, a.Path, err)
	}
	var b strings.Builder
	if a.Path != "" {
		b.WriteString(a.Path)
		b.WriteByte('/')
	}
	if a.Keys.Default {
		b.WriteByte('c')
		if len(coords) > 0 {
			b.WriteByte(a.Keys.Separator)
		}
	} else if len(coords) == 0 {
		b.WriteByte('0')
	}
	for i, c := range coords {
		if i > 0 {
			b.WriteByte(a.Keys.Separator)
		}
		b.WriteString(strconv.FormatInt(c, 10))
	}
	return b.String(), nil
}

// ParseChunkFile returns the grid coordinates of the chunk (shard) file at
// store path p, or an error wrapping ErrKey when p is not exactly a chunk
// key of a: outside the array's directory, another encoding, wrong rank,
// a coordinate with a sign, leading zero or out of the grid.
func (a *Array) ParseChunkFile(p string) ([]int64, error) {
	rest := p
	if a.Path != "" {
		var ok bool
		if rest, ok = strings.CutPrefix(p, a.Path+"/"); !ok {
			return nil, fmt.Errorf("%w: %s is not under array %q", ErrKey, p, a.Path)
		}
	}
	sep := string(a.Keys.Separator)
	if a.Keys.Default {
		if rest == "c" && a.Rank() == 0 {
			return []int64{}, nil
		}
		var ok bool
		if rest, ok = strings.CutPrefix(rest, "c"+sep); !ok || a.Rank() == 0 {
			return nil, fmt.Errorf("%w: %s: array %q keys are c%s<coords>", ErrKey, p, a.Path, sep)
		}
	} else if a.Rank() == 0 {
		if rest == "0" {
			return []int64{}, nil
		}
		return nil, fmt.Errorf("%w: %s: the rank-0 array %q has only chunk 0", ErrKey, p, a.Path)
	}
	coords, err := parseCoords(rest, a.Keys.Separator, a.Rank())
	if err == nil {
		err = inGrid(coords, a.Grid())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: array %q: %w", ErrKey, p, a.Path, err)
	}
	return coords, nil
}

// parseCoords reads rank decimal coordinates joined by sep.
func parseCoords(s string, sep byte, rank int) ([]int64, error) {
	coords := make([]int64, 0, rank)
	for len(s) > 0 || len(coords) < rank {
		el := s
		if i := strings.IndexByte(s, sep); i >= 0 {
			el, s = s[:i], s[i+1:]
			if s == "" {
				return nil, errors.New("empty coordinate")
			}
		} else {
			s = ""
		}
		if len(coords) == rank {
			return nil, fmt.Errorf("more than %d coordinates", rank)
		}
		c, ok := parseCoord(el)
		if !ok {
			return nil, fmt.Errorf("coordinate %q is not a decimal without sign or leading zero", el)
		}
		coords = append(coords, c)
	}
	return coords, nil
}

func parseCoord(el string) (int64, bool) {
	if el == "" || len(el) > maxDigits || (len(el) > 1 && el[0] == '0') {
		return 0, false
	}
	var v int64
	for i := 0; i < len(el); i++ {
		if el[i] < '0' || el[i] > '9' {
			return 0, false
		}
		v = v*10 + int64(el[i]-'0')
	}
	return v, true
}

func inGrid(coords, grid []int64) error {
	if len(coords) != len(grid) {
		return fmt.Errorf("%d coordinates for rank %d", len(coords), len(grid))
	}
	for i, c := range coords {
		if c < 0 || c >= grid[i] {
			return fmt.Errorf("coordinate %d = %d is outside the grid %v", i, c, grid)
		}
	}
	return nil
}

// GlobalCoords turns a shard's grid coordinates and an inner chunk's
// coordinates within it into the inner chunk's coordinates in KeyGrid.
func (s *Sharding) GlobalCoords(shard, inner []int64) []int64 {
	g := make([]int64, len(shard))
	for i := range shard {
		g[i] = shard[i]*s.PerShard[i] + inner[i]
	}
	return g
}

// ChunkKey is chunkvc's key for the chunk at coords in KeyGrid (an inner
// chunk's global coordinates when sharded, so that re-sharding keeps its
// inner chunks' keys): the array path, "c", and the coordinates, joined by
// '/' ("t2m/c/3/0/7"; "c/3/0/7" for a root array, "t2m/c" for rank 0),
// whatever the store's own key encoding.
//
// A path that formats.CheckKey would refuse in a key (bytes outside
// printable ASCII, a space or an '@'), or that would take the key past
// formats.MaxKeyLen, is replaced by "~" and 16 hex digits of its BLAKE3
// hash: stable, so the array's keys stay the same from commit to commit.
// Coordinates that alone leave the key over the limit are an error.
func (a *Array) ChunkKey(coords []int64) (string, error) {
	if err := inGrid(coords, a.KeyGrid()); err != nil {
		return "", fmt.Errorf("%w: array %q: %w", ErrKey, a.Path, err)
	}
	return ChunkKey(a.Path, coords)
}

// ChunkKey spells the key of the chunk at coords of the array at path
// arrayPath, without a grid to check coords against; see Array.ChunkKey.
func ChunkKey(arrayPath string, coords []int64) (string, error) {
	tail := make([]byte, 0, 2+len(coords)*4)
	tail = append(tail, 'c')
	for _, c := range coords {
		if c < 0 {
			return "", fmt.Errorf("%w: array %q: negative coordinate %d", ErrKey, arrayPath, c)
		}
		tail = strconv.AppendInt(append(tail, '/'), c, 10)
	}
	prefix := KeyPrefix(arrayPath)
	k := string(tail)
	if prefix != "" {
		k = prefix + "/" + k
	}
	if err := formats.CheckKey(k); err != nil {
		return "", fmt.Errorf("%w: array %q: %w", ErrKey, arrayPath, err)
	}
	return k, nil
}

// keyRoom is what KeyPrefix leaves of formats.MaxKeyLen for "/c" and the
// coordinates of a rank-4 array of up to 7-digit coordinates.
const keyRoom = formats.MaxKeyLen - 2 - 4*8

// KeyPrefix is how an array's path begins its chunks' keys: the path
// itself, or "~" and 16 hex digits of its BLAKE3 hash when the path is
// longer than leaves room for coordinates or holds a byte a key may not.
func KeyPrefix(arrayPath string) string {
	ok := len(arrayPath) <= keyRoom && !strings.HasPrefix(arrayPath, "~")
	for i := 0; i < len(arrayPath) && ok; i++ {
		c := arrayPath[i]
		ok = c > ' ' && c <= '~' && c != '@'
	}
	if ok {
		return arrayPath
	}
	return "~" + hashing.Sum([]byte(arrayPath)).String()[:16]
}

// ParseKey splits a chunkvc chunk key into its array prefix (KeyPrefix)
// and coordinates; ok is false for a key ChunkKey cannot have made.
func ParseKey(key string) (prefix string, coords []int64, ok bool) {
	var rest string
	switch i := strings.LastIndex(key, "/c/"); {
	case key == "c":
		return "", []int64{}, true
	case strings.HasSuffix(key, "/c"):
		prefix = key[:len(key)-2]
		return prefix, []int64{}, prefix != "" && formats.CheckKey(key) == nil
	case strings.HasPrefix(key, "c/") && i < 0:
		rest = key[2:]
	case i >= 0:
		prefix, rest = key[:i], key[i+3:]
		if prefix == "" {
			return "", nil, false
		}
	default:
		return "", nil, false
	}
	for el := range strings.SplitSeq(rest, "/") {
		c, good := parseCoord(el)
		if !good {
			return "", nil, false
		}
		coords = append(coords, c)
	}
	return prefix, coords, formats.CheckKey(key) == nil
}

// Sharder is the formats.Sharder of a dataset's chunk keys: a key goes to
// the block of its array's chunk grid it lies in, about 256 chunks a
// block. Block sides depend on the rank alone (1-D 256; 2-D 16×16; 3-D
// 4×8×8; the last dimensions get the longer sides), so appending along a
// dimension never moves a chunk to another shard, and a one-chunk edit
// rewrites one shard of its own array. The name is the array's key prefix,
// a folder for the block's first coordinate, and the block's other
// coordinates ("t2m/b4/16.32"; a 1-D array's folder groups 256 blocks:
// "x/b65536/65792"; a root array has no prefix): Git rewrites the trees
// on a shard's path at every commit, and a folder per leading block keeps
// each of them small (a million chunks in one folder of 4,000 shards
// would add 160 KB of tree to every commit). A content-keyed piece of a
// chunk ("<key>@<hash>") goes with its chunk. Keys that are not chunk keys
// go to "other"; a prefix a shard name cannot hold makes the manifest fall
// back to hash buckets (manifest.EncodeSplit).
type Sharder struct{}

var _ formats.Sharder = Sharder{}

// Shard names the shard of key.
func (Sharder) Shard(key string) string {
	base, _, _ := strings.Cut(key, "@") // KeyPrefix never holds '@'
	prefix, coords, ok := ParseKey(base)
	if !ok {
		return "other"
	}
	var b []byte
	if prefix != "" {
		b = append(b, prefix...)
		b = append(b, '/')
	}
	b = append(b, 'b')
	bits := BlockBits(len(coords))
	switch len(coords) {
	case 0:
		return string(b)
	case 1:
		const group = 8 // blocks per folder: 2^8
		c := coords[0] >> bits[0] << bits[0]
		b = strconv.AppendInt(b, c>>(bits[0]+group)<<(bits[0]+group), 10)
		b = append(b, '/')
		return string(strconv.AppendInt(b, c, 10))
	}
	for i, c := range coords {
		switch i {
		case 0:
		case 1:
			b = append(b, '/')
		default:
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, c>>bits[i]<<bits[i], 10)
	}
	return string(b)
}

// BlockBits returns, per dimension of a rank-r grid, log2 of the side of a
// Sharder block: 8 bits spread evenly, the remainder to the last dimensions.
func BlockBits(r int) []uint {
	out := make([]uint, r)
	if r == 0 {
		return out
	}
	base, extra := 8/r, 8%r
	for i := range out {
		out[i] = uint(base)
		if i >= r-extra {
			out[i]++
		}
	}
	return out
}
