package repo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// jitteryStore answers each Get after a delay that depends on the object,
// so that reads started in order finish out of it; a Get of fail fails.
type jitteryStore struct {
	store.Store
	fail hashing.ID
}

var errJitteryGet = errors.New("the store lost this object")

func (s jitteryStore) Get(ctx context.Context, id hashing.ID, off, n int64) (io.ReadCloser, error) {
	time.Sleep(time.Duration(id[0]%8) * 200 * time.Microsecond)
	if id == s.fail {
		return nil, errJitteryGet
	}
	return s.Store.Get(ctx, id, off, n)
}

// TestCatReadsAheadInOrder: chunks read ahead, by several workers whose
// reads end in any order, are written in the layout's order, and the
// first one that cannot be read fails the read, named by its key.
func TestCatReadsAheadInOrder(t *testing.T) {
	data := randomData(6<<20, 13) // about a hundred chunks of the generic adapter
	r := testRepo(t, data)
	m, err := r.Manifest("HEAD", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Chunks) < 3*aheadWorkers {
		t.Fatalf("%d chunks: too few to read ahead", len(m.Chunks))
	}
	js := jitteryStore{Store: r.read.Local}
	r.read.Local, r.read.Remote = js, js
	var got bytes.Buffer
	if _, err := r.Cat(context.Background(), "HEAD", "sub/x.bin", &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("cat through a store that answers out of order: %d bytes, not the %d committed", got.Len(), len(data))
	}
	lost := m.Chunks[len(m.Chunks)/2]
	js.fail = lost.ID
	r.read.Local, r.read.Remote = js, js
	_, err = r.Cat(context.Background(), "HEAD", "sub/x.bin", io.Discard)
	if !errors.Is(err, errJitteryGet) || !strings.Contains(err.Error(), lost.Key) {
		t.Fatalf("cat with chunk %s lost: %v, want the store's error naming the chunk", lost.Key, err)
	}
}
