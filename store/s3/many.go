package s3

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// StatMany stats ids in parallel, up to Connections() at a time, and calls
// fn once per id, in no particular order, on the caller's goroutine, with
// the object's info or the error of its Stat (wrapping store.ErrNotFound
// for a missing object). It reloads the pack indexes once, first; packed
// objects cost no request, others a HEAD of their loose object. An error
// from fn stops StatMany and is returned; so is a cancelled ctx.
func (s *Store) StatMany(ctx context.Context, ids []hashing.ID, fn func(id hashing.ID, info store.Info, err error) error) error {
	if len(ids) == 0 {
		return ctx.Err()
	}
	if err := s.refreshPacks(ctx); err != nil {
		return fmt.Errorf("stat objects in s3 store %s: %w", s.url, err)
	}
	type result struct {
		id   hashing.ID
		info store.Info
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(s.opt.Connections, len(ids)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				info, err := s.statLoaded(ctx, ids[i])
				select {
				case results <- result{ids[i], info, err}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	defer func() {
		cancel()
		for range results { // let the workers finish
		}
	}()
	for n := 0; n < len(ids); n++ {
		select {
		case r, ok := <-results:
			if !ok {
				return ctx.Err()
			}
			if err := fn(r.id, r.info, r.err); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// HasMany reports which of ids the store holds, checking them in parallel
// (see StatMany). Any failure other than a missing object fails the whole
// call: a chunk is never reported missing, or present, by mistake.
func (s *Store) HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error) {
	has := make(map[hashing.ID]bool, len(ids))
	err := s.StatMany(ctx, ids, func(id hashing.ID, _ store.Info, err error) error {
		switch {
		case err == nil:
			has[id] = true
		case errors.Is(err, store.ErrNotFound):
			has[id] = false
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return has, nil
}

// statLoaded is Stat without reloading the pack indexes on a miss.
func (s *Store) statLoaded(ctx context.Context, id hashing.ID) (store.Info, error) {
	if r, _, ok := s.packed(id); ok {
		return packedInfo(r), nil
	}
	return s.statLoose(ctx, id)
}
