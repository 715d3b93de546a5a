package gitdb

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/klauspost/compress/zlib"
)

// Blob names a Git blob: its id and its size in bytes.
type Blob struct {
	Hash Hash
	Size int
}

// writeBlob stores data as a Git blob and returns it, as PutBlob does.
func (g *Repo) writeBlob(data []byte) (Blob, error) {
	b := NewBlob(data)
	return b, g.PutBlob(b, data)
}

// NewBlob returns the blob data makes, not yet written.
func NewBlob(data []byte) Blob { return Blob{Hash: BlobHash(data), Size: len(data)} }

// PutBlob writes b, made of data by NewBlob, as a loose object, complete
// under a temp name before it is renamed. Safe for concurrent use.
//
// Manifests are large (150 bytes a chunk) and a commit writes one per
// changed file, so it does not go through go-git's object storage, which
// deflates at zlib's default level and hashes with collision-detecting
// SHA-1: that was ~12 ms of a ~100 ms re-commit for one 300 KB manifest.
// Like git itself (core.looseCompression defaults to 1) it writes at
// zlib's best speed; git gc packs it properly later.
//
// Like git, it freshens an object that is already there: a loose one gets
// a new mtime, and one that may be packed is written loose again, so that
// a git gc running before the commit that will reference it (it may be an
// old unreachable blob) does not prune it.
func (g *Repo) PutBlob(b Blob, data []byte) error {
	objects, ok := g.objectsDir()
	if !ok {
		got, err := g.writeBlobGoGit(data)
		if err == nil && got != b {
			err = fmt.Errorf("git object %s: stored as %s", b.Hash, got.Hash)
		}
		return err
	}
	final := looseObject(objects, b.Hash)
	if freshen(final) {
		return nil
	}
	// The temp file goes beside its object: made in one shared folder,
	// the objects of a commit of many files would wait on its lock.
	err := os.MkdirAll(filepath.Dir(final), 0o755)
	var tmp string
	if err == nil {
		tmp, err = deflateLoose(filepath.Dir(final), len(data), func(w io.Writer) (int64, error) {
			n, err := w.Write(data)
			return int64(n), err
		}, nil)
	}
	if err == nil {
		defer os.Remove(tmp) // fails harmlessly once renamed
		err = placeLoose(tmp, final)
	}
	if err != nil {
		return fmt.Errorf("git object %s: %w", b.Hash, err)
	}
	return nil
}

// PutBlobFrom writes the blob of size bytes that write gives, as PutBlob
// does, without holding them: they are hashed and deflated as they come,
// into a temp file that becomes the object once its name is known. A
// write that gives another number of bytes is an error, and nothing is
// stored. Safe for concurrent use.
func (g *Repo) PutBlobFrom(size int, write func(io.Writer) (int64, error)) (Blob, error) {
	objects, ok := g.objectsDir()
	if !ok {
		var buf bytes.Buffer
		if _, err := write(&buf); err != nil {
			return Blob{}, err
		}
		return g.writeBlobGoGit(buf.Bytes())
	}
	h := sha1.New()
	tmp, err := deflateLoose(objects, size, write, h)
	if err != nil {
		return Blob{}, fmt.Errorf("git object: %w", err)
	}
	defer os.Remove(tmp) // fails harmlessly once renamed
	b := Blob{Size: size}
	copy(b.Hash[:], h.Sum(nil))
	if final := looseObject(objects, b.Hash); !freshen(final) {
		if err := placeLoose(tmp, final); err != nil {
			return Blob{}, fmt.Errorf("git object %s: %w", b.Hash, err)
		}
	}
	return b, nil
}

// objectsDir returns the objects folder of a repository on disk. go-git
// reads objects from the .git folder it opened (Open does not enable
// the common dir of linked worktrees), so this is where they must go.
func (g *Repo) objectsDir() (string, bool) {
	fsys, ok := g.r.Storer.(*filesystem.Storage)
	if !ok {
		return "", false
	}
	return filepath.Join(fsys.Filesystem().Root(), "objects"), true
}

// looseObject is where git keeps the loose object h.
func looseObject(objects string, h Hash) string {
	hex := h.String()
	return filepath.Join(objects, hex[:2], hex[2:])
}

// freshen gives the loose object at path a new mtime, as git does for an
// object it would write again, and reports whether it is there.
func freshen(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	now := time.Now()
	return os.Chtimes(path, now, now) == nil
}

// deflateLoose writes the loose object of a blob of size bytes that write
// gives (header, then the bytes, at zlib's best speed) to a new temp file
// in dir, which the caller removes; the header and bytes also go to
// hash when it is not nil. It checks that write gave size bytes.
func deflateLoose(dir string, size int, write func(io.Writer) (int64, error), hash io.Writer) (string, error) {
	return deflateObject(dir, blobHeader(size), size, write, hash)
}

// deflateObject is deflateLoose for an object of any kind, whose header
// ("<kind> <size>\x00") is hdr.
func deflateObject(dir string, hdr []byte, size int, write func(io.Writer) (int64, error), hash io.Writer) (string, error) {
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", err
	}
	zw := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(zw)
	zw.Reset(f)
	var w io.Writer = zw
	if hash != nil {
		w = io.MultiWriter(hash, zw)
	}
	_, err = w.Write(hdr)
	if err == nil {
		var n int64
		n, err = write(w)
		if err == nil && n != int64(size) {
			err = fmt.Errorf("%d bytes written of a %d-byte object", n, size)
		}
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// zlibWriters are reused: a writer's state is about 1 MB, and a commit of
// 20,000 small files writes as many manifests (most of its allocations).
var zlibWriters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed) // a valid level: no error
	return zw
}}

// placeLoose makes the temp file tmp the read-only loose object at final.
func placeLoose(tmp, final string) error {
	err := os.MkdirAll(filepath.Dir(final), 0o755)
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	return err
}

// writeBlobGoGit is PutBlob for object stores that are not a .git
// folder on disk.
func (g *Repo) writeBlobGoGit(data []byte) (Blob, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	obj := g.r.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return Blob{}, err
	}
	if _, err := w.Write(data); err != nil {
		return Blob{}, err
	}
	if err := w.Close(); err != nil {
		return Blob{}, err
	}
	h, err := g.r.Storer.SetEncodedObject(obj)
	if err != nil {
		return Blob{}, err
	}
	return Blob{Hash: Hash(h), Size: len(data)}, nil
}

// blobHeader is what precedes a blob's bytes in its object: "blob <n>\x00".
func blobHeader(n int) []byte {
	return append(strconv.AppendInt([]byte("blob "), int64(n), 10), 0)
}

// BlobHash is the object id git gives a blob with these bytes. Plain SHA-1
// gives the same ids as git's collision-detecting one for any blob that is
// not a crafted collision, and manifests are chunkvc's own output.
func BlobHash(data []byte) Hash {
	h := sha1.New()
	h.Write(blobHeader(len(data)))
	h.Write(data)
	var out Hash
	copy(out[:], h.Sum(nil))
	return out
}

// ReadBlob returns the bytes of blob h; a blob over limit bytes is an
// error, and so is a missing object. Safe for concurrent use.
func (g *Repo) ReadBlob(h Hash, limit int64) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	blob, err := g.r.BlobObject(plumbing.Hash(h))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	if blob.Size > limit {
		return nil, fmt.Errorf("blob %s: %d bytes, over the %d-byte limit", h, blob.Size, limit)
	}
	rc, err := blob.Reader()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

// blobSize is the size of blob h.
func (g *Repo) blobSize(h Hash) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	o, err := g.r.Storer.EncodedObject(plumbing.BlobObject, plumbing.Hash(h))
	if err != nil {
		return 0, fmt.Errorf("blob %s: %w", h, err)
	}
	return o.Size(), nil
}
