package repo

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/diffscan"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// LogFile is one data file changed by a commit.
type LogFile struct {
	Path      string     `json:"path"`
	Status    FileStatus `json:"status"` // added, modified, deleted
	Format    string     `json:"format,omitempty"`
	Size      int64      `json:"size"`
	Chunks    int        `json:"chunks"`
	Added     int        `json:"chunks_added"`
	Removed   int        `json:"chunks_removed"`
	Changed   int        `json:"chunks_changed"`
	Unchanged int        `json:"chunks_unchanged"`
	NewBytes  int64      `json:"new_bytes"`
	// OldPath and SharedBytes, for a rewritten file: the deleted file it
	// was written from, and the bytes of its chunks that one holds (its
	// other figures count against that file).
	OldPath     string `json:"old_path,omitempty"`
	SharedBytes int64  `json:"shared_bytes,omitempty"`
}

// LogEntry is one commit.
type LogEntry struct {
	Commit  string    `json:"commit"`
	Parents []string  `json:"parents"`
	Author  string    `json:"author"`
	Email   string    `json:"email"`
	Date    time.Time `json:"date"`
	Message string    `json:"message"`
	Files   []LogFile `json:"files"`
}

// Log walks first parents from rev ("" = HEAD), newest first, at most max
// commits (0 = all), reporting the data files each commit changed.
func (r *Repo) Log(rev string, max int) ([]LogEntry, error) {
	c, err := r.git.Resolve(rev)
	if err != nil {
		return nil, err
	}
	var out []LogEntry
	for c != nil && (max <= 0 || len(out) < max) {
		var parent *gitdb.Commit
		if len(c.ParentHashes) > 0 {
			if parent, err = r.git.ReadCommit(c.ParentHashes[0]); err != nil {
				return nil, fmt.Errorf("commit %s: parent: %w", c.Hash, err)
			}
		}
		files, err := r.changedFiles(parent, c)
		if err != nil {
			return nil, err
		}
		e := LogEntry{Commit: c.Hash.String(), Author: c.Author.Name, Email: c.Author.Email,
			Date: c.Author.When, Message: strings.TrimRight(c.Message, "\n"), Files: files}
		for _, p := range c.ParentHashes {
			e.Parents = append(e.Parents, p.String())
		}
		out = append(out, e)
		c = parent
	}
	return out, nil
}

// changedFiles compares the manifests of two commits (a may be nil).
func (r *Repo) changedFiles(a, b *gitdb.Commit) ([]LogFile, error) {
	ma, err := r.git.manifestBlobs(a)
	if err != nil {
		return nil, err
	}
	mb, err := r.git.manifestBlobs(b)
	if err != nil {
		return nil, err
	}
	var out []LogFile
	read := func(h gitdb.Hash, p string) (*manifest.Manifest, error) {
		m, _, err := r.git.readManifestBlob(h, p)
		return m, err
	}
	for p, hb := range mb {
		ha, ok := ma[p]
		if ok && ha == hb {
			continue
		}
		newM, err := read(hb, p)
		if err != nil {
			return nil, err
		}
		var oldM *manifest.Manifest
		status := FileAdded
		if ok {
			status = FileModified
			if oldM, err = read(ha, p); err != nil {
				return nil, err
			}
		}
		d := manifest.Diff(oldM, newM)
		out = append(out, LogFile{Path: p, Status: status, Format: newM.Format, Size: newM.Size, Chunks: len(newM.Chunks),
			Added: d.Added, Removed: d.Removed, Changed: d.Changed, Unchanged: d.Unchanged, NewBytes: d.NewBytes})
	}
	for p := range ma {
		if _, ok := mb[p]; !ok {
			out = append(out, LogFile{Path: p, Status: FileDeleted})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return r.pairRewrites(out, ma, mb)
}

// pairRewrites turns an added file and the deleted file that holds most
// of its chunks (diffscan.Rewrites) into one rewritten file, its figures
// counted against the deleted one, as diff pairs them.
func (r *Repo) pairRewrites(files []LogFile, ma, mb map[string]gitdb.Hash) ([]LogFile, error) {
	var deleted, added []*manifest.Manifest
	var di, ai []int
	for i, f := range files {
		if f.Status != FileAdded && f.Status != FileDeleted {
			continue
		}
		h, p := mb[f.Path], f.Path
		if f.Status == FileDeleted {
			h = ma[p]
		}
		m, _, err := r.git.readManifestBlob(h, p)
		if err != nil {
			return nil, err
		}
		if f.Status == FileDeleted {
			deleted, di = append(deleted, m), append(di, i)
		} else {
			added, ai = append(added, m), append(ai, i)
		}
	}
	if len(deleted) == 0 || len(added) == 0 {
		return files, nil
	}
	drop := map[int]bool{}
	for k, j := range diffscan.Rewrites(deleted, added) {
		if j < 0 {
			continue
		}
		oldM, newM := deleted[j], added[k]
		d := manifest.Diff(oldM, newM)
		f := &files[ai[k]]
		f.Status, f.OldPath, f.SharedBytes = FileRewritten, oldM.Path, diff.SharedBytes(newM, d)
		f.Added, f.Removed, f.Changed, f.Unchanged, f.NewBytes = d.Added, d.Removed, d.Changed, d.Unchanged, d.NewBytes
		drop[di[j]] = true
	}
	out := files[:0]
	for i, f := range files {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return out, nil
}
