package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/featurediff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/formats/parquet/rows"
	"github.com/chunkvc/chunkvc/manifest"
)

// lakeDuplicates looks for the keys that rows arrived under (added,
// moved in) elsewhere in the new revision's lake: the Parquet and
// FlatGeobuf files that share a top directory with a changed one. Of a
// Parquet file, row groups already decoded are skipped; of the others,
// only those whose key statistics cover one of the keys have their key
// column read (nothing else). A FlatGeobuf file has no statistics: its
// records are decoded. A key found is a duplicate. The working tree is
// not searched.
func (r *Repo) lakeDuplicates(ctx context.Context, cr *ChunkReader, res *diff.Result, f *featurediff.Features) error {
	if res.ToCommit == "" {
		return nil
	}
	arrived := map[string]string{} // key → the path it arrived in
	col := ""
	decoded := map[string][]int{}
	tops := map[string]bool{}
	for _, fs := range f.Files {
		decoded[fs.Path] = fs.RowGroups
		if top, _, ok := strings.Cut(fs.Path, "/"); ok {
			tops[top] = true
		}
	}
	keyOf := map[string]*string{}
	for _, fs := range f.Files {
		keyOf[fs.Path] = fs.Key.Column
	}
	for _, ch := range f.Changes {
		if k := keyOf[ch.Path]; k != nil && (ch.Change == featurediff.Added || ch.Change == featurediff.Moved) {
			arrived[ch.Key], col = ch.Path, *k
		}
	}
	if len(arrived) == 0 || len(tops) == 0 {
		return nil
	}
	s, err := r.Snapshot(res.ToCommit)
	if err != nil {
		return err
	}
	blobs, err := r.git.manifestBlobs(s.c)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(blobs))
	for p := range blobs {
		if top, _, ok := strings.Cut(p, "/"); ok && tops[top] {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		m, ok, err := s.Manifest(p)
		if err != nil || !ok {
			continue
		}
		var found []string
		var n int64
		switch m.Format {
		case formats.Parquet:
			found, n, err = r.keysIn(ctx, cr, m, res.ToCommit, col, arrived, decoded[p])
		case formats.FlatGeobuf:
			found, n, err = r.featureKeysIn(ctx, cr, m, res.ToCommit, col, arrived)
		default:
			continue
		}
		f.BytesRead += n
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, k := range found {
			d := featurediff.Duplicate{Key: k, Paths: []string{arrived[k], p}}
			sort.Strings(d.Paths)
			f.Duplicates = append(f.Duplicates, d)
			f.Warnings = append(f.Warnings, fmt.Sprintf("duplicate key %s in the new revision: %s", k, strings.Join(d.Paths, ", ")))
		}
	}
	return nil
}

// keysIn returns the keys of want that column col of file m holds in
// row groups other than skip, and the bytes read to know.
func (r *Repo) keysIn(ctx context.Context, cr *ChunkReader, m *manifest.Manifest, commit, col string, want map[string]string, skip []int) ([]string, int64, error) {
	src, err := r.openSide(ctx, cr, m, commit)
	if err != nil {
		return nil, 0, err
	}
	defer src.close()
	pf, err := rows.Open(src, src.size)
	if err != nil {
		return nil, src.read(), err
	}
	if !pf.KeyKind(col) {
		return nil, src.read(), nil
	}
	var found []string
	for rg := range pf.RowGroups() {
		if slices.Contains(skip, rg) {
			continue
		}
		if lo, hi, ok := pf.Bounds(rg, col); ok && !anyWithin(want, lo, hi) {
			continue
		}
		vals, err := pf.ColumnValues(rg, col)
		if err != nil {
			return nil, src.read(), err
		}
		for _, v := range vals {
			if k := fmt.Sprint(v); want[k] != "" {
				found = append(found, k)
			}
		}
	}
	return found, src.read(), nil
}

// featureKeysIn returns the keys of want that property col of FlatGeobuf
// file m holds, and the bytes read to know: every record is decoded. In
// the file a key arrived in (want[key]), it must be there twice.
func (r *Repo) featureKeysIn(ctx context.Context, cr *ChunkReader, m *manifest.Manifest, commit, col string, want map[string]string) ([]string, int64, error) {
	src, err := r.openSide(ctx, cr, m, commit)
	if err != nil {
		return nil, 0, err
	}
	defer src.close()
	s, err := flatgeobuf.ReadSchema(src, src.size)
	if err != nil {
		return nil, src.read(), err
	}
	at := slices.Index(s.Columns, col)
	if at < 0 {
		return nil, src.read(), nil
	}
	b := make([]byte, src.size-s.Records)
	if _, err := src.ReadAt(b, s.Records); err != nil && !errors.Is(err, io.EOF) {
		return nil, src.read(), err
	}
	seen := map[string]int{}
	err = s.Decode(b, func(_ int, vals []any, _ []byte) error {
		if vals[at] != nil {
			if k := fmt.Sprint(vals[at]); want[k] != "" {
				seen[k]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, src.read(), err
	}
	var found []string
	for k, n := range seen {
		if want[k] != m.Path || n > 1 {
			found = append(found, k)
		}
	}
	sort.Strings(found)
	return found, src.read(), nil
}

// anyWithin reports whether a key of want lies in [lo, hi] (integer or
// string statistics); unknown kinds say yes.
func anyWithin(want map[string]string, lo, hi any) bool {
	ilo, okLo := asInt(lo)
	ihi, okHi := asInt(hi)
	slo, sOKLo := lo.(string)
	shi, sOKHi := hi.(string)
	for k := range want {
		switch {
		case okLo && okHi:
			if v, err := strconv.ParseInt(k, 10, 64); err == nil && v >= ilo && v <= ihi {
				return true
			}
		case sOKLo && sOKHi:
			if k >= slo && k <= shi {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	}
	return 0, false
}
