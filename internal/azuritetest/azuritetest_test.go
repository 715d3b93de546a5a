package azuritetest_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// The service is stopped when the test that started it ends.
func TestCleanupStops(t *testing.T) {
	var s *azuritetest.Server
	t.Run("inner", func(t *testing.T) { s = azuritetest.Start(t) })
	if s == nil {
		t.Skip("no azurite")
	}
	if resp, err := http.Get(s.Endpoint + "?comp=list"); err == nil {
		resp.Body.Close()
		t.Error("azurite still answers after its test ended")
	}
}

// Without a launcher Start skips, and fails under CI=true, saying which
// path it tried.
func TestMissingLauncher(t *testing.T) {
	if os.Getenv("AZURITETEST_CHILD") == "1" {
		azuritetest.Start(t)
		return
	}
	nowhere := filepath.Join(t.TempDir(), "no-azurite")
	for ci, want := range map[string]string{"true": "--- FAIL", "": "--- SKIP"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingLauncher$", "-test.v")
		cmd.Env = append(os.Environ(), "AZURITETEST_CHILD=1", "CI="+ci, "CHUNKVC_AZURITE="+nowhere)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), nowhere) {
			t.Errorf("CI=%q, no launcher: want %q naming %s, got\n%s", ci, want, nowhere, out)
		}
	}
}
