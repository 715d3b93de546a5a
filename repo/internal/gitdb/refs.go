package gitdb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/internal/writeback"
)

var (
	// ErrBrokenRef means a ref's file exists but holds no valid value
	// (empty, truncated or garbage), or HEAD cannot be read. Nothing may
	// build on it: a commit would start a new root and cut the history.
	ErrBrokenRef = errors.New("broken git reference")
	// ErrRefLocked means "<ref>.lock" exists: another git or chunkvc is
	// updating the ref, or one was killed while it did.
	ErrRefLocked = errors.New("git reference is locked")
	// ErrRefMoved means the ref no longer holds the value the update
	// expected (another writer moved it meanwhile).
	ErrRefMoved = errors.New("git reference moved")
)

// maxSymrefDepth bounds symbolic ref chains, as git does.
const maxSymrefDepth = 5

// Refs reads and updates the refs of one repository.
type Refs struct {
	dir string // the .git directory
}

// NewRefs returns the refs of the repository whose .git directory is dir.
func NewRefs(gitDir string) *Refs { return &Refs{dir: gitDir} }

// Head reports what HEAD names: the ref it points to ("refs/heads/main"),
// or, detached, "" and the commit it holds.
func (rs *Refs) Head() (branch string, detached Hash, err error) {
	v, err := rs.readLoose("HEAD")
	if errors.Is(err, fs.ErrNotExist) {
		return "", ZeroHash, fmt.Errorf("%s: %w: HEAD is missing", rs.dir, ErrBrokenRef)
	}
	if err != nil {
		return "", ZeroHash, err
	}
	if v.symref != "" {
		return v.symref, ZeroHash, nil
	}
	return "", v.hash, nil
}

// Read returns the object name ref name holds, following symbolic refs.
// ok is false when the ref does not exist at all (an unborn branch); a
// ref whose file exists but cannot be parsed is ErrBrokenRef.
func (rs *Refs) Read(name string) (h Hash, ok bool, err error) {
	for range maxSymrefDepth {
		if err := checkRefName(name); err != nil {
			return ZeroHash, false, err
		}
		v, err := rs.readLoose(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return rs.readPacked(name)
		case err != nil:
			return ZeroHash, false, err
		case v.symref != "":
			name = v.symref
			continue
		}
		return v.hash, true, nil
	}
	return ZeroHash, false, fmt.Errorf("%s: %w: symbolic refs nest deeper than %d", name, ErrBrokenRef, maxSymrefDepth)
}

// refValue is what a loose ref file holds.
type refValue struct {
	hash   Hash
	symref string
}

// readLoose reads the loose file of ref name. A missing file is
// fs.ErrNotExist; anything but a hash or "ref: <name>" is ErrBrokenRef.
func (rs *Refs) readLoose(name string) (refValue, error) {
	p := rs.path(name)
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refValue{}, err
		}
		return refValue{}, fmt.Errorf("%s: %w: %w", name, ErrBrokenRef, err)
	}
	if fi.IsDir() {
		return refValue{}, fs.ErrNotExist // refs/heads/a when a/b exists: not a ref
	}
	if !fi.Mode().IsRegular() {
		return refValue{}, fmt.Errorf("%s: %w: %s is not a regular file", name, ErrBrokenRef, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return refValue{}, fmt.Errorf("%s: %w: %w", name, ErrBrokenRef, err)
	}
	s := strings.TrimRight(string(b), "\n")
	if target, ok := strings.CutPrefix(s, "ref: "); ok {
		target = strings.TrimSpace(target)
		if err := checkRefName(target); err != nil {
			return refValue{}, fmt.Errorf("%s: %w: %w", name, ErrBrokenRef, err)
		}
		return refValue{symref: target}, nil
	}
	h, err := ParseHash(strings.TrimSpace(s))
	if err != nil {
		what := fmt.Sprintf("%d bytes that are not an object name", len(b))
		if len(b) == 0 {
			what = "an empty file"
		}
		return refValue{}, fmt.Errorf("%s: %w: %s is %s", name, ErrBrokenRef, p, what)
	}
	return refValue{hash: h}, nil
}

// readPacked looks name up in packed-refs.
func (rs *Refs) readPacked(name string) (Hash, bool, error) {
	f, err := os.Open(filepath.Join(rs.dir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return ZeroHash, false, nil
	}
	if err != nil {
		return ZeroHash, false, fmt.Errorf("%s: %w: packed-refs: %w", name, ErrBrokenRef, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hex, ref, ok := bytes.Cut(line, []byte{' '})
		if !ok || string(ref) != name {
			continue
		}
		h, err := ParseHash(string(hex))
		if err != nil {
			return ZeroHash, false, fmt.Errorf("%s: %w: packed-refs: %w", name, ErrBrokenRef, err)
		}
		return h, true, nil
	}
	if err := sc.Err(); err != nil {
		return ZeroHash, false, fmt.Errorf("%s: %w: packed-refs: %w", name, ErrBrokenRef, err)
	}
	return ZeroHash, false, nil
}

// Ident is a person and a time: a commit's author or committer, or who
// moved a ref (for the reflog).
type Ident struct {
	Name, Email string
	When        time.Time
}

// Update is one compare-and-set of a ref.
type Update struct {
	Name string // "refs/heads/main", or "HEAD" when HEAD is detached
	// Old is the value the caller read; ZeroHash means the ref must not
	// exist yet (the first commit on a branch).
	Old, New Hash
	Message  string // the reflog message, e.g. "commit: add tiles"
	Who      Ident
}

// Update moves u.Name from u.Old to u.New the way `git update-ref` does:
// under "<ref>.lock", checking the old value, fsyncing the new one,
// appending to the ref's reflog (and HEAD's, when HEAD points at it)
// before the lock is renamed over the ref.
func (rs *Refs) Update(u Update) (err error) {
	if err := checkRefName(u.Name); err != nil {
		return err
	}
	p := rs.path(u.Name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	lock := p + ".lock"
	owners := lockOwners{rs.dir}
	f, err := owners.createLock(lock) // a killed chunkvc's is taken over (lockowner.go)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("update %s: %w: %s exists; if no git or chunkvc process is running, remove it", u.Name, ErrRefLocked, lock)
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(lock)
		}
		owners.disown(lock) // renamed or removed
	}()
	if err := rs.checkOld(u); err != nil {
		return err
	}
	if _, err := f.WriteString(u.New.String() + "\n"); err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	if err := rs.log(u); err != nil {
		return err
	}
	if err := os.Rename(lock, p); err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	if err := writeback.SyncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	return nil
}

// checkOld verifies, under the lock, that the ref still holds u.Old.
func (rs *Refs) checkOld(u Update) error {
	var cur Hash
	var ok bool
	var err error
	if u.Name == "HEAD" {
		var v refValue
		v, err = rs.readLoose("HEAD")
		if err == nil && v.symref != "" {
			return fmt.Errorf("update HEAD: %w: HEAD now points at %s", ErrRefMoved, v.symref)
		}
		cur, ok = v.hash, err == nil
	} else {
		cur, ok, err = rs.Read(u.Name)
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", u.Name, err)
	}
	if !ok && !u.Old.IsZero() {
		return fmt.Errorf("update %s: %w: it was %s and is now gone", u.Name, ErrRefMoved, u.Old)
	}
	if ok && cur != u.Old {
		was := u.Old.String()
		if u.Old.IsZero() {
			was = "unborn"
		}
		return fmt.Errorf("update %s: %w: it was %s and is now %s", u.Name, ErrRefMoved, was, cur)
	}
	return nil
}

// log appends u's reflog entry for the ref and, when HEAD points at it,
// for HEAD, as git does with core.logAllRefUpdates (its default in a
// repository with a work tree).
func (rs *Refs) log(u Update) error {
	names := []string{u.Name}
	if u.Name != "HEAD" {
		if v, err := rs.readLoose("HEAD"); err == nil && v.symref == u.Name {
			names = append(names, "HEAD")
		}
	}
	line := ReflogLine(u)
	for _, n := range names {
		if !rs.logged(n) {
			continue
		}
		if err := appendLine(filepath.Join(rs.dir, "logs", filepath.FromSlash(n)), line); err != nil {
			return fmt.Errorf("update %s: reflog of %s: %w", u.Name, n, err)
		}
	}
	return nil
}

// logged reports whether git keeps a reflog for name: HEAD, branches,
// remote-tracking branches and notes, or any ref whose log exists.
func (rs *Refs) logged(name string) bool {
	if name == "HEAD" || strings.HasPrefix(name, "refs/heads/") ||
		strings.HasPrefix(name, "refs/remotes/") || strings.HasPrefix(name, "refs/notes/") {
		return true
	}
	_, err := os.Lstat(filepath.Join(rs.dir, "logs", filepath.FromSlash(name)))
	return err == nil
}

// ReflogLine is the reflog entry for u, as git writes it.
func ReflogLine(u Update) string {
	clean := func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' {
			return -1
		}
		return r
	}
	when := u.Who.When
	if when.IsZero() {
		when = time.Now()
	}
	return fmt.Sprintf("%s %s %s <%s> %d %s\t%s\n", u.Old, u.New,
		strings.Map(clean, u.Who.Name), strings.Map(clean, u.Who.Email),
		when.Unix(), when.Format("-0700"), reflogMessage(u.Message))
}

// reflogMessage folds a message onto one line as git does: every run of
// whitespace becomes one space, and none leads or trails.
func reflogMessage(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}

// appendLine appends line to the file p (created with its folders) in one
// write and fsyncs it.
func appendLine(p, line string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (rs *Refs) path(name string) string { return filepath.Join(rs.dir, filepath.FromSlash(name)) }

// checkRefName accepts HEAD and names under refs/ that cannot leave the
// .git directory or collide with a lock file.
func checkRefName(name string) error {
	if name == "HEAD" {
		return nil
	}
	if !strings.HasPrefix(name, "refs/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".lock") {
		return fmt.Errorf("%q: not a ref name", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." || strings.ContainsAny(el, "\x00\\ ~^:?*[") {
			return fmt.Errorf("%q: not a ref name", name)
		}
	}
	return nil
}

// LastLogged returns the newest value the reflog of name records, for
// telling a user how to mend a broken ref.
func (rs *Refs) LastLogged(name string) (Hash, bool) {
	b, err := os.ReadFile(filepath.Join(rs.dir, "logs", filepath.FromSlash(name)))
	if err != nil {
		return ZeroHash, false
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) < 2 {
			continue
		}
		if h, err := ParseHash(f[1]); err == nil && !h.IsZero() {
			return h, true
		}
	}
	return ZeroHash, false
}

// List calls fn for every ref under refs/ that holds an object name,
// loose or packed (a loose ref hides its packed value), in no particular
// order. Symbolic refs are left out (their targets are listed), and so are
// lock files: a git or chunkvc updating a ref meanwhile holds
// "<ref>.lock", whose bytes are not a value yet. A loose ref that cannot
// be read is ErrBrokenRef: whoever walks every ref to keep what they name
// (gc) must not skip one.
func (rs *Refs) List(fn func(name string, h Hash) error) error {
	seen := map[string]bool{}
	root := filepath.Join(rs.dir, "refs")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone meanwhile: a ref deleted or packed
		}
		if err != nil {
			return fmt.Errorf("list refs: %w", err)
		}
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(rs.dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if checkRefName(name) != nil {
			return nil // not a name git would give a ref
		}
		v, err := rs.readLoose(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		}
		seen[name] = true
		if v.symref != "" {
			return nil
		}
		return fn(name, v.hash)
	})
	if err != nil {
		return err
	}
	return rs.listPacked(func(name string, h Hash) error {
		if seen[name] {
			return nil
		}
		return fn(name, h)
	})
}

// listPacked calls fn for every ref in packed-refs.
func (rs *Refs) listPacked(fn func(name string, h Hash) error) error {
	f, err := os.Open(filepath.Join(rs.dir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: packed-refs: %w", ErrBrokenRef, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hex, ref, ok := bytes.Cut(line, []byte{' '})
		h, err := ParseHash(string(hex))
		if !ok || err != nil {
			return fmt.Errorf("%w: packed-refs: line %q", ErrBrokenRef, line)
		}
		if err := fn(string(ref), h); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: packed-refs: %w", ErrBrokenRef, err)
	}
	return nil
}
