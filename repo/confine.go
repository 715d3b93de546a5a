package repo

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

// tree reads and writes files beneath a trusted directory, base (the work
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
type tree struct {
	base  string
	label string // how paths are shown: "" for the work tree, ".git"

	mu   sync.Mutex
	open []openDir // open[0] is base; open[i] is the child of open[i-1]
}

type openDir struct {
	name string
	root *os.Root
}

func newTree(base, label string) *tree { return &tree{base: base, label: label} }

// workTree is the work tree, for data files, manifest copies, the config,
// .gitignore and .gitattributes.
func (r *Repo) workTree() *tree { return newTree(r.Root, "") }

// gitTree is .git, for chunkvc's state under .git/chunkvc.
func (r *Repo) gitTree() *tree { return newTree(r.gitDir(), ".git") }

// close releases the open directories; the tree may be used again.
func (t *tree) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.truncate(0)
}

func (t *tree) truncate(n int) {
	for _, d := range t.open[min(n, len(t.open)):] {
		d.root.Close()
	}
	t.open = t.open[:min(n, len(t.open))]
}

func (t *tree) show(rel string) string {
	if t.label == "" {
		return rel
	}
	if rel == "." {
		return t.label
	}
	return t.label + "/" + rel
}

// fail gives err the operation and path it was met on.
func (t *tree) fail(op, rel string, err error) error {
	var ue *unsafePathError
	if errors.As(err, &ue) {
		e := *ue
		e.op, e.path = op, t.show(rel)
		return &e
	}
	return fmt.Errorf("%s %s: %w", op, t.show(rel), err)
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
func (t *tree) dir(rel string, create bool) (*os.Root, error) {
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
func (t *tree) enter(parent *os.Root, name, sofar string, create bool) (*os.Root, error) {
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
		return nil, &unsafePathError{at: t.show(sofar), why: "is a symbolic link"}
	case !fi.IsDir():
		return nil, &unsafePathError{at: t.show(sofar), why: "is not a directory"}
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
		sub.Close()
		return nil, &unsafePathError{at: t.show(sofar), why: "changed while it was being opened"}
	}
	return sub, nil
}

// mkdir makes the directory rel (and its parents) if missing.
func (t *tree) mkdir(rel string) error {
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

// check reports whether rel could be written: every directory on the way
// that exists is a real directory, and rel is not a directory. Nothing is
// made.
func (t *tree) check(rel string) error {
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
		return t.fail("write", rel, &unsafePathError{at: t.show(rel), why: "is a directory"})
	}
	return nil
}

// checkParents is check for links only: no folder on the way to rel is a
// symbolic link. A file where a folder should be, or a folder at rel, is
// left to the caller (commit's checkManifestTree, which knows what a
// commit removes first).
func (t *tree) checkParents(rel string) error {
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

// lstat is os.Lstat of rel, through real directories only.
func (t *tree) lstat(rel string) (fs.FileInfo, error) {
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

// tempFile is a new temp file beside the file it will become.
type tempFile struct {
	*os.File
	t         *tree
	dir       *os.Root // its own handle: the tree's may move on meanwhile
	tmp, name string   // in dir
	rel       string
}

// create makes a temp file beside rel, making missing directories. The
// caller writes it, then calls commit (or link) or abort.
func (t *tree) create(rel string) (*tempFile, error) {
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
	return &tempFile{File: f, t: t, dir: own, tmp: tmp, name: name, rel: rel}, nil
}

// createExcl creates the file rel, which must not exist (not even as a
// link: O_EXCL never follows one), making missing directories.
func (t *tree) createExcl(rel string) (*os.File, error) {
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

// commit closes the temp file (after an fsync when sync is set) and
// renames it over its target; on failure the temp file is removed.
func (f *tempFile) commit(sync bool) error {
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

// link closes the temp file and links it to its target, failing with an
// error that is fs.ErrExist if the target exists; the temp name goes.
func (f *tempFile) link() error {
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

// abort closes and removes the temp file.
func (f *tempFile) abort() {
	f.Close()
	f.dir.Remove(f.tmp)
	f.dir.Close()
}

// writeFrom writes what write gives to rel, atomically: readers see the
// old bytes or the new, never part. sync fsyncs the file first.
func (t *tree) writeFrom(rel string, write func(io.Writer) error, sync bool) error {
	f, err := t.create(rel)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.abort()
		return t.fail("write", rel, err)
	}
	return f.commit(sync)
}

// writeFile writes data to rel, atomically (see writeFrom).
func (t *tree) writeFile(rel string, data []byte, sync bool) error {
	return t.writeFrom(rel, func(w io.Writer) error { _, err := w.Write(data); return err }, sync)
}

// remove removes the file rel (a link itself, not what it points at). A
// missing file, or directory on the way, is an error that is
// fs.ErrNotExist.
func (t *tree) remove(rel string) error {
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

// openFile opens the regular file rel with flag (no O_CREATE). A link, or
// anything else that is not a regular file, is refused unopened (a FIFO
// would block).
func (t *tree) openFile(rel string, flag int) (*os.File, error) {
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
		return nil, t.fail("open", rel, &unsafePathError{at: t.show(rel), why: why})
	}
	f, err := d.OpenFile(name, flag&^os.O_CREATE, 0)
	if err != nil {
		return nil, t.fail("open", rel, err)
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		f.Close()
		return nil, t.fail("open", rel, &unsafePathError{at: t.show(rel), why: "changed while it was being opened"})
	}
	return f, nil
}

// noLimit is a readFile limit for files whose size is checked otherwise.
const noLimit = 1 << 50

// readFile reads the regular file rel, at most limit bytes (more is an
// error).
func (t *tree) readFile(rel string, limit int64) ([]byte, error) {
	f, err := t.openFile(rel, os.O_RDONLY)
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

// list returns the names in directory rel that start with prefix.
func (t *tree) list(rel, prefix string) ([]string, error) {
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

// removeTemps removes the temp files that writes of rel left (a process
// killed between making one and renaming it). Failures are ignored: the
// debris is harmless and found again next time.
func (t *tree) removeTemps(rel string) {
	dir := path.Dir(rel)
	names, err := t.list(dir, "."+path.Base(rel)+tempMark)
	if err != nil {
		return
	}
	for _, n := range names {
		_ = t.remove(path.Join(dir, n))
	}
}
