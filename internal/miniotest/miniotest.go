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
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/emulator"
)

// Region is the region the server reports and Env sets.
const Region = "us-east-1"

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

	console string // console host:port
	proc    *emulator.Process
}

// Binary returns the path of the MinIO server binary, or an error saying
// how to install it.
func Binary() (string, error) {
	return emulator.Binary("CHUNKVC_MINIO", "minio", "scripts/ensure-minio.sh",
		filepath.Join(CacheDir(), "bin", "minio"))
}

// CacheDir is chunkvc's tool cache: $CHUNKVC_CACHE, else
// $XDG_CACHE_HOME/chunkvc, else ~/.cache/chunkvc (as in scripts/ensure-minio.sh).
func CacheDir() string { return emulator.CacheDir() }

// Start starts a MinIO server for the test and registers its shutdown with
// t.Cleanup. A missing binary skips the test, or fails it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		emulator.Missing(t, "miniotest", "MinIO", err)
	}
	s := &Server{
		Dir:       filepath.Join(t.TempDir(), "data"),
		AccessKey: "chunkvc-" + emulator.RandomHex(6),
		SecretKey: emulator.RandomHex(20),
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	spec := emulator.Spec{
		Name:      "minio",
		Harness:   "miniotest",
		StartWait: 60 * time.Second,
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, "server", "--quiet", "--address", s.Addr, "--console-address", s.console, s.Dir)
			cmd.Env = append(os.Environ(),
				"MINIO_ROOT_USER="+s.AccessKey,
				"MINIO_ROOT_PASSWORD="+s.SecretKey,
				"MINIO_PROMETHEUS_AUTH_TYPE=public",
				"MINIO_BROWSER=off",
				"MINIO_UPDATE=off",
				"MINIO_REGION="+Region,
				"MINIO_CI_CD=on",
			)
			return cmd
		},
		Live: func(c *http.Client) bool {
			return emulator.Answers(s.Endpoint+"/minio/health/live", http.StatusOK)(c)
		},
	}
	s.proc = emulator.Run(t, spec, func() {
		s.Addr, s.console = emulator.FreeAddr(t), emulator.FreeAddr(t)
		s.Endpoint = "http://" + s.Addr
	})
	return s
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
	emulator.Setenv(t, s.Env())
}

// Stop stops the server (SIGTERM, then SIGKILL after a grace period). The
// data folder is kept for Restart. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.proc.Stop() }

// Restart starts a stopped server again on the same address, data folder
// and credentials (stopping it first if it runs).
func (s *Server) Restart() { s.proc.Restart() }

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
