//go:build !linux

package walk

import (
	"os"
	"path/filepath"
)

// readDir returns the kept files and the folders to walk of folder d.
func (w *treeWalk) readDir(d string, _ *[]byte) (files, subdirs []string, err error) {
	f, err := os.Open(filepath.Join(w.root, filepath.FromSlash(d)))
	if err != nil {
		return nil, nil, err
	}
	entries, err := f.ReadDir(-1)
	_ = f.Close() // read only: nothing to lose
	if err != nil {
		return nil, nil, err
	}
	prefix := ""
	if d != "" {
		prefix = d + "/"
		for _, e := range entries {
			if e.Name() == ".git" {
				return nil, nil, nil // a nested repository is not ours
			}
		}
	}
	for _, e := range entries {
		rel := prefix + e.Name()
		switch t := e.Type(); {
		case t.IsDir():
			if w.rules.Descend(rel) {
				subdirs = append(subdirs, rel)
			}
		case (t.IsRegular() || w.rules.Others) && w.rules.Keep(rel, e.Name()):
			files = append(files, rel)
		}
	}
	return files, subdirs, nil
}
