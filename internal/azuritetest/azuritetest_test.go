package azuritetest_test

import (
	"net/http"
	"testing"

	"github.com/chunkvc/chunkvc/internal/azuritetest"
)

// Start gives a service that answers on its endpoint and is gone after
// Stop, and back after Restart.
func TestStartStop(t *testing.T) {
	s := azuritetest.Start(t)
	get := func() error {
		resp, err := http.Get(s.Endpoint + "?comp=list")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("azurite at %s does not answer: %v", s.Endpoint, err)
	}
	s.Stop()
	if err := get(); err == nil {
		t.Fatal("azurite still answers after Stop")
	}
	s.Restart()
	if err := get(); err != nil {
		t.Fatalf("azurite does not answer after Restart: %v", err)
	}
}
