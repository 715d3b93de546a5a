package featurediff

// Key sources, as KeyChoice.Source spells them.
const (
	KeyConfig   = "config"   // a `key = COLUMN PATTERN` line of .chunkvc/config
	KeyFlag     = "flag"     // --key COLUMN
	KeyDetected = "detected" // a single id-like column (or the FlatGeobuf fid)
	KeyContent  = "content"  // no key: rows are matched by content hash
)

// Change kinds, as Change.Change spells them.
const (
	Added    = "added"
	Removed  = "removed"
	Modified = "modified"
	Moved    = "moved"
)

// KeyChoice is the key a file's rows were paired by; Column is nil for
// KeyContent.
type KeyChoice struct {
	Column *string `json:"column"`
	Source string  `json:"source"`
}

// FileSummary counts one file's changes. A moved row counts in MovedOut
// of the file it left and MovedIn of the one it joined.
type FileSummary struct {
	Path      string    `json:"path"`
	Key       KeyChoice `json:"key"`
	Added     int       `json:"added"`
	Removed   int       `json:"removed"`
	Modified  int       `json:"modified"`
	MovedIn   int       `json:"moved_in"`
	MovedOut  int       `json:"moved_out"`
	BytesRead int64     `json:"bytes_read"`
	// RowGroups lists the row groups (Parquet) decoded on the new side,
	// RowGroupsOld on the old side; FlatGeobuf files leave them empty.
	RowGroups    []int `json:"row_groups_read,omitempty"`
	RowGroupsOld []int `json:"row_groups_read_old,omitempty"`
}

// Column is one column's old and new value (nil where absent); geometry
// columns carry GeoJSON geometry objects.
type Column struct {
	Name string `json:"name"`
	Old  any    `json:"old"`
	New  any    `json:"new"`
}

// Change is one feature that differs. Columns lists the changed columns
// of a modified or moved feature, and every column of an added (Old nil)
// or removed (New nil) one.
type Change struct {
	Change      string      `json:"change"`
	Key         string      `json:"key"`
	Path        string      `json:"path"`
	FromPath    string      `json:"from_path,omitempty"`
	BBoxOld     *[4]float64 `json:"bbox_old"`
	BBoxNew     *[4]float64 `json:"bbox_new"`
	GeometryOld *Geometry   `json:"geometry_old"`
	GeometryNew *Geometry   `json:"geometry_new"`
	Columns     []Column    `json:"columns"`
}

// Duplicate is a key held by more than one row of one revision; Paths
// names each row's file (a path twice when one file holds it twice).
type Duplicate struct {
	Key   string   `json:"key"`
	Paths []string `json:"paths"`
}

// Totals counts every change, listed or not.
type Totals struct {
	Added    int `json:"added"`
	Removed  int `json:"removed"`
	Modified int `json:"modified"`
	Moved    int `json:"moved"`
}

// Features is the "features" object of diff --json --features.
type Features struct {
	Files      []FileSummary `json:"files"`
	Changes    []Change      `json:"changes"`
	Duplicates []Duplicate   `json:"duplicates"`
	Totals     Totals        `json:"totals"`
	// Truncated is set when Changes holds fewer than Totals counts
	// (Input.Limit).
	Truncated bool  `json:"truncated"`
	BytesRead int64 `json:"bytes_read"`
	// Warnings are duplicates and files whose features could not be
	// compared, in words.
	Warnings []string `json:"warnings,omitempty"`
}
