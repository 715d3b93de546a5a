package emulator_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/emulator"
)

// A process started by Run answers its probe, stops answering after Stop,
// and answers again on the same address after Restart.
func TestRunStopRestart(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		emulator.Missing(t, "emulator", "python3", err)
	}
	var addr string
	p := emulator.Run(t, emulator.Spec{
		Name:      "http.server",
		Harness:   "emulator",
		StartWait: 30 * time.Second,
		Command: func() *exec.Cmd {
			host, port, _ := strings.Cut(addr, ":")
			return exec.Command(py, "-m", "http.server", "--bind", host, port, "--directory", t.TempDir())
		},
		Live: func(c *http.Client) bool { return emulator.Answers("http://"+addr+"/", http.StatusOK)(c) },
	}, func() { addr = emulator.FreeAddr(t) })
	c := &http.Client{Timeout: 2 * time.Second}
	live := emulator.Answers("http://"+addr+"/", http.StatusOK)
	if !live(c) {
		t.Fatal("not answering after Run")
	}
	p.Stop()
	if live(c) {
		t.Fatal("answering after Stop")
	}
	p.Stop() // a no-op
	p.Restart()
	if !live(c) {
		t.Fatal("not answering after Restart")
	}
}

func TestBinaryNamedMissing(t *testing.T) {
	t.Setenv("CHUNKVC_TEST_TOOL", t.TempDir()+"/none")
	if _, err := emulator.Binary("CHUNKVC_TEST_TOOL", "no-such-tool", "x.sh"); err == nil ||
		!strings.Contains(err.Error(), "CHUNKVC_TEST_TOOL") {
		t.Errorf("Binary with the variable naming a missing file: %v; want an error naming it", err)
	}
	t.Setenv("CHUNKVC_TEST_TOOL", "")
	if _, err := emulator.Binary("CHUNKVC_TEST_TOOL", "no-such-tool-chunkvc", "x.sh", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "x.sh") {
		t.Errorf("Binary with nothing installed: %v; want an error saying how to install", err)
	}
}
