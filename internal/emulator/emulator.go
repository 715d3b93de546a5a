// Package emulator runs a storage emulator (MinIO, Azurite,
// fake-gcs-server) as a child process on loopback for a test: free ports,
// a log file, a readiness probe, stop with a grace period, restart on the
// same address, and the rule that a missing emulator skips the test but
// fails it under CI=true. The harnesses miniotest, azuritetest and gcstest
// supply only what differs: the command line and the probe.
package emulator

import (
	"crypto/rand"
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
)

// stopWait is how long Stop waits after SIGTERM before it kills.
const stopWait = 10 * time.Second

// Spec is how to run one emulator.
type Spec struct {
	// Name names the emulator in messages and its log file.
	Name string
	// Harness names the calling package in test failures.
	Harness string
	// StartWait bounds how long the emulator may take to answer.
	StartWait time.Duration
	// Command returns the command that runs the emulator; it is called at
	// every start, so it sees the current address and options.
	Command func() *exec.Cmd
	// Live is the readiness probe: whether the emulator answers.
	Live func(c *http.Client) bool
	// SkipUnstartable skips (under CI=true: fails) a test whose emulator
	// is installed but will not start, rather than failing it.
	SkipUnstartable bool
}

// Process is a running (or stopped) emulator.
type Process struct {
	t       testing.TB
	spec    Spec
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Run starts the emulator for t, registering its shutdown with t.Cleanup.
// A free port may be taken between probing and binding, so it tries three
// times, calling ports before each try to pick fresh addresses.
func Run(t testing.TB, spec Spec, ports func()) *Process {
	t.Helper()
	p := &Process{t: t, spec: spec, logPath: filepath.Join(t.TempDir(), spec.Name+".log")}
	t.Cleanup(p.shutdown)
	for attempt := 1; ; attempt++ {
		ports()
		err := p.start()
		if err == nil {
			return p
		}
		if attempt == 3 {
			if spec.SkipUnstartable {
				Missing(t, spec.Harness, spec.Name, err)
			}
			t.Fatalf("%s: %v", spec.Harness, err)
		}
	}
}

// Missing skips the test for want of an emulator, or fails it when
// CI=true: in CI a missing emulator is a failure, never a silent skip.
func Missing(t testing.TB, harness, name string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v (CI=true: a missing %s is a failure)", harness, err, name)
	}
	t.Skipf("%s: %v", harness, err)
}

// start launches the emulator and waits until it answers.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s already running", p.spec.Name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := p.spec.Command()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // an exit before Stop is waitLive's error
	p.cmd, p.done = cmd, done
	if err := p.waitLive(done); err != nil {
		p.stopLocked()
		return fmt.Errorf("%s: %w\n%s", p.spec.Name, err, p.LogTail())
	}
	return nil
}

// waitLive polls the probe until it answers.
func (p *Process) waitLive(exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(p.spec.StartWait)
	for !p.spec.Live(client) {
		select {
		case <-exited:
			return errors.New("exited while starting")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering after %v", p.spec.StartWait)
		}
	}
	return nil
}

// Stop stops the emulator (SIGTERM, then SIGKILL after a grace period).
// Its data folder is kept for Restart. Stopping a stopped emulator does
// nothing.
func (p *Process) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked()
}

func (p *Process) stopLocked() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd, p.done = nil, nil
}

// Restart starts the emulator again with the same command (stopping it
// first if it runs), failing the test when it cannot.
func (p *Process) Restart() {
	p.t.Helper()
	p.Stop()
	var err error
	for range 3 { // the port was ours a moment ago; give the kernel a few tries
		if err = p.start(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	p.t.Fatalf("%s: restart: %v", p.spec.Harness, err)
}

// shutdown stops the emulator at the end of the test, showing its log if
// the test failed.
func (p *Process) shutdown() {
	p.Stop()
	if p.t.Failed() {
		if tail := p.LogTail(); tail != "" {
			p.t.Logf("%s log (%s):\n%s", p.spec.Name, p.logPath, tail)
		}
	}
}

// LogTail returns the last lines of the emulator's log.
func (p *Process) LogTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// Answers is a Live probe: whether a GET of url answers at all, with
// status want (0: any status).
func Answers(url string, want int) func(c *http.Client) bool {
	return func(c *http.Client) bool {
		resp, err := c.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return want == 0 || resp.StatusCode == want
	}
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("emulator: find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("emulator: free port %s: %v", addr, err)
	}
	return addr
}

// CacheDir is chunkvc's tool cache, where `make deps` installs the
// emulators: $CHUNKVC_CACHE, else $XDG_CACHE_HOME/chunkvc, else
// ~/.cache/chunkvc (as in scripts/ensure-minio.sh).
func CacheDir() string {
	if d := os.Getenv("CHUNKVC_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "chunkvc")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "chunkvc")
}

// Binary finds an emulator's program: the file the environment variable
// envVar names, else the first of cached that is an executable file, else
// name on PATH; or an error saying how to install it.
func Binary(envVar, name, install string, cached ...string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", envVar, p, err)
		}
		return p, nil
	}
	for _, p := range cached {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no %s: run %s (or `make deps`), or set %s to its path", name, install, envVar)
}

// Setenv sets env, KEY=VALUE entries, for the duration of t (with
// t.Setenv, so t and its parents must not be parallel).
func Setenv(t testing.TB, env []string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// RandomHex returns n random bytes in hex, for names and keys.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}
