package repo

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// ErrPartial means a command refused a file written by checkout --bbox: it
// holds only part of a committed version and must never be committed.
var ErrPartial = errors.New("partial checkout")

// partialEntry records one file written by checkout --bbox, in
// .git/chunkvc/partial.json.
type partialEntry struct {
	Commit  string     `json:"commit"`
	Digest  hashing.ID `json:"digest"` // the full version's digest
	Layout  hashing.ID `json:"layout"` // the full version's layout
	BBox    [4]float64 `json:"bbox"`   // in the file's CRS
	Size    int64      `json:"size"`   // bytes written
	Dropped [][2]int64 `json:"dropped"`
}

type partialFile struct {
	mu      sync.Mutex
	path    string
	Entries map[string]partialEntry `json:"entries"`
}

func (r *Repo) loadPartial() *partialFile {
	pf := &partialFile{Entries: map[string]partialEntry{}}
	dir, err := r.stateDir()
	if err != nil {
		return pf
	}
	pf.path = filepath.Join(dir, "partial.json")
	if data, err := os.ReadFile(pf.path); err == nil {
		var onDisk partialFile
		if json.Unmarshal(data, &onDisk) == nil && onDisk.Entries != nil {
			pf.Entries = onDisk.Entries
		}
	}
	return pf
}

func (pf *partialFile) set(p string, e *partialEntry) error {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if e == nil {
		if _, ok := pf.Entries[p]; !ok {
			return nil
		}
		delete(pf.Entries, p)
	} else {
		pf.Entries[p] = *e
	}
	if pf.path == "" {
		return errors.New("no state directory")
	}
	data, err := json.Marshal(pf)
	if err != nil {
		return err
	}
	return writeFileAtomic(pf.path, data)
}

// IsPartial reports whether the work-tree file p was written by
// checkout --bbox (and not since replaced by a full checkout). Edits to a
// partial file do not make it whole: it stays partial. A partial file that
// was deleted is not partial any more.
func (r *Repo) IsPartial(p string) bool {
	if _, ok := r.loadPartial().Entries[p]; !ok {
		return false
	}
	ok, _ := exists(r.abs(p))
	return ok
}

// PartialError is the error commit returns for a partial file.
func PartialError(p string) error {
	return fmt.Errorf("%w: %s holds only the tiles of a --bbox checkout; run chunkvc checkout -- %s for the whole file (or delete it) before committing", ErrPartial, p, p)
}

// ParseBBox parses "minx,miny,maxx,maxy".
func ParseBBox(s string) ([4]float64, error) {
	var b [4]float64
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return b, fmt.Errorf("bbox %q: want minx,miny,maxx,maxy", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return b, fmt.Errorf("bbox %q: %q is not a number", s, p)
		}
		b[i] = v
	}
	if b[0] > b[2] || b[1] > b[3] {
		return b, fmt.Errorf("bbox %q: min is greater than max", s)
	}
	return b, nil
}

var epsgRE = regexp.MustCompile(`^EPSG:(\d+)$`)

// boxIn returns box (given in crs, "" = the file's CRS) in m's CRS. Without
// GDAL only EPSG:4326 ↔ EPSG:3857 (and identity) are converted.
func boxIn(m *manifest.Manifest, box [4]float64, crs string) ([4]float64, error) {
	crs = strings.ToUpper(strings.TrimSpace(crs))
	fileCRS := strings.ToUpper(m.SummaryValue("crs"))
	if crs == "" || crs == fileCRS {
		return box, nil
	}
	if fileCRS == "" {
		return box, fmt.Errorf("%s: --bbox-crs %s given, but the file's CRS is not known; give the box in the file's coordinates without --bbox-crs", m.Path, crs)
	}
	if !epsgRE.MatchString(crs) {
		return box, fmt.Errorf("--bbox-crs %q: want EPSG:<code>", crs)
	}
	var f func(x, y float64) (float64, float64)
	switch {
	case crs == "EPSG:4326" && fileCRS == "EPSG:3857":
		f = lonLatToWebMercator
	case crs == "EPSG:3857" && fileCRS == "EPSG:4326":
		f = webMercatorToLonLat
	default:
		return box, fmt.Errorf("%s: cannot convert a --bbox from %s to the file's %s in this build (only EPSG:4326 ↔ EPSG:3857); give the box in %s", m.Path, crs, fileCRS, fileCRS)
	}
	// Transform points along every edge; take the envelope.
	out := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	const steps = 16
	for i := 0; i <= steps; i++ {
		t := float64(i) / steps
		for _, p := range [][2]float64{
			{box[0] + t*(box[2]-box[0]), box[1]}, {box[0] + t*(box[2]-box[0]), box[3]},
			{box[0], box[1] + t*(box[3]-box[1])}, {box[2], box[1] + t*(box[3]-box[1])},
		} {
			x, y := f(p[0], p[1])
			out = [4]float64{min(out[0], x), min(out[1], y), max(out[2], x), max(out[3], y)}
		}
	}
	return out, nil
}

const earthRadius = 6378137.0

func lonLatToWebMercator(lon, lat float64) (float64, float64) {
	lat = max(min(lat, 85.05112878), -85.05112878)
	return earthRadius * lon * math.Pi / 180, earthRadius * math.Log(math.Tan(math.Pi/4+lat*math.Pi/360))
}

func webMercatorToLonLat(x, y float64) (float64, float64) {
	return x / earthRadius * 180 / math.Pi, (2*math.Atan(math.Exp(y/earthRadius)) - math.Pi/2) * 180 / math.Pi
}

func intersects(a *[4]float64, b [4]float64) bool {
	return a != nil && a[0] < b[2] && a[2] > b[0] && a[1] < b[3] && a[3] > b[1]
}

// wantedChunks returns the ids of m's chunks whose footprint meets box.
// Parquet chunks go by row group: a row group any of whose chunks meets
// the box is wanted whole (a reader needs all its columns).
func wantedChunks(m *manifest.Manifest, box [4]float64) (map[hashing.ID]bool, int) {
	want := map[hashing.ID]bool{}
	groups := map[string]bool{}
	withBox := 0
	group := func(key string) string {
		if m.Format == "parquet" {
			if g, _, ok := strings.Cut(key, "/"); ok && strings.HasPrefix(g, "rg") {
				return g
			}
		}
		return ""
	}
	for _, c := range m.Chunks {
		if c.BBox != nil {
			withBox++
		}
		if intersects(c.BBox, box) {
			want[c.ID] = true
			if g := group(c.Key); g != "" {
				groups[g] = true
			}
		}
	}
	for _, c := range m.Chunks {
		if g := group(c.Key); g != "" && groups[g] {
			want[c.ID] = true
		}
	}
	return want, withBox
}

// prefetchBBox reads the chunks of m that meet box (and its layout) through
// the read path, so remote ones land in the read cache. Nothing is written
// to the work tree.
func (r *Repo) prefetchBBox(ctx context.Context, m *manifest.Manifest, box [4]float64) (AssembleStats, error) {
	cr := r.NewChunkReader(1, 0) // nothing kept in memory
	want, _ := wantedChunks(m, box)
	f, err := cr.OpenFile(ctx, m)
	if err != nil {
		return AssembleStats{}, err
	}
	var ranges [][2]int64
	for i, pc := range f.lay.Pieces {
		if pc.Chunk && want[pc.ID] {
			ranges = append(ranges, [2]int64{f.offs[i], f.offs[i+1]})
		}
	}
	for _, rg := range ranges { // one chunk at a time through Prefetch's bounded group
		if err := f.prefetchAll(ctx, rg); err != nil {
			return statsOf(cr), err
		}
	}
	return statsOf(cr), nil
}

// prefetchAll reads every chunk in rg regardless of the memory budget.
func (f *FileReader) prefetchAll(ctx context.Context, rg [2]int64) error {
	for i := f.pieceAt(rg[0]); i < len(f.lay.Pieces) && f.offs[i] < rg[1]; i++ {
		if pc := f.lay.Pieces[i]; pc.Chunk {
			if _, err := f.cr.get(ctx, pc.ID, pc.Len); err != nil {
				return f.chunkErr(pc, err)
			}
		}
	}
	return nil
}

func statsOf(cr *ChunkReader) AssembleStats {
	s := cr.Stats()
	return AssembleStats{ChunksLocal: int(s.ChunksLocal), ChunksFetched: int(s.ChunksFetched), BytesFetched: s.BytesFetched}
}

// writePartialTIFF writes a GeoTIFF holding every IFD of m but only the
// tiles (or strips) whose chunks meet box; the others become sparse
// (offset 0, byte count 0, which GDAL reads as nodata) and their bytes are
// left out, every file offset shifted to match. Each chunk written is
// hash-verified; the result cannot be checked against the manifest digest
// (it is not that file), so it is recorded as partial.
func (r *Repo) writePartialTIFF(ctx context.Context, m *manifest.Manifest, box [4]float64, commit string) (int64, AssembleStats, error) {
	cr := r.NewChunkReader(0, 0)
	f, err := cr.OpenFile(ctx, m)
	if err != nil {
		return 0, AssembleStats{}, err
	}
	tm, err := walkTIFF(ctxReaderAt{ctx, f}, m.Size)
	if err != nil {
		return 0, AssembleStats{}, fmt.Errorf("%s: --bbox: %w", m.Path, err)
	}
	want, _ := wantedChunks(m, box)
	plan, err := tm.plan(f, want)
	if err != nil {
		return 0, AssembleStats{}, fmt.Errorf("%s: --bbox: %w", m.Path, err)
	}

	target := r.abs(m.Path)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return 0, AssembleStats{}, err
	}
	out, err := createTemp(target)
	if err != nil {
		return 0, AssembleStats{}, err
	}
	tmp := out.Name()
	fail := func(err error) (int64, AssembleStats, error) {
		out.Close()
		os.Remove(tmp)
		return 0, statsOf(cr), err
	}
	var written int64
	const window = 4 << 20
	buf := make([]byte, window)
	for _, span := range plan.kept(m.Size) {
		for pos := span[0]; pos < span[1]; pos += window {
			n := min(window, span[1]-pos)
			b := buf[:n]
			if _, err := f.ReadAtContext(ctx, b, pos); err != nil && err != io.EOF {
				return fail(err)
			}
			plan.apply(b, pos, tm.bo)
			if _, err := out.Write(b); err != nil {
				return fail(err)
			}
			written += n
		}
	}
	if _, err := walkTIFF(ctxReaderAt{ctx, out}, written); err != nil {
		return fail(fmt.Errorf("%s: --bbox: the rewritten file does not parse (%w); this is a bug", m.Path, err))
	}
	if err := out.Sync(); err != nil {
		return fail(err)
	}
	if err := out.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return 0, statsOf(cr), err
	}
	e := &partialEntry{Commit: commit, Digest: m.Digest, Layout: m.Layout, BBox: box, Size: written, Dropped: plan.dropped}
	return written, statsOf(cr), r.loadPartial().set(m.Path, e)
}

// ctxReaderAt binds a context to a ReaderAtContext.
type ctxReaderAt struct {
	ctx context.Context
	r   interface {
		ReadAt([]byte, int64) (int, error)
	}
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if f, ok := c.r.(*FileReader); ok {
		return f.ReadAtContext(c.ctx, p, off)
	}
	return c.r.ReadAt(p, off)
}

// TIFF rewriting. The walk records every field that holds a file offset
// (first-IFD and next-IFD pointers, out-of-line tag values) and every
// block (tile or strip) with the positions of its offset and byte count.

type tiffField struct {
	pos   int64
	width int
	val   uint64
}

type tiffBlock struct {
	off, n uint64
	offF   tiffField
	cntF   tiffField
}

type tiffMap struct {
	bo      binary.ByteOrder
	ptrs    []tiffField
	values  [][2]int64 // out-of-line value extents
	blocks  []tiffBlock
	leaders bool // GDAL: [u32 size] before and 4 repeated bytes after each block
}

const (
	tiffMaxIFDs    = 10000
	tiffMaxEntries = 4096
	tiffMaxBlocks  = 1 << 28
)

func tiffTypeSize(t uint16) uint64 {
	switch t {
	case 1, 2, 6, 7:
		return 1
	case 3, 8:
		return 2
	case 4, 9, 11, 13:
		return 4
	case 5, 10, 12, 16, 17, 18:
		return 8
	}
	return 0
}

func walkTIFF(ra io.ReaderAt, size int64) (*tiffMap, error) {
	read := func(off, n uint64) ([]byte, error) {
		if off > uint64(size) || n > uint64(size)-off {
			return nil, fmt.Errorf("tiff: %d bytes at %d pass the end of the %d-byte file", n, off, size)
		}
		b := make([]byte, n)
		if _, err := ra.ReadAt(b, int64(off)); err != nil && !(err == io.EOF && off+n == uint64(size)) {
			return nil, err
		}
		return b, nil
	}
	hdr, err := read(0, 8)
	if err != nil {
		return nil, err
	}
	tm := &tiffMap{}
	switch string(hdr[:2]) {
	case "II":
		tm.bo = binary.LittleEndian
	case "MM":
		tm.bo = binary.BigEndian
	default:
		return nil, errors.New("tiff: bad byte order mark")
	}
	uint := func(b []byte) uint64 {
		switch len(b) {
		case 2:
			return uint64(tm.bo.Uint16(b))
		case 4:
			return uint64(tm.bo.Uint32(b))
		}
		return tm.bo.Uint64(b)
	}
	big := false
	first := tiffField{pos: 4, width: 4}
	switch uint(hdr[2:4]) {
	case 42:
		first.val = uint(hdr[4:8])
	case 43:
		big = true
		h, err := read(0, 16)
		if err != nil {
			return nil, err
		}
		if uint(h[4:6]) != 8 {
			return nil, errors.New("tiff: BigTIFF offset size is not 8")
		}
		first = tiffField{pos: 8, width: 8, val: uint(h[8:16])}
	default:
		return nil, errors.New("tiff: not a TIFF")
	}
	ptrW, entW, cntW := uint64(4), uint64(12), uint64(2)
	if big {
		ptrW, entW, cntW = 8, 20, 8
	}
	tm.ptrs = append(tm.ptrs, first)
	if g, err := read(ptrW*2, 43); err == nil && strings.HasPrefix(string(g), "GDAL_STRUCTURAL_METADATA_SIZE=") {
		if n, err := strconv.ParseUint(string(g[30:36]), 10, 32); err == nil {
			if txt, err := read(ptrW*2+43, n); err == nil {
				s := string(txt)
				tm.leaders = strings.Contains(s, "BLOCK_LEADER=SIZE_AS_UINT4") && strings.Contains(s, "BLOCK_TRAILER=LAST_4_BYTES_REPEATED")
			}
		}
	}
	seen := map[uint64]bool{}
	type arr struct {
		pos   uint64
		typ   uint16
		count uint64
	}
	for off, nIFD := first.val, 0; off != 0; nIFD++ {
		if seen[off] || nIFD >= tiffMaxIFDs {
			return nil, errors.New("tiff: IFD loop or too many IFDs")
		}
		seen[off] = true
		cb, err := read(off, cntW)
		if err != nil {
			return nil, err
		}
		n := uint(cb)
		if n == 0 || n > tiffMaxEntries {
			return nil, fmt.Errorf("tiff: IFD at %d has %d entries", off, n)
		}
		ents, err := read(off+cntW, n*entW)
		if err != nil {
			return nil, err
		}
		arrays := map[uint16]arr{}
		for i := uint64(0); i < n; i++ {
			e := ents[i*entW : (i+1)*entW]
			tag, typ := uint16(uint(e[0:2])), uint16(uint(e[2:4]))
			var count uint64
			valPos := off + cntW + i*entW + 8
			if big {
				count, valPos = uint(e[4:12]), valPos+4
			} else {
				count = uint(e[4:8])
			}
			switch tag {
			case 330, 34665, 34853, 40965:
				return nil, fmt.Errorf("tiff: tag %d (a sub-IFD) is not supported by a partial checkout", tag)
			}
			ts := tiffTypeSize(typ)
			if ts == 0 {
				return nil, fmt.Errorf("tiff: tag %d has unknown type %d", tag, typ)
			}
			if count > uint64(size) || count*ts > uint64(size) {
				return nil, fmt.Errorf("tiff: tag %d count %d is too large", tag, count)
			}
			dataPos := valPos
			if count*ts > ptrW {
				v := uint(e[entW-ptrW:])
				tm.ptrs = append(tm.ptrs, tiffField{pos: int64(valPos), width: int(ptrW), val: v})
				if v > uint64(size) || count*ts > uint64(size)-v {
					return nil, fmt.Errorf("tiff: tag %d value passes the end of the file", tag)
				}
				tm.values = append(tm.values, [2]int64{int64(v), int64(v + count*ts)})
				dataPos = v
			}
			switch tag {
			case 273, 279, 324, 325:
				if ts != 2 && ts != 4 && ts != 8 || typ == 8 || typ == 9 || typ == 11 || typ == 12 || typ == 17 {
					return nil, fmt.Errorf("tiff: tag %d has type %d", tag, typ)
				}
				arrays[tag] = arr{dataPos, typ, count}
			}
		}
		nb, err := read(off+cntW+n*entW, ptrW)
		if err != nil {
			return nil, err
		}
		next := tiffField{pos: int64(off + cntW + n*entW), width: int(ptrW), val: uint(nb)}
		tm.ptrs = append(tm.ptrs, next)
		offT, cntT := uint16(324), uint16(325)
		if _, ok := arrays[324]; !ok {
			offT, cntT = 273, 279
		}
		oa, ok1 := arrays[offT]
		ca, ok2 := arrays[cntT]
		if ok1 != ok2 || oa.count != ca.count {
			return nil, fmt.Errorf("tiff: IFD at %d: block offsets and byte counts do not match", off)
		}
		if ok1 {
			if len(tm.blocks)+int(oa.count) > tiffMaxBlocks {
				return nil, errors.New("tiff: too many blocks")
			}
			ow, cw := tiffTypeSize(oa.typ), tiffTypeSize(ca.typ)
			ob, err := read(oa.pos, oa.count*ow)
			if err != nil {
				return nil, err
			}
			cbs, err := read(ca.pos, ca.count*cw)
			if err != nil {
				return nil, err
			}
			for i := uint64(0); i < oa.count; i++ {
				b := tiffBlock{
					offF: tiffField{pos: int64(oa.pos + i*ow), width: int(ow), val: uint(ob[i*ow : (i+1)*ow])},
					cntF: tiffField{pos: int64(ca.pos + i*cw), width: int(cw), val: uint(cbs[i*cw : (i+1)*cw])},
				}
				b.off, b.n = b.offF.val, b.cntF.val
				if b.n > 0 && (b.off > uint64(size) || b.n > uint64(size)-b.off) {
					return nil, fmt.Errorf("tiff: block at %d of %d bytes passes the end of the file", b.off, b.n)
				}
				tm.blocks = append(tm.blocks, b)
			}
		}
		off = next.val
	}
	return tm, nil
}

// tiffPlan is what a partial file leaves out and what it rewrites.
type tiffPlan struct {
	dropped [][2]int64 // sorted, merged ranges of the original file
	patches []tiffField
}

// plan decides which blocks to keep (any chunk piece overlapping the block
// is wanted, or the block is all inline) and computes the rewrite.
func (tm *tiffMap) plan(f *FileReader, want map[hashing.ID]bool) (*tiffPlan, error) {
	keep := make([]bool, len(tm.blocks))
	var drops [][2]int64
	for i, b := range tm.blocks {
		if b.n == 0 || b.off == 0 {
			continue
		}
		a, e := int64(b.off), int64(b.off+b.n)
		chunks, wanted := 0, false
		for j := f.pieceAt(a); j < len(f.lay.Pieces) && f.offs[j] < e; j++ {
			if pc := f.lay.Pieces[j]; pc.Chunk {
				chunks++
				wanted = wanted || want[pc.ID]
			}
		}
		if chunks == 0 || wanted {
			keep[i] = true
			continue
		}
		if tm.leaders && a >= 4 && e+4 <= f.m.Size {
			var lb [4]byte
			if _, err := f.ReadAt(lb[:], a-4); err == nil && uint64(binary.LittleEndian.Uint32(lb[:])) == b.n {
				a, e = a-4, e+4
			}
		}
		drops = append(drops, [2]int64{a, e})
	}
	pl := &tiffPlan{dropped: coalesce(drops)}
	if len(pl.dropped) == 0 {
		return pl, nil
	}
	// Nothing that is kept may sit inside a dropped range.
	inDrop := func(a, e int64) bool {
		i := sort.Search(len(pl.dropped), func(i int) bool { return pl.dropped[i][1] > a })
		return i < len(pl.dropped) && pl.dropped[i][0] < e
	}
	for i, b := range tm.blocks {
		if keep[i] && inDrop(int64(b.off), int64(b.off+b.n)) {
			return nil, fmt.Errorf("block at %d overlaps a dropped block", b.off)
		}
	}
	for _, v := range tm.values {
		if inDrop(v[0], v[1]) {
			return nil, fmt.Errorf("tag data at %d lies between tiles that are left out", v[0])
		}
	}
	for _, p := range tm.ptrs {
		if p.val != 0 && inDrop(int64(p.val), int64(p.val)+1) {
			return nil, fmt.Errorf("offset %d points into a dropped tile", p.val)
		}
	}
	before := make([]uint64, len(pl.dropped)+1) // bytes dropped before range i
	for i, r := range pl.dropped {
		before[i+1] = before[i] + uint64(r[1]-r[0])
	}
	shift := func(x uint64) uint64 {
		i := sort.Search(len(pl.dropped), func(i int) bool { return uint64(pl.dropped[i][1]) > x })
		return x - before[i]
	}
	for _, p := range tm.ptrs {
		if p.val != 0 {
			pl.patches = append(pl.patches, tiffField{p.pos, p.width, shift(p.val)})
		}
	}
	for i, b := range tm.blocks {
		switch {
		case b.n == 0 || b.off == 0:
		case keep[i]:
			pl.patches = append(pl.patches, tiffField{b.offF.pos, b.offF.width, shift(b.off)})
		default:
			pl.patches = append(pl.patches, tiffField{b.offF.pos, b.offF.width, 0}, tiffField{b.cntF.pos, b.cntF.width, 0})
		}
	}
	for _, p := range pl.patches {
		if inDrop(p.pos, p.pos+int64(p.width)) {
			return nil, fmt.Errorf("offset field at %d lies between tiles that are left out", p.pos)
		}
	}
	sort.Slice(pl.patches, func(i, j int) bool { return pl.patches[i].pos < pl.patches[j].pos })
	return pl, nil
}

// kept returns the byte ranges of the original file that are written.
func (pl *tiffPlan) kept(size int64) [][2]int64 {
	var out [][2]int64
	pos := int64(0)
	for _, d := range pl.dropped {
		if d[0] > pos {
			out = append(out, [2]int64{pos, d[0]})
		}
		pos = d[1]
	}
	if pos < size {
		out = append(out, [2]int64{pos, size})
	}
	return out
}

// apply writes the patches that fall in b (original bytes at pos).
func (pl *tiffPlan) apply(b []byte, pos int64, bo binary.ByteOrder) {
	end := pos + int64(len(b))
	i := sort.Search(len(pl.patches), func(i int) bool { return pl.patches[i].pos+int64(pl.patches[i].width) > pos })
	for ; i < len(pl.patches) && pl.patches[i].pos < end; i++ {
		p := pl.patches[i]
		var v [8]byte
		switch p.width {
		case 2:
			bo.PutUint16(v[:], uint16(p.val))
		case 4:
			bo.PutUint32(v[:], uint32(p.val))
		default:
			bo.PutUint64(v[:], p.val)
		}
		for k := 0; k < p.width; k++ {
			if q := p.pos + int64(k); q >= pos && q < end {
				b[q-pos] = v[k]
			}
		}
	}
}
