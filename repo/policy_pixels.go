package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/pattern"
)

// pixelChurn is strict-profile's second half: a raster whose profile
// is unchanged but one of whose changed tiles holds the same pixels as
// before has been re-encoded (a writer that rewrote every tile, a new
// compression level), which the manifests alone cannot tell from an
// edit. The changed tiles of each matching TIFF are decoded in both
// versions (the old one stored, the new one in the work tree when work
// is set) until one is found unchanged; a codec this build cannot decode
// is not judged. --allow-reencode lets it pass.
func (r *Repo) pixelChurn(ctx context.Context, pols []Policy, changes []Change, work bool, opt PolicyOptions) ([]Violation, error) {
	if opt.AllowReencode {
		return nil, nil
	}
	var out []Violation
	for _, pol := range pols {
		if pol.Rule != RuleStrictProfile {
			continue
		}
		for _, c := range changes {
			if c.Old == nil || c.New == nil || c.Old.Format != formats.TIFF || c.New.Format != formats.TIFF ||
				!pattern.Match(pol.Pattern, c.Path) || diff.ProfileChange(c.Old, c.New) != "" {
				continue
			}
			key, err := r.sameTile(ctx, c.Old, c.New, work)
			if err != nil {
				return nil, fmt.Errorf("strict-profile: %s: %w", c.Path, err)
			}
			if key != "" {
				out = append(out, Violation{Path: c.Path, Rule: pol.String(),
					Reason: fmt.Sprintf("tile %s has new bytes but the same pixels (re-encoded); commit --allow-reencode if meant", key)})
			}
		}
	}
	return out, nil
}

// sameTile returns the first changed block of cur whose pixels equal
// old's, or "".
func (r *Repo) sameTile(ctx context.Context, old, cur *manifest.Manifest, work bool) (string, error) {
	was := make(map[string]manifest.Chunk, len(old.Chunks))
	for _, c := range old.Chunks {
		was[c.Key] = c
	}
	var changes []diff.ChunkChange
	for _, c := range cur.Chunks {
		if o, ok := was[c.Key]; ok && o.ID != c.ID {
			changes = append(changes, diff.ChunkChange{Key: c.Key})
		}
	}
	tiles := changedTiles(changes)
	if len(tiles) == 0 {
		return "", nil
	}
	pair, err := r.openPair(ctx, r.NewChunkReader(0, 0), old, cur, work)
	if err != nil {
		return "", err
	}
	defer pair.close()
	for i := range tiles {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		t := &tiles[i]
		err := pair.compare(t)
		var unsup *tiff.UnsupportedError
		switch {
		case errors.As(err, &unsup):
			return "", nil // not decodable here: not judged
		case err != nil:
			continue // blocks that do not compare (shape): an edit
		case t.ChangedPixels == 0:
			return t.Key, nil
		}
	}
	return "", nil
}
