package repo

import "github.com/chunkvc/chunkvc/repo/internal/confine"

// ErrUnsafePath means chunkvc refused to read or write a path because a
// directory on the way to it is a symbolic link or not a directory, or
// the file itself is not what it must be: nothing is ever written (or
// read) through a link that could lead out of the work tree. It is
// confine.ErrUnsafePath, the error of every refusal of the trees below.
var ErrUnsafePath = confine.ErrUnsafePath

// workTree is the work tree, for data files, manifest copies, the config,
// .gitignore and .gitattributes.
func (r *Repo) workTree() *confine.Tree { return confine.New(r.Root, "") }

// gitTree is .git, for chunkvc's state under .git/chunkvc.
func (r *Repo) gitTree() *confine.Tree { return confine.New(r.gitDir(), ".git") }
