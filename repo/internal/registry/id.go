package registry

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IDFile is .git/chunkvc/id: the repository's id and the work tree it was
// made for, which tells a copy (cp -r) from the original.
type IDFile struct {
	ID   string `json:"id"`
	Root string `json:"root"`
}

// ErrBadID means an id file does not parse, holds no valid id or names a
// relative work tree.
var ErrBadID = errors.New("not a repository id file")

// Bytes is f as written to its file.
func (f IDFile) Bytes() []byte {
	b, _ := json.Marshal(f) // two strings: cannot fail
	return append(b, '\n')
}

// idPath is the id file of the repository whose work tree is root.
func idPath(root string) string { return filepath.Join(root, ".git", "chunkvc", "id") }

// ResolveID returns the id file the repository with work tree root should
// hold, given its current one at p, and whether it must be written. Each
// clone makes its own id (.git/chunkvc is never committed or cloned). A
// copy of a repository, made with cp -r, finds its id file naming another
// work tree: if that one still holds the same id, the copy takes a new id;
// if not (the repository was moved), it keeps it.
func ResolveID(p, root string) (f IDFile, write bool, err error) {
	f, err = ReadIDFile(p)
	switch {
	case err == nil && (f.Root == root || SameFile(f.Root, root)):
		return f, false, nil // the same work tree, perhaps through a symbolic link
	case err == nil:
		if other, err := ReadIDFile(idPath(f.Root)); err == nil && other == f {
			f.ID = "" // a copy: the original is still there
		}
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrBadID):
		return IDFile{}, false, err
	}
	if f.ID == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return IDFile{}, false, err
		}
		f.ID = hex.EncodeToString(b)
	}
	f.Root = root
	return f, true, nil
}

// ReadIDFile reads an id file; one that does not parse is ErrBadID.
func ReadIDFile(p string) (IDFile, error) {
	var f IDFile
	b, err := os.ReadFile(p)
	if err != nil {
		return f, err
	}
	if json.Unmarshal(b, &f) != nil || !validID(f.ID) || !filepath.IsAbs(f.Root) {
		return IDFile{}, fmt.Errorf("%s: %w", p, ErrBadID)
	}
	return f, nil
}

// InPlace reports whether e's recorded work tree is there and still holds
// the repository e describes: its id file names e.ID and that work tree.
func InPlace(e Entry) bool {
	if !filepath.IsAbs(e.Root) {
		return false
	}
	f, err := ReadIDFile(idPath(e.Root))
	return err == nil && f.ID == e.ID && (f.Root == e.Root || SameFile(f.Root, e.Root))
}

// validID accepts 32 lower-case hex digits.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// SameFile reports whether paths a and b name one existing file or folder.
func SameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
