//go:build !gcs

package repo

import "github.com/chunkvc/chunkvc/store"

// openGCS: this build has no Google Cloud SDK (see ErrNeedsGCS).
func openGCS(string, bool) (store.Store, error) { return nil, ErrNeedsGCS }
