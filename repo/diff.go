package repo

import (
	"context"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// Git's diff driver for manifests: `chunkvc install` writes TextconvAttribute
// into .gitattributes and sets TextconvConfigKey to TextconvCommand, so that
// `git diff` and `git log -p` show `chunkvc diff-textconv` listings.
const (
	TextconvDriver    = "chunkvc"
	TextconvAttribute = ManifestDir + "/** diff=" + TextconvDriver
	TextconvConfigKey = "diff." + TextconvDriver + ".textconv"
	TextconvCommand   = "chunkvc diff-textconv"
)

// WorkTree is how DiffResult.To names the working tree.
const WorkTree = "worktree"

// MaxListedFeatures caps FlatGeobufDiff.Added and .Removed (the counts are
// always complete).
const MaxListedFeatures = 1000

// DiffOptions selects what Diff compares.
type DiffOptions struct {
	// From is the old side ("" = HEAD). To is the new side ("" = the
	// working tree). Both are Git revisions.
	From, To string
	// Paths limits the diff to these files or directories (slash paths
	// from the root); empty means every tracked file.
	Paths []string
	// Features compares FlatGeobuf files feature by feature (reading both
	// versions; an old one is assembled from the store into a temp file).
	Features bool
	Workers  int // hashing workers for working files; 0 = GOMAXPROCS
}

// DiffResult is what changed between two versions of the tracked files.
type DiffResult struct {
	From       string     `json:"from"`                  // the old revision as given ("HEAD" by default)
	To         string     `json:"to"`                    // the new revision as given, or "worktree"
	FromCommit string     `json:"from_commit,omitempty"` // "" on an unborn branch
	ToCommit   string     `json:"to_commit,omitempty"`   // "" for the working tree
	Files      []FileDiff `json:"files"`
}

// ChunkCounts counts chunk keys by change.
type ChunkCounts struct {
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
}

// ChunkChange is one chunk key that is not unchanged.
type ChunkChange struct {
	Key    string      `json:"key"`
	Change string      `json:"change"` // added, removed, changed
	Bytes  int64       `json:"bytes"`  // the new chunk's size (the old one's when removed)
	BBox   *[4]float64 `json:"bbox,omitempty"`
}

// FieldChange is a manifest summary field whose value changed ("" = absent).
type FieldChange struct {
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// LevelCount is one TIFF pyramid level: how many of its blocks changed.
type LevelCount struct {
	Level   int  `json:"level"` // 0 = full resolution
	Mask    bool `json:"mask,omitempty"`
	Changed int  `json:"changed"` // added + removed + changed
	Total   int  `json:"total"`   // blocks in the new version (the old one when deleted)
}

// TiffDiff is the raster part of a FileDiff.
type TiffDiff struct {
	Levels []LevelCount `json:"levels"`
}

// ParquetDiff is the Parquet part of a FileDiff.
type ParquetDiff struct {
	RowsOld          int64    `json:"rows_old"`
	RowsNew          int64    `json:"rows_new"`
	RowGroupsOld     int      `json:"row_groups_old"`
	RowGroupsNew     int      `json:"row_groups_new"`
	RowGroupsChanged []int    `json:"row_groups_changed"`
	ColumnsChanged   []string `json:"columns_changed"`
	SchemaChanged    bool     `json:"schema_changed"`
	GeoChanged       bool     `json:"geo_changed"`
}

// FeatureRef is one FlatGeobuf feature, named by the hash of its record.
type FeatureRef struct {
	ID   string      `json:"id"`
	BBox *[4]float64 `json:"bbox,omitempty"`
}

// FlatGeobufDiff is the FlatGeobuf part of a FileDiff.
type FlatGeobufDiff struct {
	FeaturesOld   int64 `json:"features_old"`
	FeaturesNew   int64 `json:"features_new"`
	BlocksChanged int   `json:"blocks_changed"`
	HeaderChanged bool  `json:"header_changed"`
	CRSChanged    bool  `json:"crs_changed"`
	// Compared is set when both versions were read feature by feature;
	// then the fields below are filled in.
	Compared        bool         `json:"features_compared"`
	FeaturesAdded   int          `json:"features_added"`
	FeaturesRemoved int          `json:"features_removed"`
	Added           []FeatureRef `json:"added,omitempty"`
	Removed         []FeatureRef `json:"removed,omitempty"`
}

// FileDiff is one tracked file that differs.
type FileDiff struct {
	Path      string      `json:"path"`
	OldPath   string      `json:"old_path,omitempty"` // renamed files only
	Status    string      `json:"status"`             // added, deleted, modified, renamed
	Format    string      `json:"format"`
	OldFormat string      `json:"old_format,omitempty"` // only when it differs
	Size      int64       `json:"size"`                 // new size (0 when deleted)
	OldSize   int64       `json:"old_size"`             // 0 when added
	Chunks    ChunkCounts `json:"chunks"`
	// Bytes is what a commit would move: the size of the new version's
	// chunks whose hash the old version does not have.
	Bytes int64 `json:"bytes"`
	// BBox is the changed area in CRS units: the union of the footprints of
	// the changed chunks at the finest level that changed (TIFF overviews
	// do not widen it), or of the added and removed features when
	// FlatGeobuf features were compared. Nil when no footprint is known.
	BBox *[4]float64 `json:"bbox,omitempty"`
	// Extent is the whole file's bbox (new version, else old).
	Extent *[4]float64 `json:"extent,omitempty"`
	CRS    string      `json:"crs,omitempty"`
	// SummaryChanges lists the manifest summary fields that changed.
	SummaryChanges []FieldChange `json:"summary_changes,omitempty"`
	// Reencoded names the encoding settings that changed when they
	// re-encoded (nearly) every chunk, e.g. "COMPRESSION deflate → zstd".
	Reencoded  string          `json:"reencoded,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Tiff       *TiffDiff       `json:"tiff,omitempty"`
	Parquet    *ParquetDiff    `json:"parquet,omitempty"`
	FlatGeobuf *FlatGeobufDiff `json:"flatgeobuf,omitempty"`
	// Changes lists every chunk key that is not unchanged, in key order.
	Changes []ChunkChange `json:"changes"`

	old, cur *manifest.Manifest
}

// Old returns the old version's manifest (nil when added).
func (f *FileDiff) Old() *manifest.Manifest { return f.old }

// New returns the new version's manifest (nil when deleted).
func (f *FileDiff) New() *manifest.Manifest { return f.cur }

// Diff compares two versions of the tracked files (see DiffOptions).
// Working files are chunked and hashed but nothing is stored; a file whose
// stat-cache digest matches the old version's is not read at all.
func (r *Repo) Diff(ctx context.Context, opt DiffOptions) (*DiffResult, error) {
	if err := r.settlePatch(); err != nil {
		return nil, err
	}
	res := &DiffResult{From: opt.From, To: opt.To, Files: []FileDiff{}}
	if res.From == "" {
		res.From = "HEAD"
	}
	if res.To == "" {
		res.To = WorkTree
	}
	scope := make([]string, 0, len(opt.Paths))
	for _, p := range opt.Paths {
		p = strings.TrimSuffix(p, "/")
		if p != "." && p != "" {
			if err := manifest.CheckPath(p); err != nil {
				return nil, err
			}
		}
		scope = append(scope, p)
	}
	opt.Paths = scope
	var fromC *gitdb.Commit
	var err error
	if opt.From == "" {
		fromC, err = r.git.Head()
	} else {
		fromC, err = r.git.Resolve(opt.From)
	}
	if err != nil {
		return nil, err
	}
	if fromC != nil {
		res.FromCommit = fromC.Hash.String()
	}
	oldBlobs, err := r.git.manifestBlobs(fromC)
	if err != nil {
		return nil, err
	}
	readOld := func(p string) (*manifest.Manifest, error) {
		m, _, err := r.git.readManifestBlob(oldBlobs[p], p)
		return m, err
	}

	type pair struct{ old, cur *manifest.Manifest }
	var pairs []pair
	if opt.To != "" {
		toC, err := r.git.Resolve(opt.To)
		if err != nil {
			return nil, err
		}
		res.ToCommit = toC.Hash.String()
		newBlobs, err := r.git.manifestBlobs(toC)
		if err != nil {
			return nil, err
		}
		for _, p := range unionKeys(oldBlobs, newBlobs) {
			if !inScope(p, opt.Paths) {
				continue
			}
			ho, inOld := oldBlobs[p]
			hn, inNew := newBlobs[p]
			if inOld && inNew && ho == hn {
				continue
			}
			var pr pair
			if inOld {
				if pr.old, err = readOld(p); err != nil {
					return nil, err
				}
			}
			if inNew {
				if pr.cur, _, err = r.git.readManifestBlob(hn, p); err != nil {
					return nil, err
				}
			}
			pairs = append(pairs, pr)
		}
	} else {
		wt, err := r.worktreeManifests(ctx, opt, oldBlobs, readOld)
		if err != nil {
			return nil, err
		}
		for _, p := range wt.order {
			pairs = append(pairs, pair{wt.old[p], wt.cur[p]})
		}
	}

	// A deleted and an added file with the same bytes are a rename.
	deleted := map[hashing.ID][]int{}
	for i, pr := range pairs {
		if pr.cur == nil {
			deleted[pr.old.Digest] = append(deleted[pr.old.Digest], i)
		}
	}
	drop := map[int]bool{}
	for i, pr := range pairs {
		if pr.old != nil || len(deleted[pr.cur.Digest]) == 0 {
			continue
		}
		j := deleted[pr.cur.Digest][0]
		deleted[pr.cur.Digest] = deleted[pr.cur.Digest][1:]
		pairs[i].old = pairs[j].old
		drop[j] = true
	}
	for i, pr := range pairs {
		if drop[i] {
			continue
		}
		fd := CompareManifests(pr.old, pr.cur)
		if opt.Features && fd.Status == "modified" && pr.old.Format == "flatgeobuf" && pr.cur.Format == "flatgeobuf" {
			if err := r.compareFeatures(ctx, &fd, res.FromCommit, res.ToCommit); err != nil {
				fd.Warnings = append(fd.Warnings, "features not compared: "+err.Error())
			}
		}
		res.Files = append(res.Files, fd)
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return res, nil
}

type wtManifests struct {
	order    []string
	old, cur map[string]*manifest.Manifest
}

// worktreeManifests returns the old and current manifests of every tracked
// file in scope whose working bytes differ from the old side.
func (r *Repo) worktreeManifests(ctx context.Context, opt DiffOptions, oldBlobs map[string]gitdb.Hash, readOld func(string) (*manifest.Manifest, error)) (*wtManifests, error) {
	out := &wtManifests{old: map[string]*manifest.Manifest{}, cur: map[string]*manifest.Manifest{}}
	files, err := r.trackedFiles()
	if err != nil {
		return nil, err
	}
	// HEAD's manifests name bytes we know without reading, when From is
	// another revision.
	var headBlobs map[string]gitdb.Hash
	if opt.From != "" {
		head, err := r.git.Head()
		if err != nil {
			return nil, err
		}
		if headBlobs, err = r.git.manifestBlobs(head); err != nil {
			return nil, err
		}
	}
	cache := r.loadStatCache()
	dirty := false
	seen := map[string]bool{}
	for _, p := range files {
		if !inScope(p, opt.Paths) {
			continue
		}
		seen[p] = true
		var old *manifest.Manifest
		if _, ok := oldBlobs[p]; ok {
			if old, err = readOld(p); err != nil {
				return nil, err
			}
		}
		fi, err := os.Lstat(r.abs(p))
		if err != nil {
			return nil, err
		}
		st := statOf(fi)
		var cur *manifest.Manifest
		if e, ok := cache.lookup(p, st); ok {
			if old != nil && e.Digest == old.Digest {
				continue
			}
			if h, ok := headBlobs[p]; ok {
				hm, _, err := r.git.readManifestBlob(h, p)
				if err != nil {
					return nil, err
				}
				if hm.Digest == e.Digest {
					cur = hm
				}
			}
		}
		if cur == nil {
			m, st, hashed, err := r.peekFile(ctx, p, opt.Workers)
			if err != nil {
				return nil, err
			}
			e := cacheEntry{fileStat: st, Digest: m.Digest, Hashed: hashed}
			if prev, ok := cache.layoutOf(p, st); ok && prev.Digest == m.Digest {
				e.Layout = prev.Layout
			}
			if old != nil && old.Digest == m.Digest {
				e.Layout = old.Layout
			}
			cache.put(p, e)
			dirty = true
			cur = m
		}
		if old != nil && cur.Digest == old.Digest {
			continue
		}
		out.order = append(out.order, p)
		out.old[p], out.cur[p] = old, cur
	}
	for _, p := range sortedKeys(oldBlobs) {
		if seen[p] || !inScope(p, opt.Paths) {
			continue
		}
		old, err := readOld(p)
		if err != nil {
			return nil, err
		}
		out.order = append(out.order, p)
		out.old[p] = old
	}
	if dirty {
		_ = cache.save()
	}
	return out, nil
}

// peekFile is chunkFile without the store: it enumerates and hashes working
// file p and returns the manifest a commit would write.
func (r *Repo) peekFile(ctx context.Context, p string, workers int) (*manifest.Manifest, fileStat, int64, error) {
	ch, err := r.chunkFile(ctx, p, nil, version{}, nil, workers)
	if err != nil {
		return nil, fileStat{}, 0, err
	}
	return ch.m, ch.stat, ch.hashed, nil
}

// FileAt returns a local file holding p as of commit ("" = the working
// file itself). Other versions are assembled from the store into a temp
// file that cleanup removes.
func (r *Repo) FileAt(ctx context.Context, commit, p string) (name string, cleanup func(), err error) {
	if commit == "" {
		if err := manifest.CheckPath(p); err != nil {
			return "", nil, err
		}
		return r.abs(p), func() {}, nil
	}
	t := r.gitTree()
	defer t.close()
	f, err := t.create("chunkvc/diff")
	if err != nil {
		return "", nil, err
	}
	cleanup = f.abort
	_, err = r.Cat(ctx, commit, p, f.File)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// compareFeatures fills fd.FlatGeobuf's feature set difference and narrows
// fd.BBox to the added and removed features.
func (r *Repo) compareFeatures(ctx context.Context, fd *FileDiff, fromCommit, toCommit string) error {
	read := func(commit, p string) ([]flatgeobuf.Feature, error) {
		name, cleanup, err := r.FileAt(ctx, commit, p)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		return flatgeobuf.Features(f, fi.Size())
	}
	oldF, err := read(fromCommit, fd.old.Path)
	if err != nil {
		return err
	}
	newF, err := read(toCommit, fd.cur.Path)
	if err != nil {
		return err
	}
	fg := fd.FlatGeobuf
	count := map[hashing.ID]int{}
	for _, f := range oldF {
		count[f.ID]++
	}
	var box *[4]float64
	grow := func(f flatgeobuf.Feature) *[4]float64 {
		if f.Empty() {
			return nil
		}
		b := [4]float64(f.BBox)
		box = union(box, &b)
		return &b
	}
	for _, f := range newF {
		if count[f.ID] > 0 {
			count[f.ID]--
			continue
		}
		fg.FeaturesAdded++
		b := grow(f)
		if len(fg.Added) < MaxListedFeatures {
			fg.Added = append(fg.Added, FeatureRef{ID: f.ID.String(), BBox: b})
		}
	}
	for _, f := range oldF {
		if count[f.ID] == 0 {
			continue
		}
		count[f.ID]--
		fg.FeaturesRemoved++
		b := grow(f)
		if len(fg.Removed) < MaxListedFeatures {
			fg.Removed = append(fg.Removed, FeatureRef{ID: f.ID.String(), BBox: b})
		}
	}
	fg.Compared = true
	if box != nil {
		fd.BBox = box
	}
	return nil
}

// CompareManifests describes the change from old to cur (either may be nil,
// not both) without reading any data: chunk counts, the changed area and
// the format-aware summaries.
func CompareManifests(old, cur *manifest.Manifest) FileDiff {
	d := manifest.Diff(old, cur)
	fd := FileDiff{old: old, cur: cur, Changes: []ChunkChange{},
		Chunks: ChunkCounts{Added: d.Added, Removed: d.Removed, Changed: d.Changed, Unchanged: d.Unchanged},
		Bytes:  d.NewBytes}
	ref := cur
	switch {
	case old == nil:
		fd.Status = "added"
	case cur == nil:
		fd.Status = "deleted"
		ref = old
	case old.Path != cur.Path:
		fd.Status, fd.OldPath = "renamed", old.Path
	default:
		fd.Status = "modified"
	}
	fd.Path, fd.Format, fd.CRS = ref.Path, ref.Format, ref.SummaryValue("crs")
	fd.Extent = parseBBox(ref.SummaryValue("bbox"))
	if cur != nil {
		fd.Size = cur.Size
	}
	if old != nil {
		fd.OldSize = old.Size
		if cur != nil && old.Format != cur.Format {
			fd.OldFormat = old.Format
		}
	}
	fd.SummaryChanges = summaryChanges(old, cur)
	if old != nil && cur != nil {
		fd.Warnings = changeWarnings(old, cur, d)
		total := d.Unchanged + d.Changed + d.Removed
		if profileOf(old) != profileOf(cur) && total > 0 && float64(d.Changed+d.Removed) >= 0.9*float64(total) {
			fd.Reencoded = profileChange(old, cur)
		}
	}

	finest := math.MaxInt
	if ref.Format == "tiff" {
		for _, k := range d.Keys {
			if lv, _, ok := levelOf(k.Key); ok && k.Change != manifest.Unchanged && lv < finest {
				finest = lv
			}
		}
	}
	for _, k := range d.Keys {
		if k.Change == manifest.Unchanged {
			continue
		}
		c := ChunkChange{Key: k.Key, Change: k.Change.String()}
		if k.New != nil {
			c.Bytes, c.BBox = k.New.Size, k.New.BBox
		} else {
			c.Bytes, c.BBox = k.Old.Size, k.Old.BBox
		}
		fd.Changes = append(fd.Changes, c)
		if finest != math.MaxInt {
			if lv, _, ok := levelOf(k.Key); !ok || lv != finest {
				continue
			}
		}
		for _, ch := range []*manifest.Chunk{k.Old, k.New} {
			if ch != nil {
				fd.BBox = union(fd.BBox, ch.BBox)
			}
		}
	}

	switch ref.Format {
	case "tiff":
		fd.Tiff = tiffDiff(d, cur == nil)
	case "parquet":
		fd.Parquet = parquetDiff(old, cur, d)
	case "flatgeobuf":
		fd.FlatGeobuf = flatgeobufDiff(old, cur, d)
	}
	return fd
}

func tiffDiff(d manifest.Delta, deleted bool) *TiffDiff {
	type lk struct {
		level int
		mask  bool
	}
	counts := map[lk]*LevelCount{}
	for _, k := range d.Keys {
		lv, mask, ok := levelOf(k.Key)
		if !ok {
			continue
		}
		c := counts[lk{lv, mask}]
		if c == nil {
			c = &LevelCount{Level: lv, Mask: mask}
			counts[lk{lv, mask}] = c
		}
		if k.New != nil || deleted {
			c.Total++
		}
		if k.Change != manifest.Unchanged {
			c.Changed++
		}
	}
	out := &TiffDiff{Levels: []LevelCount{}}
	for _, c := range counts {
		out.Levels = append(out.Levels, *c)
	}
	sort.Slice(out.Levels, func(i, j int) bool {
		a, b := out.Levels[i], out.Levels[j]
		if a.Mask != b.Mask {
			return !a.Mask
		}
		return a.Level < b.Level
	})
	return out
}

func parquetDiff(old, cur *manifest.Manifest, d manifest.Delta) *ParquetDiff {
	p := &ParquetDiff{RowGroupsChanged: []int{}, ColumnsChanged: []string{}}
	if old != nil {
		p.RowsOld, _ = strconv.ParseInt(old.SummaryValue("rows"), 10, 64)
		p.RowGroupsOld, _ = strconv.Atoi(old.SummaryValue("row_groups"))
	}
	if cur != nil {
		p.RowsNew, _ = strconv.ParseInt(cur.SummaryValue("rows"), 10, 64)
		p.RowGroupsNew, _ = strconv.Atoi(cur.SummaryValue("row_groups"))
	}
	if old != nil && cur != nil {
		p.SchemaChanged = old.SummaryValue("schema") != cur.SummaryValue("schema")
		p.GeoChanged = old.SummaryValue("geo") != cur.SummaryValue("geo")
	}
	rgs, cols := map[int]bool{}, map[string]bool{}
	for _, k := range d.Keys {
		if k.Change == manifest.Unchanged {
			continue
		}
		rg, col, ok := rowGroupOf(k.Key)
		if !ok {
			continue
		}
		rgs[rg] = true
		if col != "" {
			cols[col] = true
		}
	}
	for rg := range rgs {
		p.RowGroupsChanged = append(p.RowGroupsChanged, rg)
	}
	sort.Ints(p.RowGroupsChanged)
	for c := range cols {
		p.ColumnsChanged = append(p.ColumnsChanged, c)
	}
	sort.Strings(p.ColumnsChanged)
	return p
}

// fgbHeaderFields are the FlatGeobuf summary fields that come from its header.
var fgbHeaderFields = []string{"geometry_type", "has_z", "has_m", "crs", "columns", "name"}

func flatgeobufDiff(old, cur *manifest.Manifest, d manifest.Delta) *FlatGeobufDiff {
	fg := &FlatGeobufDiff{}
	if old != nil {
		fg.FeaturesOld, _ = strconv.ParseInt(old.SummaryValue("features"), 10, 64)
	}
	if cur != nil {
		fg.FeaturesNew, _ = strconv.ParseInt(cur.SummaryValue("features"), 10, 64)
	}
	if old != nil && cur != nil {
		for _, f := range fgbHeaderFields {
			if old.SummaryValue(f) != cur.SummaryValue(f) {
				fg.HeaderChanged = true
			}
		}
		fg.CRSChanged = old.SummaryValue("crs") != cur.SummaryValue("crs")
	}
	for _, k := range d.Keys {
		if k.Change != manifest.Unchanged && strings.HasPrefix(k.Key, "f/") {
			fg.BlocksChanged++
		}
	}
	return fg
}

// summaryChanges lists fields in old's order, then fields only cur has.
func summaryChanges(old, cur *manifest.Manifest) []FieldChange {
	if old == nil || cur == nil {
		return nil
	}
	var out []FieldChange
	seen := map[string]bool{}
	for _, f := range old.Summary {
		seen[f.Name] = true
		if v := cur.SummaryValue(f.Name); v != f.Value {
			out = append(out, FieldChange{Name: f.Name, Old: f.Value, New: v})
		}
	}
	for _, f := range cur.Summary {
		if !seen[f.Name] {
			out = append(out, FieldChange{Name: f.Name, Old: "", New: f.Value})
		}
	}
	return out
}

// levelOf parses a TIFF block key: "z<level>/…" or "mask/z<level>/…".
func levelOf(key string) (level int, mask bool, ok bool) {
	if rest, found := strings.CutPrefix(key, "mask/"); found {
		key, mask = rest, true
	}
	lv := tileLevel(key)
	return lv, mask, lv >= 0
}

// rowGroupOf parses a Parquet chunk key "rg<n>/<column>[/…]".
func rowGroupOf(key string) (rg int, col string, ok bool) {
	rest, found := strings.CutPrefix(key, "rg")
	if !found {
		return 0, "", false
	}
	num, rest, _ := strings.Cut(rest, "/")
	num, _, _ = strings.Cut(num, "@")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, "", false
	}
	col, _, _ = strings.Cut(rest, "/")
	col, _, _ = strings.Cut(col, "@")
	return n, col, true
}

func parseBBox(s string) *[4]float64 {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return nil
	}
	var b [4]float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil
		}
		b[i] = v
	}
	if !manifest.ValidBBox(b) {
		return nil
	}
	return &b
}

func union(a, b *[4]float64) *[4]float64 {
	if b == nil {
		return a
	}
	if a == nil {
		c := *b
		return &c
	}
	return &[4]float64{min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])}
}

func inScope(p string, scope []string) bool {
	if len(scope) == 0 {
		return true
	}
	for _, s := range scope {
		if s == "" || s == "." || p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

func unionKeys(a, b map[string]gitdb.Hash) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]gitdb.Hash{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]gitdb.Hash) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
