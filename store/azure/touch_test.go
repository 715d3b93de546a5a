package azure_test

import (
	"testing"

	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
	"github.com/chunkvc/chunkvc/store/storetest"
)

// TestTouchSeenByOtherProcess: storetest.TouchAcross on Azurite.
func TestTouchSeenByOtherProcess(t *testing.T) {
	startAzurite(t)
	storetest.TouchAcross(t, func(t *testing.T) store.Store {
		return open(t, "az://touch/cross", azure.Options{CreateContainer: true})
	})
}
