package diff

import "github.com/chunkvc/chunkvc/geom"

// ChunkConflict marks, in the map a conflict view draws (ConflictMap), a
// chunk key a stopped merge could not settle.
const ChunkConflict Change = "conflict"

// ConflictReport is what a stopped merge, cherry-pick or rebase left
// conflicted in the tracked data files (chunkvc diff --conflicts): per
// file, the keys the merge driver or chunkvc merge could not settle, with
// their footprints and the reason.
type ConflictReport struct {
	// Operation is "merge", "cherry-pick" or "rebase"; "" when nothing
	// is stopped (Files is then empty).
	Operation string           `json:"operation"`
	Ours      string           `json:"ours,omitempty"`   // HEAD's commit
	Theirs    string           `json:"theirs,omitempty"` // MERGE_HEAD, CHERRY_PICK_HEAD or REBASE_HEAD
	Files     []ConflictedFile `json:"files"`
}

// ConflictedFile is one data file whose manifest git left conflicted.
type ConflictedFile struct {
	Path   string `json:"path"`
	Format string `json:"format,omitempty"`
	CRS    string `json:"crs,omitempty"`
	// Conflicts are the driver's conflicts in key order; one without a
	// key concerns the whole file (a deletion against an edit, different
	// TIFF structures, a split manifest chunkvc merge has not seen yet).
	Conflicts []Conflict `json:"conflicts"`
}

// Conflict is one conflict: a chunk key (or "" for the whole file), its
// footprint in the file's CRS when known, and why it conflicts.
type Conflict struct {
	Key    string     `json:"key,omitempty"`
	BBox   *geom.BBox `json:"bbox,omitempty"`
	Reason string     `json:"reason"`
}

// Count is the number of conflicts over all files.
func (r *ConflictReport) Count() int {
	n := 0
	for _, f := range r.Files {
		n += len(f.Conflicts)
	}
	return n
}
