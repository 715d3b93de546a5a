package repo

import (
	"context"
	"fmt"
	"io"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// brokenStore stands in for a configured store that could not be opened
// (unreachable, no credentials): every call fails with why, so commands
// that do not need it (commit --offline, checkouts served from local
// chunks, status) still work.
type brokenStore struct {
	url string
	err error
}

func (b brokenStore) fail() error { return fmt.Errorf("store %s: %w", b.url, b.err) }

func (b brokenStore) Get(context.Context, hashing.ID, int64, int64) (io.ReadCloser, error) {
	return nil, b.fail()
}
func (b brokenStore) Put(context.Context, hashing.ID, []byte) error { return b.fail() }
func (b brokenStore) Stat(context.Context, hashing.ID) (store.Info, error) {
	return store.Info{}, b.fail()
}
func (b brokenStore) List(context.Context, func(store.Info) error) error { return b.fail() }
func (b brokenStore) Delete(context.Context, hashing.ID) error           { return b.fail() }
func (b brokenStore) String() string                                     { return b.url }
