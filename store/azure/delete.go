package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/store/internal/packstore"
)

// batchMax is the service's bound on the sub-requests of a blob batch.
const batchMax = 256

// errNoBatch is a service's answer that it takes no blob batches.
var errNoBatch = errors.New("blob batch not supported")

// deleteBlobs removes blobs, missing ones not an error: up to 256 per
// blob batch request (a gc deleting 10,000 loose chunks costs 40 requests,
// not 10,000). A service that takes no blob batches (an account with a
// hierarchical namespace, an emulator without them) is learnt from its
// first answer and then asked one request per blob, up to Connections()
// at once. A blob whose sub-request failed otherwise than as missing is
// then deleted on its own, with the usual retries.
func (s *Store) deleteBlobs(ctx context.Context, keys []string) error {
	if !s.noBatch.Load() && len(keys) > 1 {
		rest, err := s.deleteBatches(ctx, keys)
		switch {
		case errors.Is(err, errNoBatch):
			s.noBatch.Store(true)
		case err != nil:
			return err
		default:
			keys = rest
		}
	}
	return packstore.DeleteEach(ctx, keys, s.opt.Connections, func(ctx context.Context, k string) error {
		if err := s.deleteKey(ctx, k); err != nil {
			return fmt.Errorf("delete blob %s/%s at %s: %w", s.container, k, s.endpoint, explain(err))
		}
		return nil
	})
}

// deleteBatches deletes keys in blob batches, the first alone (to learn
// whether the service takes them: errNoBatch, nothing deleted, if not),
// the others up to a quarter of Connections() at once. It returns the
// keys whose sub-request failed otherwise than as missing.
func (s *Store) deleteBatches(ctx context.Context, keys []string) ([]string, error) {
	first := keys[:min(len(keys), batchMax)]
	failed, err := s.deleteBatch(ctx, first)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, s.opt.Connections/4))
	for rest := keys[len(first):]; len(rest) > 0; {
		part := rest[:min(len(rest), batchMax)]
		rest = rest[len(part):]
		g.Go(func() error {
			f, err := s.deleteBatch(gctx, part)
			mu.Lock()
			failed = append(failed, f...)
			mu.Unlock()
			return err
		})
	}
	return failed, g.Wait()
}

// deleteBatch deletes keys (at most batchMax) in one blob batch request,
// with retries, and returns the keys whose sub-request failed otherwise
// than as missing.
func (s *Store) deleteBatch(ctx context.Context, keys []string) ([]string, error) {
	bb, err := s.client.NewBatchBuilder()
	if err != nil {
		return nil, fmt.Errorf("delete blobs from %s at %s: %w", s.container, s.endpoint, err)
	}
	for _, k := range keys {
		if err := bb.Delete(k, nil); err != nil {
			return nil, fmt.Errorf("delete blob %s/%s at %s: %w", s.container, k, s.endpoint, err)
		}
	}
	var resp container.SubmitBatchResponse
	err = s.pol.Do(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.SubmitBatch(ctx, bb, nil)
		return err
	})
	if noBatch(err) {
		return nil, fmt.Errorf("delete blobs from %s at %s: %w: %w", s.container, s.endpoint, errNoBatch, err)
	}
	if err != nil {
		return nil, fmt.Errorf("delete %d blobs in a batch from %s at %s: %w", len(keys), s.container, s.endpoint, explain(err))
	}
	var failed []string
	done := make([]bool, len(keys))
	for _, item := range resp.Responses {
		i := deref(item.ContentID)
		if item.ContentID == nil || i < 0 || i >= len(keys) {
			continue // unknown: its key counts as failed below
		}
		done[i] = item.Error == nil || isNotFound(item.Error)
	}
	for i, ok := range done {
		if !ok {
			failed = append(failed, keys[i])
		}
	}
	return failed, nil
}

// noBatch reports whether err is a service's answer that it takes no
// blob batches: the request is not one it knows (400, 404 but for a
// missing container, 405, 501). Falling back to one request per blob is
// right whatever the cause; other errors are reported then.
func noBatch(err error) bool {
	switch statusOf(err) {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	case http.StatusNotFound:
		return !bloberror.HasCode(err, bloberror.ContainerNotFound)
	}
	return false
}
