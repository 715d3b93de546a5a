//go:build gcs

package repo

import (
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/gcs"
)

// openGCS opens a gs:// store. Only chunkvc-gcs, built with the gcs tag,
// links the Google Cloud SDK (see store_nogcs.go for why).
func openGCS(u string, create bool) (store.Store, error) {
	return gcs.OpenEnv(u, create)
}
