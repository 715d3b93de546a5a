// Package azuritetest runs a real Azurite blob service (Microsoft's Azure
// Storage emulator) on loopback for tests.
//
// Start finds the azurite-blob launcher that scripts/ensure-azurite.sh
// installs ($CHUNKVC_AZURITE, else <cache>/azurite/node_modules/.bin/azurite-blob
// with the cache folder of miniotest.CacheDir). Without one, or when it
// cannot start, the test is skipped, or fails under CI=true. The service
// gets a random free port, a temporary data folder and a random account
// and key, and is always stopped when the test ends.
package azuritetest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
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

// startWait bounds how long the service may take to listen (node starts
// in seconds on a busy machine).
const startWait = 90 * time.Second

// stopWait is how long Stop waits after SIGTERM before it kills.
const stopWait = 10 * time.Second

// Server is a running (or stopped) Azurite blob service.
type Server struct {
	// Endpoint is the blob service URL, http://127.0.0.1:PORT/ACCOUNT.
	Endpoint string
	// Addr is the service's host:port.
	Addr string
	// Account and Key are the storage account's name and key.
	Account, Key string
	// Dir is the service's data folder.
	Dir string

	t       testing.TB
	bin     string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Launcher returns the path of azurite-blob, or an error saying how to
// install it.
func Launcher() (string, error) {
	if p := os.Getenv("CHUNKVC_AZURITE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CHUNKVC_AZURITE=%s: %w", p, err)
		}
		return p, nil
	}
	p := filepath.Join(miniotest.CacheDir(), "azurite", "node_modules", ".bin", "azurite-blob")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("no azurite-blob: run scripts/ensure-azurite.sh (or `make deps`), " +
			"or set CHUNKVC_AZURITE to its path")
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("azurite-blob needs node, which is not on PATH: run scripts/ensure-azurite.sh")
	}
	return p, nil
}

// unavailable skips the test, or fails it under CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("azuritetest: %v (CI=true: a missing Azurite is a failure)", err)
	}
	t.Skipf("azuritetest: %v", err)
}

// Start starts an Azurite blob service for the test and registers its
// shutdown with t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Launcher()
	if err != nil {
		unavailable(t, err)
	}
	tmp := t.TempDir()
	key := make([]byte, 64)
	_, _ = rand.Read(key)
	s := &Server{
		t:       t,
		bin:     bin,
		Dir:     filepath.Join(tmp, "data"),
		logPath: filepath.Join(tmp, "azurite.log"),
		Account: "chunkvc" + randomHex(6),
		Key:     base64.StdEncoding.EncodeToString(key),
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatalf("azuritetest: %v", err)
	}
	t.Cleanup(s.shutdown)
	// A free port may be taken between probing and binding: try a few.
	for attempt := 1; ; attempt++ {
		s.Addr = freeAddr(t)
		s.Endpoint = "http://" + s.Addr + "/" + s.Account
		if err = s.start(); err == nil {
			return s
		}
		if attempt == 3 {
			unavailable(t, err)
		}
	}
}

// ConnectionString is the service's connection string, with its key.
func (s *Server) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + s.Account + ";AccountKey=" + s.Key +
		";BlobEndpoint=" + s.Endpoint + ";"
}

// Env returns the environment a client process needs to reach the service
// with the account key: append it to os.Environ() (later entries win).
func (s *Server) Env() []string {
	return []string{
		"AZURE_STORAGE_CONNECTION_STRING=",
		"AZURE_STORAGE_SAS_TOKEN=",
		"AZURE_STORAGE_ACCOUNT=" + s.Account,
		"AZURE_STORAGE_KEY=" + s.Key,
		"CHUNKVC_AZURE_ENDPOINT=" + s.Endpoint,
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

// start launches the service and waits until it answers.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("azurite already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	host, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.bin, "--blobHost", host, "--blobPort", port, "--location", s.Dir,
		"--loose", "--skipApiVersionCheck", "--disableProductStyleUrl", "--disableTelemetry", "--silent")
	cmd.Env = append(os.Environ(), "AZURITE_ACCOUNTS="+s.Account+":"+s.Key)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := s.waitLive(done); err != nil {
		s.stopLocked()
		return fmt.Errorf("azurite on %s: %w\n%s", s.Addr, err, s.logTail())
	}
	return nil
}

// waitLive polls the service until it answers HTTP at all (an unsigned
// request is refused, which is enough to know it listens).
func (s *Server) waitLive(exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startWait)
	for {
		resp, err := client.Get(s.Endpoint + "?comp=list")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("azurite exited while starting")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering after %v", startWait)
		}
	}
}

// Stop stops the service (SIGTERM, then SIGKILL after a grace period). The
// data folder is kept for Restart. Stopping a stopped service does nothing.
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

// Restart starts a stopped service again on the same address, data
// folder and account (stopping it first if it runs).
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for range 3 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("azuritetest: restart: %v", err)
}

// shutdown stops the service at the end of the test, showing its log if
// the test failed.
func (s *Server) shutdown() {
	s.Stop()
	if s.t.Failed() {
		if tail := s.logTail(); tail != "" {
			s.t.Logf("azurite log (%s):\n%s", s.logPath, tail)
		}
	}
}

// logTail returns the last lines of the service's log.
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
		t.Fatalf("azuritetest: find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("azuritetest: free port %s: %v", addr, err)
	}
	return addr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
