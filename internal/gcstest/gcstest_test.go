package gcstest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestBinaryNamedMissing(t *testing.T) {
	t.Setenv("CHUNKVC_FAKE_GCS", t.TempDir()+"/no-such-server")
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "CHUNKVC_FAKE_GCS") {
		t.Errorf("Binary with CHUNKVC_FAKE_GCS naming a missing file: %v; want an error naming the variable", err)
	}
}

// An object uploaded before a Stop is there after a Restart on the same
// address, and nothing answers in between.
func TestRestartKeepsObjects(t *testing.T) {
	s := Start(t)
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, s.Endpoint+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := do("POST", "/storage/v1/b?project="+Project, `{"name":"kept"}`); code != 200 {
		t.Fatalf("create bucket: %d %s", code, b)
	}
	if code, b := do("POST", "/upload/storage/v1/b/kept/o?uploadType=media&name=a", "hello"); code != 200 {
		t.Fatalf("upload: %d %s", code, b)
	}
	s.Stop()
	if code, _ := do("GET", "/storage/v1/b/kept/o/a?alt=media", ""); code != 0 {
		t.Fatalf("a stopped server answered %d", code)
	}
	s.Restart()
	if code, b := do("GET", "/storage/v1/b/kept/o/a?alt=media", ""); code != 200 || !bytes.Equal(b, []byte("hello")) {
		t.Fatalf("after a restart: %d %q, want 200 hello", code, b)
	}
}
