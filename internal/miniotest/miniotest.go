// Package miniotest runs a real MinIO server on loopback for tests.
//
// Start finds the pinned server binary that scripts/ensure-minio.sh installs
// ($CHUNKVC_MINIO, else ${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-~/.cache}/chunkvc}/bin/minio,
// else minio on PATH). Without one the test is skipped, or fails under
// CI=true. The server gets a random free port, a temporary data folder and
// random root credentials, and is always stopped when the test ends.
package miniotest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Region is the region the server reports and Env sets.
const Region = "us-east-1"

// startWait bounds how long the server may take to become live.
const startWait = 60 * time.Second

// stopWait is how long Stop waits after SIGTERM before it kills.
const stopWait = 10 * time.Second

// Server is a running (or stopped) MinIO server.
type Server struct {
	// Endpoint is the S3 endpoint, http://127.0.0.1:PORT.
	Endpoint string
	// Addr is the endpoint's host:port.
	Addr string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Dir is the server's data folder.
	Dir string

	t       testing.TB
	bin     string
	console string // console host:port
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of the MinIO server binary, or an error saying
// how to install it.
func Binary() (string, error) {
	if p := os.Getenv("CHUNKVC_MINIO"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CHUNKVC_MINIO=%s: %w", p, err)
		}
		return p, nil
	}
	if p := filepath.Join(CacheDir(), "bin", "minio"); isExecutable(p) {
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	return "", errors.New("no minio server binary: run scripts/ensure-minio.sh (or `make deps`), " +
		"or set CHUNKVC_MINIO to its path")
}

// CacheDir is chunkvc's tool cache: $CHUNKVC_CACHE, else
// $XDG_CACHE_HOME/chunkvc, else ~/.cache/chunkvc (as in scripts/ensure-minio.sh).
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

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start starts a MinIO server for the test and registers its shutdown with
// t.Cleanup. A missing binary skips the test, or fails it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("miniotest: %v (CI=true: a missing MinIO is a failure)", err)
		}
		t.Skipf("miniotest: %v", err)
	}
	tmp := t.TempDir()
	s := &Server{
		t:         t,
		bin:       bin,
		Dir:       filepath.Join(tmp, "data"),
		logPath:   filepath.Join(tmp, "minio.log"),
		AccessKey: "chunkvc-" + randomHex(6),
		SecretKey: randomHex(20),
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	t.Cleanup(s.shutdown)
	// A free port may be taken between probing and binding: try a few.
	for attempt := 1; ; attempt++ {
		s.Addr, s.console = freeAddr(t), freeAddr(t)
		s.Endpoint = "http://" + s.Addr
		err = s.start()
		if err == nil {
			return s
		}
		if attempt == 3 {
			t.Fatalf("miniotest: %v", err)
		}
	}
}

// Env returns the environment a client process needs to reach the server:
// append it to os.Environ() (later entries win).
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_REGION=" + Region,
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

// start launches the server and waits until it is live.
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
	cmd := exec.Command(s.bin, "server", "--quiet", "--address", s.Addr, "--console-address", s.console, s.Dir)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_PROMETHEUS_AUTH_TYPE=public",
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_REGION="+Region,
		"MINIO_CI_CD=on",
	)
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
		return fmt.Errorf("minio on %s: %w\n%s", s.Addr, err, s.logTail())
	}
	return nil
}

// waitLive polls the liveness endpoint until it answers 200.
func (s *Server) waitLive(exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startWait)
	for {
		resp, err := client.Get(s.Endpoint + "/minio/health/live")
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
			return fmt.Errorf("not live after %v", startWait)
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

// Restart starts a stopped server again on the same address, data folder
// and credentials (stopping it first if it runs).
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	// The port was ours a moment ago; give the kernel a few tries.
	for attempt := 0; attempt < 3; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("miniotest: restart: %v", err)
}

// shutdown stops the server at the end of the test, showing its log if
// the test failed.
func (s *Server) shutdown() {
	s.Stop()
	if s.t.Failed() {
		if tail := s.logTail(); tail != "" {
			s.t.Logf("minio log (%s):\n%s", s.logPath, tail)
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

// Traffic metrics: MinIO's Prometheus v3 API-request metrics, which are
// live (the v2 endpoints, /minio/v2/metrics/{node,cluster} with
// minio_s3_traffic_{received,sent}_bytes, are cached for about 10 s).
const (
	metricsPath     = "/minio/metrics/v3/api/requests"
	metricsReceived = "minio_api_requests_traffic_received_bytes"
	metricsSent     = "minio_api_requests_traffic_sent_bytes"
	metricsLabel    = `type="s3"`
)

// Traffic returns the bytes of S3 request bodies the server has received
// and of response bodies it has sent since it last started, read from its
// Prometheus metrics (minio_api_requests_traffic_{received,sent}_bytes
// with type="s3"). Headers are not counted; request bodies count as sent
// on the wire, so an upload signed chunk by chunk (http endpoints) counts
// about 0.15% more than its payload.
func (s *Server) Traffic() (received, sent int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+metricsPath, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("minio metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("minio metrics: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	m, err := parseMetrics(resp.Body, metricsLabel, metricsReceived, metricsSent)
	if err != nil {
		return 0, 0, fmt.Errorf("minio metrics: %w", err)
	}
	return int64(m[metricsReceived]), int64(m[metricsSent]), nil
}

// parseMetrics sums the samples of the named metrics in Prometheus text
// format whose labels include label (all of them if label is empty). A
// metric that is absent counts zero.
func parseMetrics(r io.Reader, label string, names ...string) (map[string]float64, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !want[name] {
			continue
		}
		labels := ""
		if strings.HasPrefix(rest, "{") {
			i := strings.LastIndexByte(rest, '}')
			if i < 0 {
				return nil, fmt.Errorf("bad sample line %q", line)
			}
			labels, rest = rest[1:i], rest[i+1:]
		}
		if label != "" && !hasLabel(labels, label) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("bad sample line %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("bad sample line %q: %w", line, err)
		}
		out[name] += v
	}
	return out, sc.Err()
}

// hasLabel reports whether the comma-separated labels include label
// (label values holding commas are not expected here).
func hasLabel(labels, label string) bool {
	for l := range strings.SplitSeq(labels, ",") {
		if strings.TrimSpace(l) == label {
			return true
		}
	}
	return false
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("miniotest: find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("miniotest: free port %s: %v", addr, err)
	}
	return addr
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
