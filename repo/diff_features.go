package repo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync/atomic"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/featurediff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/formats/parquet"
	"github.com/chunkvc/chunkvc/formats/parquet/rows"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/pattern"
)

// KeyRule is a `key = COLUMN PATTERN` line of .chunkvc/config: the rows
// of the files PATTERN matches are named by COLUMN in feature diffs.
type KeyRule struct {
	Column  string
	Pattern string
}

func (k KeyRule) String() string { return fmt.Sprintf("key = %s %s", k.Column, k.Pattern) }

// parseKeyRule reads the value of a key line.
func parseKeyRule(v string) (KeyRule, error) {
	col, pat, ok := strings.Cut(v, " ")
	k := KeyRule{Column: col, Pattern: strings.TrimSpace(pat)}
	if !ok || col == "" || k.Pattern == "" {
		return k, fmt.Errorf("key = COLUMN PATTERN, got %q", v)
	}
	if err := pattern.Check(k.Pattern); err != nil {
		return k, fmt.Errorf("key: %w", err)
	}
	return k, nil
}

// detectedKeys are the column names (lower case) a key is detected by.
var detectedKeys = []string{"id", "fid", "osm_id", "gid", "objectid"}

// FeatureOptions selects how DiffFeatures names rows.
type FeatureOptions struct {
	Key   string // --key COLUMN; "" = the config's key line, else detected
	Limit int    // changes listed (featurediff.Input.Limit)
}

// DiffFeatures compares the rows of the Parquet and FlatGeobuf files res
// lists as changed (see package featurediff), decoding only the row
// groups whose chunks differ from the other side's.
func (r *Repo) DiffFeatures(ctx context.Context, res *diff.Result, opt FeatureOptions) (*featurediff.Features, error) {
	cr := r.NewChunkReader(0, 0)
	in := featurediff.Input{Renames: map[string]string{}, Limit: opt.Limit}
	var warnings []string
	for i := range res.Files {
		fd := &res.Files[i]
		old, cur := fd.Old(), fd.New()
		if fd.Status == diff.Renamed || !vectorFormat(old) && !vectorFormat(cur) {
			continue
		}
		if fd.Status == diff.Rewritten {
			in.Renames[fd.Path] = fd.OldPath
		}
		sides := []struct {
			m, other *manifest.Manifest
			commit   string
			into     *[]featurediff.Table
		}{{old, cur, res.FromCommit, &in.Old}, {cur, old, res.ToCommit, &in.New}}
		for _, s := range sides {
			if !vectorFormat(s.m) {
				continue
			}
			t, err := r.featureTable(ctx, cr, s.m, s.other, s.commit, opt.Key)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: features not compared: %v", s.m.Path, err))
				continue
			}
			*s.into = append(*s.into, *t)
		}
	}
	limit := in.Limit
	in.Limit = math.MaxInt // the lake check below needs every change
	f := featurediff.Compare(in)
	f.Warnings = append(f.Warnings, warnings...)
	if err := r.lakeDuplicates(ctx, cr, res, f); err != nil {
		f.Warnings = append(f.Warnings, "duplicate keys not looked for in the rest of the lake: "+err.Error())
	}
	f.Sort()
	f.Limit(limit)
	return f, nil
}

func vectorFormat(m *manifest.Manifest) bool {
	return m != nil && (m.Format == formats.Parquet || m.Format == formats.FlatGeobuf)
}

// sizedReaderAt is one side's bytes and how many of them were read.
type sizedReaderAt struct {
	io.ReaderAt
	size  int64
	read  func() int64
	close func()
	file  *FileReader // a stored version's; nil for a working file
}

// openSide opens version m: the working file when commit is "", else
// the stored chunks, fetched on demand.
func (r *Repo) openSide(ctx context.Context, cr *ChunkReader, m *manifest.Manifest, commit string) (*sizedReaderAt, error) {
	if commit == "" {
		f, err := os.Open(r.abs(m.Path))
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		c := &countingReaderAt{r: f}
		return &sizedReaderAt{ReaderAt: c, size: fi.Size(), read: c.n.Load, close: func() { f.Close() }}, nil
	}
	cctx, stats := CountReads(ctx)
	f, err := cr.OpenFile(cctx, m)
	if err != nil {
		return nil, err
	}
	read := func() int64 { s := stats(); return s.BytesFetched + s.BytesLocal }
	return &sizedReaderAt{ReaderAt: ctxReaderAt{cctx, f}, size: m.Size, read: read, close: func() {}, file: f}, nil
}

// countingReaderAt counts the bytes read of a working file.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// featureTable decodes the rows of version m that may differ from
// version other (nil: every row).
func (r *Repo) featureTable(ctx context.Context, cr *ChunkReader, m, other *manifest.Manifest, commit, flagKey string) (*featurediff.Table, error) {
	src, err := r.openSide(ctx, cr, m, commit)
	if err != nil {
		return nil, err
	}
	defer src.close()
	var t *featurediff.Table
	if m.Format == formats.FlatGeobuf {
		t, err = r.flatgeobufTable(src, m, other, flagKey)
	} else {
		t, err = r.parquetTable(src, m, other, flagKey)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	t.BytesRead = src.read()
	return t, nil
}

// parquetTable decodes the row groups of m that other does not hold.
func (r *Repo) parquetTable(src *sizedReaderAt, m, other *manifest.Manifest, flagKey string) (*featurediff.Table, error) {
	pf, err := rows.Open(src, src.size)
	if err != nil {
		return nil, err
	}
	cols := pf.Columns()
	t := &featurediff.Table{Path: m.Path, Geometry: pf.Geometry()}
	t.Key = r.chooseKey(m.Path, flagKey, cols, pf.KeyKind)
	keyAt, geomAt := -1, -1
	for i, c := range cols {
		switch {
		case c == t.Geometry:
			geomAt = i
		case t.Key.Column != nil && c == *t.Key.Column:
			keyAt = i
		}
		if c != t.Geometry {
			t.Columns = append(t.Columns, c)
		}
	}
	for _, rg := range changedRowGroups(m, other, pf.RowGroups()) {
		vals, err := pf.Read(rg)
		if err != nil {
			return nil, err
		}
		t.RowGroups = append(t.RowGroups, rg)
		for _, v := range vals {
			t.Rows = append(t.Rows, tableRow(v, keyAt, geomAt))
		}
	}
	return t, nil
}

// tableRow is a decoded row as featurediff wants it: the key as text,
// the geometry apart.
func tableRow(v []any, keyAt, geomAt int) featurediff.Row {
	row := featurediff.Row{Values: make([]any, 0, len(v))}
	for i, x := range v {
		switch i {
		case geomAt:
			row.Geometry, _ = x.([]byte)
			continue
		case keyAt:
			if x != nil {
				row.Key = fmt.Sprint(x)
			}
		}
		row.Values = append(row.Values, x)
	}
	return row
}

// chooseKey picks the key of the file at p: the flag, the config's
// first matching key line, else the one detected column; a named
// column the file lacks (or that cannot be a key) falls back to content.
func (r *Repo) chooseKey(p, flagKey string, cols []string, keyKind func(string) bool) featurediff.KeyChoice {
	named := func(col, source string) featurediff.KeyChoice {
		if keyKind(col) || source == featurediff.KeyDetected {
			return featurediff.KeyChoice{Column: &col, Source: source}
		}
		return featurediff.KeyChoice{Source: featurediff.KeyContent}
	}
	if flagKey != "" {
		return named(flagKey, featurediff.KeyFlag)
	}
	for _, k := range r.Config.Keys {
		if pattern.Match(k.Pattern, p) {
			return named(k.Column, featurediff.KeyConfig)
		}
	}
	var found []string
	for _, c := range cols {
		for _, d := range detectedKeys {
			if strings.EqualFold(c, d) && keyKind(c) {
				found = append(found, c)
			}
		}
	}
	if len(found) == 1 {
		return named(found[0], featurediff.KeyDetected)
	}
	return featurediff.KeyChoice{Source: featurediff.KeyContent}
}

// changedRowGroups lists the row groups of m (n of them) whose chunks
// other has in no row group: a row group is its chunks' hashes in key
// order, so one rewritten byte for byte elsewhere (another index, a
// rewrite's pair) is not decoded. Without other, or when m's keys are not
// the adapter's (a fallback), every row group.
func changedRowGroups(m, other *manifest.Manifest, n int) []int {
	sig := func(mm *manifest.Manifest) map[int]string {
		out := map[int]string{}
		if mm == nil || mm.Format != formats.Parquet {
			return out
		}
		var b strings.Builder
		for _, c := range mm.Chunks {
			k, ok := parquet.ParseKey(c.Key)
			if !ok || k.Gap || k.Part == parquet.Bloom || k.Part == parquet.ColumnIndex {
				continue
			}
			b.Reset()
			b.WriteString(out[k.RowGroup])
			b.WriteString(k.Column + "=" + c.ID.String() + ";")
			out[k.RowGroup] = b.String()
		}
		return out
	}
	mine, theirs := sig(m), sig(other)
	have := map[string]bool{}
	for _, s := range theirs {
		have[s] = true
	}
	var out []int
	for i := range n {
		s, ok := mine[i]
		if !ok || len(theirs) == 0 || !have[s] {
			out = append(out, i)
		}
	}
	return out
}

// flatgeobufTable decodes the feature records of m's blocks that other
// does not hold (every record without other, or of a working file).
func (r *Repo) flatgeobufTable(src *sizedReaderAt, m, other *manifest.Manifest, flagKey string) (*featurediff.Table, error) {
	s, err := flatgeobuf.ReadSchema(src, src.size)
	if err != nil {
		return nil, err
	}
	t := &featurediff.Table{Path: m.Path, Columns: s.Columns}
	t.Key = r.chooseKey(m.Path, flagKey, s.Columns, s.KeyKind)
	keyAt := -1
	for i, c := range s.Columns {
		if t.Key.Column != nil && c == *t.Key.Column {
			keyAt = i
		}
	}
	for _, rg := range changedBlocks(src, s.Records, other) {
		b := make([]byte, rg[1]-rg[0])
		if _, err := src.ReadAt(b, rg[0]); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		err := s.Decode(b, func(_ int, vals []any, wkb []byte) error {
			row := featurediff.Row{Values: vals, Geometry: wkb}
			if keyAt >= 0 && vals[keyAt] != nil {
				row.Key = fmt.Sprint(vals[keyAt])
			}
			t.Rows = append(t.Rows, row)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// changedBlocks returns the byte ranges of the feature records to decode:
// the runs of chunks other holds nowhere, when every run starts and ends
// on a record boundary (a block holds whole records; a record cut by
// content across chunks is not); else the whole record area.
func changedBlocks(src *sizedReaderAt, records int64, other *manifest.Manifest) [][2]int64 {
	all := [][2]int64{{records, src.size}}
	if src.file == nil || other == nil {
		return all
	}
	have := map[hashing.ID]bool{}
	for _, c := range other.Chunks {
		have[c.ID] = true
	}
	var out [][2]int64
	for off, pc := range src.file.Pieces(records, src.size) {
		if !pc.Chunk || have[pc.ID] {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == off {
			out[n-1][1] = off + pc.Len
		} else {
			out = append(out, [2]int64{max(off, records), off + pc.Len})
		}
	}
	for _, rg := range out {
		if !recordsFit(src, rg) {
			return all
		}
	}
	return out
}

// recordsFit reports whether the length prefixes from rg's start land
// exactly on its end (reading 4 bytes per record, from the chunks rg
// needs anyway).
func recordsFit(src *sizedReaderAt, rg [2]int64) bool {
	var pre [4]byte
	at := rg[0]
	for at < rg[1] {
		if _, err := src.ReadAt(pre[:], at); err != nil {
			return false
		}
		at += 4 + int64(binary.LittleEndian.Uint32(pre[:]))
	}
	return at == rg[1]
}
