package repo

import (
	"encoding/binary"

	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

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

// loadStatCache reads the stat cache of the work tree.
func (r *Repo) loadStatCache() *statcache.Cache { return statcache.Load(r.gitTree(), r.Root) }

// scDecoder reads the fields of the patch journal, which are encoded as
// the stat cache's (statcache has its own copy); a short or malformed
// field sets bad and yields zeros.
type scDecoder struct {
	b   []byte
	bad bool
}

func (d *scDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *scDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *scDecoder) bytes(n uint64) []byte {
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
