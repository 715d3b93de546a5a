// Package gcstest runs a real Google Cloud Storage emulator
// (fake-gcs-server) on loopback for tests.
//
// Start finds the pinned binary that scripts/ensure-fake-gcs.sh installs
// ($CHUNKVC_FAKE_GCS, else <cache>/bin/fake-gcs-server with the cache of
// miniotest.CacheDir, else fake-gcs-server on PATH). Without one the test is
// skipped, or fails under CI=true. The server gets a free port and a
// temporary data folder (its filesystem backend, so Restart keeps the
// objects), and is always stopped when the test ends.
package gcstest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/miniotest"
)

// Project is the project Env names, in which buckets are created.
const Project = "chunkvc-test"

// startWait bounds how long the server may take to answer.
const startWait = 30 * time.Second

// stopWait is how long Stop waits after SIGTERM before it kills.
const stopWait = 10 * time.Second

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

	t       testing.TB
	bin     string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of the emulator binary, or an error saying how
// to install it.
func Binary() (string, error) {
	if p := os.Getenv("CHUNKVC_FAKE_GCS"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CHUNKVC_FAKE_GCS=%s: %w", p, err)
		}
		return p, nil
	}
	p := filepath.Join(miniotest.CacheDir(), "bin", "fake-gcs-server")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p, nil
	}
	if p, err := exec.LookPath("fake-gcs-server"); err == nil {
		return p, nil
	}
	return "", errors.New("no fake-gcs-server binary: run scripts/ensure-fake-gcs.sh (or `make deps`), " +
		"or set CHUNKVC_FAKE_GCS to its path")
}

// Start starts an emulator for the test and registers its shutdown with
// t.Cleanup. A missing binary skips the test, or fails it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gcstest: %v (CI=true: a missing GCS emulator is a failure)", err)
		}
		t.Skipf("gcstest: %v", err)
	}
	tmp := t.TempDir()
	s := &Server{t: t, bin: bin, Dir: filepath.Join(tmp, "data"), logPath: filepath.Join(tmp, "fake-gcs.log")}
	t.Cleanup(s.shutdown)
	// A free port may be taken between probing and binding: try a few.
	for attempt := 1; ; attempt++ {
		s.Addr = freeAddr(t)
		s.Endpoint = "http://" + s.Addr
		err = s.start()
		if err == nil {
			return s
		}
		if attempt == 3 {
			t.Fatalf("gcstest: %v", err)
		}
	}
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
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// start launches the server and waits until it answers.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("server already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	host, port, _ := net.SplitHostPort(s.Addr)
	external := s.ExternalURL
	if external == "" {
		external = s.Endpoint
	}
	cmd := exec.Command(s.bin, "-scheme", "http", "-host", host, "-port", port,
		"-backend", "filesystem", "-filesystem-root", s.Dir,
		"-public-host", s.Addr, "-external-url", external, "-log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // an exit before Stop is waitLive's error
	s.cmd, s.done = cmd, done
	if err := s.waitLive(done); err != nil {
		s.stopLocked()
		return fmt.Errorf("fake-gcs-server on %s: %w\n%s", s.Addr, err, s.logTail())
	}
	return nil
}

// waitLive polls the bucket listing until it answers 200.
func (s *Server) waitLive(exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startWait)
	for {
		resp, err := client.Get(s.Endpoint + "/storage/v1/b?project=" + Project)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("server exited while starting")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering after %v", startWait)
		}
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after a grace period). The
// data folder is kept for Restart. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopWait):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
}

// Restart starts the server again on the same address and data folder
// (stopping it first if it runs), with the current ExternalURL.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for range 3 { // the port was ours a moment ago; give the kernel a few tries
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("gcstest: restart: %v", err)
}

// shutdown stops the server at the end of the test, showing its log if
// the test failed.
func (s *Server) shutdown() {
	s.Stop()
	if s.t.Failed() {
		if tail := s.logTail(); tail != "" {
			s.t.Logf("fake-gcs-server log (%s):\n%s", s.logPath, tail)
		}
	}
}

// logTail returns the last lines of the server's log.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gcstest: find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("gcstest: free port %s: %v", addr, err)
	}
	return addr
}
