package mem_test

import (
	"testing"

	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/mem"
	"github.com/chunkvc/chunkvc/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return mem.New() })
}
