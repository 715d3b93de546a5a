package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
)

// ErrUnsafePath means chunkvc refused to read or write a path because a
// directory on the way to it is a symbolic link or not a directory, or
// the file itself is not what it must be: nothing is ever written (or
// read) through a link that could lead out of the work tree.
var ErrUnsafePath = errors.New("unsafe path")

// unsafePathError names the path refused and the element of it at fault.
type unsafePathError struct {
	op, path string // "write", "read", "remove"; the path as shown
	at, why  string // the element at fault, as shown; what is wrong with it
}

func (e *unsafePathError) Error() string {
	if e.at == e.path {
		return fmt.Sprintf("refusing to %s %s: it %s", e.op, e.path, e.why)
	}
	return fmt.Sprintf("refusing to %s %s: %s %s", e.op, e.path, e.at, e.why)
}

func (e *unsafePathError) Is(target error) bool { return target == ErrUnsafePath }

// Refuse returns the error (ErrUnsafePath) for refusing to op ("write",
// "read", "remove") the file p because it why ("is a symbolic link"): for
// the checks a caller makes of a file itself, beyond the tree's own.
func Refuse(op, p, why string) error {
	return &unsafePathError{op: op, path: p, at: p, why: why}
}

// Tree reads and writes files beneath a trusted directory, base (the work
// tree's root, or .git), and never outside it. Paths are slash paths
// relative to base. Every directory between base and a file must be a real
// directory: a symbolic link or a file in the way is refused
// (ErrUnsafePath), and a missing directory is made, one at a time. Refusing
// rather than replacing a linked directory is deliberate: it may be the
// user's own layout (a data directory on another disk), which chunkvc must
// neither write through nor take apart.
//
// The file itself is never followed. It is written to a temp file beside
// it and renamed over it, so a symbolic link there is replaced, never
// written through: the paths chunkvc writes this way are its own
// (manifest copies, state files, or a data file that checkout has already
// checked is no link), and the link held nothing of the user's. A file is
// read only if it is a regular file.
//
// Each directory is checked with Lstat, then opened (os.Root) and checked
// to be the very directory Lstat saw; every operation goes through that
// handle, so a directory swapped for a link after the check cannot lead
// anywhere else. The directories of the last path used stay open: a batch
// of files in sorted order opens each directory once.
type Tree struct {
	base  string
	label string // how paths are shown: "" for the work tree, ".git"

	mu   sync.Mutex
	open []openDir // open[0] is base; open[i] is the child of open[i-1]
}

type openDir struct {
	name string
	root *os.Root
}

// New returns the tree beneath base. label is how its paths are shown in
// errors: "" shows them as they are (the work tree), ".git" as
// ".git/<path>". Nothing is opened until the first operation.
func New(base, label string) *Tree { return &Tree{base: base, label: label} }

// Close releases the open directories; the tree may be used again.
func (t *Tree) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.truncate(0)
}

func (t *Tree) truncate(n int) {
	for _, d := range t.open[min(n, len(t.open)):] {
		d.root.Close()
	}
	t.open = t.open[:min(n, len(t.open))]
}

// Show returns rel as the tree's errors show it: as it is for the work
// tree, under the label (".git/rel") otherwise.
func (t *Tree) Show(rel string) string {
	if t.label == "" {
		return rel
	}
	if rel == "." {
		return t.label
	}
	return t.label + "/" + rel
}

// fail gives err the operation and path it was met on.
func (t *Tree) fail(op, rel string, err error) error {
	var ue *unsafePathError
	if errors.As(err, &ue) {
		e := *ue
		e.op, e.path = op, t.Show(rel)
		return &e
	}
	return fmt.Errorf("%s %s: %w", op, t.Show(rel), err)
}

func checkRel(rel string) error {
	if !fs.ValidPath(rel) || strings.Contains(rel, `\`) {
		return fmt.Errorf("%w: %q is not a clean relative path", ErrUnsafePath, rel)
	}
	return nil
}

// dir returns the directory rel (a slash path, "." for base), checked as
// the type's comment says and made if missing when create is set; without
// create a missing one is an error that is fs.ErrNotExist. t.mu is held.
func (t *Tree) dir(rel string, create bool) (*os.Root, error) {
	if len(t.open) == 0 {
		root, err := os.OpenRoot(t.base)
		if err != nil {
			return nil, err
		}
		t.open = []openDir{{"", root}}
	}
	var parts []string
	if rel != "." {
		parts = strings.Split(rel, "/")
	}
	k := 0
	for k < len(parts) && k+1 < len(t.open) && t.open[k+1].name == parts[k] {
		k++
	}
	t.truncate(k + 1)
	for i := k; i < len(parts); i++ {
		sub, err := t.enter(t.open[len(t.open)-1].root, parts[i], strings.Join(parts[:i+1], "/"), create)
		if err != nil {
			return nil, err
		}
		t.open = append(t.open, openDir{parts[i], sub})
	}
	return t.open[len(t.open)-1].root, nil
}

// enter opens parent's child name (so far, from base) as a directory.
func (t *Tree) enter(parent *os.Root, name, sofar string, create bool) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = parent.Mkdir(name, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			fi, err = parent.Lstat(name)
		}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &unsafePathError{at: t.Show(sofar), why: "is a symbolic link"}
	case !fi.IsDir():
		return nil, &unsafePathError{at: t.Show(sofar), why: "is not a directory"}
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
		sub.Close()
		return nil, &unsafePathError{at: t.Show(sofar), why: "changed while it was being opened"}
	}
	return sub, nil
}

// Mkdir makes the directory rel (and its parents) if missing.
func (t *Tree) Mkdir(rel string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.dir(rel, true); err != nil {
		return t.fail("make directory", rel, err)
	}
	return nil
}

// Check reports whether rel could be written: every directory on the way
// that exists is a real directory, and rel is not a directory. Nothing is
// made.
func (t *Tree) Check(rel string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(path.Dir(rel), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return t.fail("write", rel, err)
	}
	if fi, err := d.Lstat(path.Base(rel)); err == nil && fi.IsDir() {
		return t.fail("write", rel, &unsafePathError{at: t.Show(rel), why: "is a directory"})
	}
	return nil
}

// CheckParents is Check for links only: no folder on the way to rel is a
// symbolic link. A file where a folder should be, or a folder at rel, is
// left to the caller (commit's checkManifestTree, which knows what a
// commit removes first).
func (t *Tree) CheckParents(rel string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.dir(path.Dir(rel), false)
	var ue *unsafePathError
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &ue) && ue.why == "is not a directory":
		return nil
	}
	return t.fail("write", rel, err)
}

// Lstat is os.Lstat of rel, through real directories only.
func (t *Tree) Lstat(rel string) (fs.FileInfo, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(path.Dir(rel), false)
	if err != nil {
		return nil, t.fail("stat", rel, err)
	}
	fi, err := d.Lstat(path.Base(rel))
	if err != nil {
		return nil, t.fail("stat", rel, err)
	}
	return fi, nil
}

// TempFile is a new temp file beside the file it will become.
type TempFile struct {
	*os.File
	t         *Tree
	dir       *os.Root // its own handle: the tree's may move on meanwhile
	tmp, name string   // in dir
	rel       string
}

// Create makes a temp file beside rel, making missing directories. The
// caller writes it, then calls Commit (or Link) or Abort.
func (t *Tree) Create(rel string) (*TempFile, error) {
	if err := checkRel(rel); err != nil || rel == "." {
		return nil, fmt.Errorf("%w: cannot write %q", ErrUnsafePath, rel)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(path.Dir(rel), true)
	if err != nil {
		return nil, t.fail("write", rel, err)
	}
	own, err := d.OpenRoot(".")
	if err != nil {
		return nil, t.fail("write", rel, err)
	}
	name := path.Base(rel)
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	tmp := "." + name + tempMark + hex.EncodeToString(rb[:])
	f, err := d.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644) // (own's name ends in "/.")
	if err != nil {
		own.Close()
		return nil, t.fail("write", rel, err)
	}
	return &TempFile{File: f, t: t, dir: own, tmp: tmp, name: name, rel: rel}, nil
}

// CreateExcl creates the file rel, which must not exist (not even as a
// link: O_EXCL never follows one), making missing directories.
func (t *Tree) CreateExcl(rel string) (*os.File, error) {
	if err := checkRel(rel); err != nil || rel == "." {
		return nil, fmt.Errorf("%w: cannot write %q", ErrUnsafePath, rel)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(path.Dir(rel), true)
	if err != nil {
		return nil, t.fail("create", rel, err)
	}
	f, err := d.OpenFile(path.Base(rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, t.fail("create", rel, err)
	}
	return f, nil
}

// tempMark is in the name of every temp file chunkvc makes beside a file,
// so that a crash leaves debris that is recognisable.
const tempMark = ".chunkvc-tmp-"

// Commit closes the temp file (after an fsync when sync is set) and
// renames it over its target; on failure the temp file is removed.
func (f *TempFile) Commit(sync bool) error {
	var err error
	if sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.dir.Rename(f.tmp, f.name)
	}
	if err != nil {
		f.dir.Remove(f.tmp)
	}
	f.dir.Close()
	if err != nil {
		return f.t.fail("write", f.rel, err)
	}
	return nil
}

// Link closes the temp file and links it to its target, failing with an
// error that is fs.ErrExist if the target exists; the temp name goes.
func (f *TempFile) Link() error {
	err := f.Close()
	if err == nil {
		err = f.dir.Link(f.tmp, f.name)
	}
	f.dir.Remove(f.tmp)
	f.dir.Close()
	if err != nil {
		return f.t.fail("create", f.rel, err)
	}
	return nil
}

// Abort closes and removes the temp file.
func (f *TempFile) Abort() {
	f.Close()
	f.dir.Remove(f.tmp)
	f.dir.Close()
}

// WriteFrom writes what write gives to rel, atomically: readers see the
// old bytes or the new, never part. sync fsyncs the file first.
func (t *Tree) WriteFrom(rel string, write func(io.Writer) error, sync bool) error {
	f, err := t.Create(rel)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return t.fail("write", rel, err)
	}
	return f.Commit(sync)
}

// WriteFile writes data to rel, atomically (see WriteFrom).
func (t *Tree) WriteFile(rel string, data []byte, sync bool) error {
	return t.WriteFrom(rel, func(w io.Writer) error { _, err := w.Write(data); return err }, sync)
}

// Remove removes the file rel (a link itself, not what it points at). A
// missing file, or directory on the way, is an error that is
// fs.ErrNotExist.
func (t *Tree) Remove(rel string) error {
	if err := checkRel(rel); err != nil || rel == "." {
		return fmt.Errorf("%w: cannot remove %q", ErrUnsafePath, rel)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(path.Dir(rel), false)
	if err == nil {
		err = d.Remove(path.Base(rel))
	}
	if err != nil {
		return t.fail("remove", rel, err)
	}
	return nil
}

// OpenFile opens the regular file rel with flag (no O_CREATE). A link, or
// anything else that is not a regular file, is refused unopened (a FIFO
// would block).
func (t *Tree) OpenFile(rel string, flag int) (*os.File, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(path.Dir(rel), false)
	if err != nil {
		return nil, t.fail("open", rel, err)
	}
	name := path.Base(rel)
	fi, err := d.Lstat(name)
	if err != nil {
		return nil, t.fail("open", rel, err)
	}
	if !fi.Mode().IsRegular() {
		why := "is not a regular file"
		if fi.Mode()&fs.ModeSymlink != 0 {
			why = "is a symbolic link"
		}
		return nil, t.fail("open", rel, &unsafePathError{at: t.Show(rel), why: why})
	}
	f, err := d.OpenFile(name, flag&^os.O_CREATE, 0)
	if err != nil {
		return nil, t.fail("open", rel, err)
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		f.Close()
		return nil, t.fail("open", rel, &unsafePathError{at: t.Show(rel), why: "changed while it was being opened"})
	}
	return f, nil
}

// NoLimit is a ReadFile limit for files whose size is checked otherwise.
const NoLimit = 1 << 50

// ReadFile reads the regular file rel, at most limit bytes (more is an
// error).
func (t *Tree) ReadFile(rel string, limit int64) ([]byte, error) {
	f, err := t.OpenFile(rel, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sized as os.ReadFile does: growing a slice through a stat cache of
	// some megabytes costs a copy per doubling.
	n := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Size() >= 0 {
		n = min(fi.Size(), limit) + 1
	}
	b := make([]byte, 0, n)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		var m int
		m, err = f.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if int64(len(b)) > limit {
			err = fmt.Errorf("over the %d-byte limit", limit)
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return nil, t.fail("read", rel, err)
	}
	return b, nil
}

// List returns the names in directory rel that start with prefix.
func (t *Tree) List(rel, prefix string) ([]string, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.dir(rel, false)
	if err != nil {
		return nil, t.fail("list", rel, err)
	}
	f, err := d.Open(".")
	if err != nil {
		return nil, t.fail("list", rel, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, t.fail("list", rel, err)
	}
	out := names[:0]
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out, nil
}

// RemoveTemps removes the temp files that writes of rel left (a process
// killed between making one and renaming it). Failures are ignored: the
// debris is harmless and found again next time.
func (t *Tree) RemoveTemps(rel string) {
	dir := path.Dir(rel)
	names, err := t.List(dir, "."+path.Base(rel)+tempMark)
	if err != nil {
		return
	}
	for _, n := range names {
		_ = t.Remove(path.Join(dir, n))
	}
}
