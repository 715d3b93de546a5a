package miniotest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func live(s *Server) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(s.Endpoint + "/minio/health/live")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestStartStopRestart(t *testing.T) {
	start := time.Now()
	s := Start(t)
	t.Logf("started in %v at %s", time.Since(start).Round(time.Millisecond), s.Endpoint)
	if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") || s.Addr != strings.TrimPrefix(s.Endpoint, "http://") {
		t.Errorf("Endpoint %q, Addr %q", s.Endpoint, s.Addr)
	}
	if !live(s) {
		t.Fatal("server not live after Start")
	}
	if rx, tx, err := s.Traffic(); err != nil || rx != 0 || tx != 0 {
		t.Errorf("Traffic of a new server = %d, %d, %v; want 0, 0, nil", rx, tx, err)
	}
	env := strings.Join(s.Env(), "\n")
	for _, want := range []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint, "AWS_REGION=" + Region} {
		if !strings.Contains(env, want) {
			t.Errorf("Env() lacks %s", want)
		}
	}

	start = time.Now()
	s.Stop()
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	if live(s) {
		t.Fatal("server live after Stop")
	}
	s.Stop() // no-op
	marker := filepath.Join(s.Dir, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	s.Restart()
	t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
	if !live(s) {
		t.Fatal("server not live after Restart")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("data folder changed over Restart: %v", err)
	}
}

func TestCleanupStops(t *testing.T) {
	var s *Server
	t.Run("inner", func(t *testing.T) { s = Start(t) })
	if s == nil {
		t.Skip("no server")
	}
	if live(s) {
		t.Error("server still live after its test ended")
	}
}

func TestParseMetrics(t *testing.T) {
	const text = `# HELP minio_api_requests_traffic_received_bytes Total number of bytes received
# TYPE minio_api_requests_traffic_received_bytes counter
minio_api_requests_traffic_received_bytes{server="127.0.0.1:9000",type="s3"} 1.050102e+06
minio_api_requests_traffic_received_bytes{server="127.0.0.1:9000",type="admin"} 77
minio_api_requests_traffic_sent_bytes{server="127.0.0.1:9000",type="s3"} 2048
minio_api_requests_traffic_sent_bytes{server="127.0.0.1:9001",type="s3"} 1000 1700000000000
minio_api_requests_traffic_sent_bytes_other{type="s3"} 5
`
	m, err := parseMetrics(strings.NewReader(text), `type="s3"`, metricsReceived, metricsSent)
	if err != nil {
		t.Fatal(err)
	}
	if m[metricsReceived] != 1050102 || m[metricsSent] != 3048 {
		t.Errorf("parsed %v; want received 1050102, sent 3048", m)
	}
	if _, err := parseMetrics(strings.NewReader(metricsSent+"{type=\"s3\"} x\n"), "", metricsSent); err == nil {
		t.Error("a bad sample parsed")
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("CHUNKVC_MINIO", filepath.Join(t.TempDir(), "no-minio"))
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "no-minio") {
		t.Errorf("Binary() with CHUNKVC_MINIO pointing nowhere: %v", err)
	}
	t.Setenv("CHUNKVC_MINIO", "")
	t.Setenv("CHUNKVC_CACHE", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "ensure-minio.sh") {
		t.Errorf("Binary() with no binary anywhere: %v; want advice to run scripts/ensure-minio.sh", err)
	}
}
