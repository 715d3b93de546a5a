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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/emulator"
)

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

	proc *emulator.Process
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
	p := filepath.Join(emulator.CacheDir(), "azurite", "node_modules", ".bin", "azurite-blob")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("no azurite-blob: run scripts/ensure-azurite.sh (or `make deps`), " +
			"or set CHUNKVC_AZURITE to its path")
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("azurite-blob needs node, which is not on PATH: run scripts/ensure-azurite.sh")
	}
	return p, nil
}

// Start starts an Azurite blob service for the test and registers its
// shutdown with t.Cleanup. Without Azurite, or when it cannot start, the
// test is skipped, or fails under CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Launcher()
	if err != nil {
		emulator.Missing(t, "azuritetest", "Azurite", err)
	}
	key := make([]byte, 64)
	_, _ = rand.Read(key)
	s := &Server{
		Dir:     filepath.Join(t.TempDir(), "data"),
		Account: "chunkvc" + emulator.RandomHex(6),
		Key:     base64.StdEncoding.EncodeToString(key),
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatalf("azuritetest: %v", err)
	}
	spec := emulator.Spec{
		Name:    "azurite",
		Harness: "azuritetest",
		// node starts in seconds on a busy machine
		StartWait: 90 * time.Second,
		Command: func() *exec.Cmd {
			host, port, _ := net.SplitHostPort(s.Addr)
			cmd := exec.Command(bin, "--blobHost", host, "--blobPort", port, "--location", s.Dir,
				"--loose", "--skipApiVersionCheck", "--disableProductStyleUrl", "--disableTelemetry", "--silent")
			cmd.Env = append(os.Environ(), "AZURITE_ACCOUNTS="+s.Account+":"+s.Key)
			return cmd
		},
		// An unsigned request is refused, which is enough to know it listens.
		Live:            func(c *http.Client) bool { return emulator.Answers(s.Endpoint+"?comp=list", 0)(c) },
		SkipUnstartable: true,
	}
	s.proc = emulator.Run(t, spec, func() {
		s.Addr = emulator.FreeAddr(t)
		s.Endpoint = "http://" + s.Addr + "/" + s.Account
	})
	return s
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
	emulator.Setenv(t, s.Env())
}

// Stop stops the service (SIGTERM, then SIGKILL after a grace period). The
// data folder is kept for Restart. Stopping a stopped service does nothing.
func (s *Server) Stop() { s.proc.Stop() }

// Restart starts a stopped service again on the same address, data
// folder and account (stopping it first if it runs).
func (s *Server) Restart() { s.proc.Restart() }
