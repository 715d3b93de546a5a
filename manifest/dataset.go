package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/chunkvc/chunkvc/hashing"
)

// A dataset (a Zarr store: docs/DATASETS.md) is a directory tracked as one
// unit. Its chunk files are chunks keyed by their store-relative path, so
// the manifest's chunk lines already list them; the dataset layout blob
// holds the other members, each with the layout of its bytes:
//
//	"chunkvc-dataset 1\n"
//	uvarint member count
//	member*: uvarint path length | path | role byte |
//	         uvarint blob length | a layout blob ("chunkvc-layout 1" …)
//
// Members are in strictly increasing byte order of their paths, each path
// passes CheckPath relative to the dataset's directory, and each embedded
// layout decodes: DecodeDataset accepts exactly what EncodeDataset writes.

const datasetMagic = "chunkvc-dataset 1\n"

// Role says what a dataset member is to its format; the pieces of its
// layout say how its bytes are kept whatever the role.
type Role uint8

// Member roles. Chunk files (one chunk, key = path) are not members of
// the layout blob.
const (
	RoleDocument Role = 1 // metadata document (.zarray, zarr.json): inline bytes
	RoleShard    Role = 2 // shard file: inner chunks and an index
	RoleOther    Role = 3 // a file the format does not know: generic pieces
	RolePieces   Role = 4 // a chunk file too large for one chunk: key@1, key@2, …
)

// String names r as --json outputs spell it.
func (r Role) String() string {
	switch r {
	case RoleDocument:
		return "document"
	case RoleShard:
		return "shard"
	case RoleOther:
		return "other"
	case RolePieces:
		return "pieces"
	}
	return "role-" + strconv.Itoa(int(r))
}

func (r Role) valid() bool { return r >= RoleDocument && r <= RolePieces }

// Member is one listed member of a dataset.
type Member struct {
	Path   string // relative to the dataset's directory, slash-separated
	Role   Role
	Layout *Layout
}

// EncodeDataset returns the dataset layout blob of members, which must be
// sorted by path (byte order) with no path twice.
func EncodeDataset(members []Member) ([]byte, error) {
	b := binary.AppendUvarint([]byte(datasetMagic), uint64(len(members)))
	for i, m := range members {
		if err := checkMember(m, i, members); err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(m.Path)))
		b = append(append(b, m.Path...), byte(m.Role))
		lay := canonicalLayout(m.Layout)
		b = binary.AppendUvarint(b, uint64(len(lay)))
		b = append(b, lay...)
	}
	return b, nil
}

func checkMember(m Member, i int, all []Member) error {
	if err := CheckPath(m.Path); err != nil {
		return fmt.Errorf("dataset member %d: %w", i, err)
	}
	if i > 0 && all[i-1].Path >= m.Path {
		return fmt.Errorf("%w: dataset members %q and %q out of order", ErrInvalid, all[i-1].Path, m.Path)
	}
	if !m.Role.valid() {
		return fmt.Errorf("%w: dataset member %s has %s", ErrInvalid, m.Path, m.Role)
	}
	if m.Layout == nil {
		return fmt.Errorf("%w: dataset member %s has no layout", ErrInvalid, m.Path)
	}
	return nil
}

// DecodeDataset parses a dataset layout blob, refusing any encoding that
// EncodeDataset would not have written. The members' layouts point into
// data: read only.
func DecodeDataset(data []byte) ([]Member, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: dataset layout: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if !bytes.HasPrefix(data, []byte(datasetMagic)) {
		return nil, bad("bad magic")
	}
	rest := data[len(datasetMagic):]
	get := func() (uint64, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 || n != uvarintLen(v) {
			return 0, bad("truncated or overlong number")
		}
		rest = rest[n:]
		return v, nil
	}
	count, err := get()
	if err != nil {
		return nil, err
	}
	// The smallest member: a 1-byte path, its role and an empty file's
	// layout with the two lengths.
	if count > uint64(len(rest))/uint64(MinLayoutSize+4) {
		return nil, bad("%d members in %d bytes", count, len(rest))
	}
	members := make([]Member, 0, count)
	for i := range count {
		pl, err := get()
		if err != nil {
			return nil, err
		}
		if pl == 0 || pl > uint64(len(rest)) {
			return nil, bad("member %d: path of %d bytes", i, pl)
		}
		m := Member{Path: string(rest[:pl])}
		rest = rest[pl:]
		if len(rest) == 0 {
			return nil, bad("member %s: truncated", m.Path)
		}
		m.Role, rest = Role(rest[0]), rest[1:]
		ll, err := get()
		if err != nil {
			return nil, err
		}
		if ll > uint64(len(rest)) {
			return nil, bad("member %s: layout of %d bytes, %d left", m.Path, ll, len(rest))
		}
		blob := rest[:ll:ll]
		rest = rest[ll:]
		if m.Layout, err = DecodeLayout(blob); err != nil {
			return nil, fmt.Errorf("dataset member %s: %w", m.Path, err)
		}
		if !bytes.Equal(canonicalLayout(m.Layout), blob) {
			return nil, bad("member %s: layout not in its canonical encoding", m.Path)
		}
		members = append(members, m)
		if err := checkMember(m, len(members)-1, members); err != nil {
			return nil, err
		}
	}
	if len(rest) != 0 {
		return nil, bad("%d bytes after the last member", len(rest))
	}
	return members, nil
}

// canonicalLayout is l's blob as Append makes it: adjacent inline pieces
// merged, every number in its shortest form.
func canonicalLayout(l *Layout) []byte {
	var c Layout
	for _, p := range l.All() {
		c.Append(p)
	}
	return c.Encode()
}

// DatasetDigest computes a dataset's digest: BLAKE3 over every member,
// listed or chunk file, in path order, each as its path, a NUL, its size
// in decimal, a NUL and the 32-byte ID of its bytes (a chunk file's chunk
// ID; a listed member's layout blob's BLAKE3, which binds every byte of
// it through its chunk IDs and inline bytes). It is computed from IDs,
// never from the files, so a re-commit of a store where five chunks
// changed reads five chunks; checkout still verifies every byte it writes
// against a chunk ID or a content-addressed layout.
type DatasetDigest struct {
	h    *hashing.Digest
	last string
	n    int
	num  []byte
}

// NewDatasetDigest starts a dataset digest.
func NewDatasetDigest() *DatasetDigest {
	d := &DatasetDigest{h: hashing.New()}
	_, _ = d.h.Write([]byte("chunkvc-dataset-digest 1\n"))
	return d
}

// Add adds a member; paths must come in strictly increasing byte order.
func (d *DatasetDigest) Add(path string, size int64, id hashing.ID) error {
	if d.n > 0 && path <= d.last {
		return fmt.Errorf("%w: dataset member %q after %q", ErrInvalid, path, d.last)
	}
	if size < 0 {
		return fmt.Errorf("%w: dataset member %s has size %d", ErrInvalid, path, size)
	}
	d.last, d.n = path, d.n+1
	d.num = strconv.AppendInt(d.num[:0], size, 10)
	_, _ = d.h.Write([]byte(path))
	_, _ = d.h.Write([]byte{0})
	_, _ = d.h.Write(d.num)
	_, _ = d.h.Write([]byte{0})
	_, _ = d.h.Write(id[:])
	return nil
}

// Sum returns the digest of the members added so far.
func (d *DatasetDigest) Sum() hashing.ID { return d.h.ID() }
