package gc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store"
)

// RecordDir is the folder of expiry records among a store's named
// objects.
const RecordDir = "expired/"

// Record is the durable trace of one gc --expire: when it ran, the window
// it applied, the cut that window gave, and the refs it kept whatever
// their age. A commit older than Cut that Kept does not name lost the
// objects no kept commit shares; the record lets a reader of such a
// version say so instead of "not found". It lives in the store whose
// objects gc deleted, beside the registry, so every clone that reads that
// store (another host, a CI runner) sees it, and it lasts as long as what
// it explains.
type Record struct {
	Date       time.Time         `json:"date"`
	Window     string            `json:"window"`
	Cut        time.Time         `json:"cut"`
	ExpireTags bool              `json:"expire_tags,omitempty"`
	Kept       map[string]string `json:"kept"`
	// Refs are every ref gc saw, kept or not: a commit none of them
	// reaches was made after this gc (or on a branch already deleted, which
	// any gc collects), and this record does not explain it.
	Refs map[string]string `json:"refs,omitempty"`
	// Commits counts the commits the cut expired.
	Commits int `json:"commits_expired"`
}

// NewRecord describes exp, applied now with the window named window.
func NewRecord(exp *Expiry, window string, expireTags bool, now time.Time) *Record {
	return &Record{Date: now.UTC(), Window: window, Cut: exp.Before.UTC(), ExpireTags: expireTags, Kept: exp.Tips, Refs: exp.Refs, Commits: len(exp.Expired)}
}

// Expires reports whether rec's cut covers commit c: committed before the
// cut and named by no ref it kept. Whether c existed when rec was made is
// Index's question.
func (rec *Record) Expires(c *gitdb.Commit) bool {
	if !c.Committer.When.Before(rec.Cut) {
		return false
	}
	for _, h := range rec.Kept {
		if h == c.Hash.String() {
			return false
		}
	}
	return true
}

// PutRecord stores rec in s, when s keeps named objects, under a name of
// its own (records are never replaced) and returns that name; "" when s
// keeps none.
func PutRecord(ctx context.Context, s store.Store, rec *Record) (string, error) {
	reg, ok := s.(store.Registry)
	if !ok {
		return "", nil
	}
	var salt [4]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return "", err
	}
	name := RecordDir + rec.Date.Format("20060102-150405") + "-" + hex.EncodeToString(salt[:]) + ".json"
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	if err := reg.PutNamed(ctx, name, append(b, '\n')); err != nil {
		return "", fmt.Errorf("record the expiry in store %s: %w", s, err)
	}
	return name, nil
}

// ReadRecords returns the expiry records of stores, each once by name,
// oldest first. A store that keeps no named objects has none; a record
// that cannot be read or parsed is an error naming it.
func ReadRecords(ctx context.Context, stores ...store.Store) ([]*Record, error) {
	seen := map[string]bool{}
	var out []*Record
	for _, s := range stores {
		reg, ok := s.(store.Registry)
		if !ok {
			continue
		}
		var names []string
		err := reg.ListNamed(ctx, RecordDir, func(n string) error {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list expiry records of store %s: %w", s, err)
		}
		for _, n := range names {
			b, err := reg.GetNamed(ctx, n)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read expiry record %s of store %s: %w", n, s, err)
			}
			rec := &Record{}
			if err := json.Unmarshal(b, rec); err != nil {
				return nil, fmt.Errorf("expiry record %s of store %s: %w", n, s, err)
			}
			out = append(out, rec)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out, nil
}

// History is what Index reads of Git: the commits reachable from tips,
// and whether a commit is there.
type History interface {
	History(tips []gitdb.Hash) ([]*gitdb.Commit, error)
	ReadCommit(h gitdb.Hash) (*gitdb.Commit, error)
}

// Index tells which record expired a commit: the first (oldest) whose cut
// covers it and whose refs reached it, so a commit made after a gc, even
// with an older committer date, is never taken for one it expired.
type Index struct {
	recs []*Record
	g    History
	had  []map[gitdb.Hash]bool // per record, the history its refs reach; read at first need
}

// NewIndex indexes recs (oldest first) over g.
func NewIndex(recs []*Record, g History) *Index {
	return &Index{recs: recs, g: g, had: make([]map[gitdb.Hash]bool, len(recs))}
}

// Empty reports whether there is no record at all.
func (x *Index) Empty() bool { return len(x.recs) == 0 }

// Find returns the record that expired c, or nil.
func (x *Index) Find(c *gitdb.Commit) (*Record, error) {
	for i, rec := range x.recs {
		if !rec.Expires(c) {
			continue
		}
		if x.had[i] == nil {
			h, err := x.history(rec)
			if err != nil {
				return nil, err
			}
			x.had[i] = h
		}
		if x.had[i][c.Hash] {
			return rec, nil
		}
	}
	return nil, nil
}

// history is the set of commits rec's refs reach in x.g (those x.g still
// has; a record from before refs were recorded: its kept refs).
func (x *Index) history(rec *Record) (map[gitdb.Hash]bool, error) {
	refs := rec.Refs
	if refs == nil {
		refs = rec.Kept
	}
	var tips []gitdb.Hash
	for _, h := range refs {
		if _, err := x.g.ReadCommit(gitdb.HashOf(h)); err == nil {
			tips = append(tips, gitdb.HashOf(h))
		}
	}
	commits, err := x.g.History(tips)
	if err != nil {
		return nil, err
	}
	had := make(map[gitdb.Hash]bool, len(commits))
	for _, c := range commits {
		had[c.Hash] = true
	}
	return had, nil
}
