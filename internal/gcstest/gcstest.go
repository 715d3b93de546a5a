// Package gcstest runs a real Google Cloud Storage emulator
// (fake-gcs-server) on loopback for tests.
//
// Start finds the pinned binary that scripts/ensure-fake-gcs.sh installs
// ($CHUNKVC_FAKE_GCS, else <cache>/bin/fake-gcs-server with the cache of
// emulator.CacheDir, else fake-gcs-server on PATH). Without one the test is
// skipped, or fails under CI=true. The server gets a free port and a
// temporary data folder (its filesystem backend, so Restart keeps the
// objects), and is always stopped when the test ends.
package gcstest

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/emulator"
)

// Project is the project Env names, in which buckets are created.
const Project = "chunkvc-test"

// Server is a running (or stopped) emulator.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// Addr is the endpoint's host:port.
	Addr string
	// Dir is the server's data folder.
	Dir string
	// ExternalURL, when set before a Restart, is the URL the server gives
	// clients for resumable uploads (a proxy in front of it); default
	// Endpoint.
	ExternalURL string

	proc *emulator.Process
}

// Binary returns the path of the emulator binary, or an error saying how
// to install it.
func Binary() (string, error) {
	return emulator.Binary("CHUNKVC_FAKE_GCS", "fake-gcs-server", "scripts/ensure-fake-gcs.sh",
		filepath.Join(emulator.CacheDir(), "bin", "fake-gcs-server"))
}

// Start starts an emulator for the test and registers its shutdown with
// t.Cleanup. A missing binary skips the test, or fails it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		emulator.Missing(t, "gcstest", "GCS emulator", err)
	}
	s := &Server{Dir: filepath.Join(t.TempDir(), "data")}
	spec := emulator.Spec{
		Name:      "fake-gcs-server",
		Harness:   "gcstest",
		StartWait: 30 * time.Second,
		Command: func() *exec.Cmd {
			host, port, _ := net.SplitHostPort(s.Addr)
			external := s.ExternalURL
			if external == "" {
				external = s.Endpoint
			}
			return exec.Command(bin, "-scheme", "http", "-host", host, "-port", port,
				"-backend", "filesystem", "-filesystem-root", s.Dir,
				"-public-host", s.Addr, "-external-url", external, "-log-level", "warn")
		},
		Live: func(c *http.Client) bool {
			return emulator.Answers(s.Endpoint+"/storage/v1/b?project="+Project, http.StatusOK)(c)
		},
	}
	s.proc = emulator.Run(t, spec, func() {
		s.Addr = emulator.FreeAddr(t)
		s.Endpoint = "http://" + s.Addr
	})
	return s
}

// Env returns the environment a client process needs to reach the server:
// append it to os.Environ() (later entries win).
func (s *Server) Env() []string {
	return []string{
		"STORAGE_EMULATOR_HOST=" + s.Addr,
		"GOOGLE_CLOUD_PROJECT=" + Project,
	}
}

// Setenv sets Env in this process for the duration of t (with t.Setenv,
// so t and its parents must not be parallel).
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	emulator.Setenv(t, s.Env())
}

// Stop stops the server (SIGTERM, then SIGKILL after a grace period). The
// data folder is kept for Restart. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.proc.Stop() }

// Restart starts the server again on the same address and data folder
// (stopping it first if it runs), with the current ExternalURL.
func (s *Server) Restart() { s.proc.Restart() }
