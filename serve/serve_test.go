package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/repo"
)

// testRepo commits data as sub/x.bin (generic chunks) on main, and points
// the branch feature/x at the same commit.
func testRepo(t *testing.T, data []byte) *repo.Repo {
	t.Helper()
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
	dir := t.TempDir()
	r, err := repo.Init(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track([]string{"*.bin"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "x.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), repo.CommitOptions{Message: "v1"}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", dir, "branch", "feature/x").CombinedOutput(); err != nil {
		t.Fatalf("git branch feature/x: %v\n%s", err, out)
	}
	return r
}

func randomData(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestServeHTTP(t *testing.T) {
	data := randomData(700000, 4)
	r := testRepo(t, data)
	var logBuf bytes.Buffer
	s := New(r, Options{Log: &syncWriter{w: &logBuf}})
	ts := httptest.NewServer(s)
	defer ts.Close()
	m, _ := r.Manifest("", "sub/x.bin")
	etag := `"` + m.Digest.String() + `"`
	size := int64(len(data))

	get := func(method, path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	cases := []struct {
		name, method, path string
		hdr                []string
		code               int
		body               []byte
		contentRange       string
	}{
		{"whole", "GET", "/main/sub/x.bin", nil, 200, data, ""},
		{"head", "HEAD", "/main/sub/x.bin", nil, 200, nil, ""},
		{"slash rev", "GET", "/feature/x/sub/x.bin", []string{"Range", "bytes=10-19"}, 206, data[10:20], fmt.Sprintf("bytes 10-19/%d", size)},
		{"commit rev", "GET", "/HEAD~0/sub/x.bin", []string{"Range", "bytes=0-0"}, 206, data[:1], ""},
		{"open ended", "GET", "/main/sub/x.bin", []string{"Range", "bytes=699990-"}, 206, data[699990:], fmt.Sprintf("bytes 699990-699999/%d", size)},
		{"suffix", "GET", "/main/sub/x.bin", []string{"Range", "bytes=-5"}, 206, data[size-5:], ""},
		{"suffix larger than file", "GET", "/main/sub/x.bin", []string{"Range", "bytes=-9999999"}, 206, data, ""},
		{"end past EOF", "GET", "/main/sub/x.bin", []string{"Range", "bytes=699998-800000"}, 206, data[699998:], ""},
		{"start past EOF", "GET", "/main/sub/x.bin", []string{"Range", "bytes=700000-700010"}, 416, nil, ""},
		{"empty suffix", "GET", "/main/sub/x.bin", []string{"Range", "bytes=-0"}, 416, nil, fmt.Sprintf("bytes */%d", size)},
		{"empty suffix and a range", "GET", "/main/sub/x.bin", []string{"Range", "bytes=-0,0-4"}, 206, data[:5], fmt.Sprintf("bytes 0-4/%d", size)},
		{"range past EOF and a range", "GET", "/main/sub/x.bin", []string{"Range", "bytes=800000-,10-19"}, 206, data[10:20], fmt.Sprintf("bytes 10-19/%d", size)},
		{"every range past EOF", "GET", "/main/sub/x.bin", []string{"Range", "bytes=700000-,800000-800001,-0"}, 416, nil, fmt.Sprintf("bytes */%d", size)},
		{"last before first", "GET", "/main/sub/x.bin", []string{"Range", "bytes=9-5"}, 416, nil, fmt.Sprintf("bytes */%d", size)},
		{"not a number", "GET", "/main/sub/x.bin", []string{"Range", "bytes=0x10-"}, 416, nil, fmt.Sprintf("bytes */%d", size)},
		{"unit in capitals", "GET", "/main/sub/x.bin", []string{"Range", "Bytes=0-1"}, 206, data[:2], fmt.Sprintf("bytes 0-1/%d", size)},
		{"unknown unit", "GET", "/main/sub/x.bin", []string{"Range", "items=0-1"}, 200, data, ""},
		{"empty suffix, stale if-range", "GET", "/main/sub/x.bin", []string{"Range", "bytes=-0", "If-Range", `"old"`}, 200, data, ""},
		{"head ignores range", "HEAD", "/main/sub/x.bin", []string{"Range", "bytes=0-9"}, 200, nil, ""},
		{"if-none-match", "GET", "/main/sub/x.bin", []string{"If-None-Match", etag}, 304, nil, ""},
		{"if-range stale", "GET", "/main/sub/x.bin", []string{"Range", "bytes=0-9", "If-Range", `"old"`}, 200, data, ""},
		{"if-range fresh", "GET", "/main/sub/x.bin", []string{"Range", "bytes=0-9", "If-Range", etag}, 206, data[:10], ""},
		{"missing file", "GET", "/main/nope.bin", nil, 404, nil, ""},
		{"missing rev", "GET", "/nobranch/sub/x.bin", nil, 404, nil, ""},
		{"dotdot", "GET", "/main/../sub/x.bin", nil, 400, nil, ""},
		{"git dir", "GET", "/main/.git/config", nil, 400, nil, ""},
		{"no path", "GET", "/main", nil, 404, nil, ""},
		{"post", "POST", "/main/sub/x.bin", nil, 405, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(c.method, c.path, c.hdr...)
			if resp.StatusCode != c.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.code, body)
			}
			if c.body != nil && !bytes.Equal(body, c.body) {
				t.Fatalf("body of %d bytes differs from the %d expected", len(body), len(c.body))
			}
			if c.contentRange != "" && resp.Header.Get("Content-Range") != c.contentRange {
				t.Fatalf("Content-Range %q, want %q", resp.Header.Get("Content-Range"), c.contentRange)
			}
			if c.code/100 == 2 {
				if resp.Header.Get("ETag") != etag || resp.Header.Get("Accept-Ranges") != "bytes" {
					t.Fatalf("headers %v", resp.Header)
				}
			}
			if c.method == "HEAD" && (resp.ContentLength != size || len(body) != 0) {
				t.Fatalf("HEAD: length %d, body %d", resp.ContentLength, len(body))
			}
		})
	}

	t.Run("multiple ranges", func(t *testing.T) {
		resp, body := get("GET", "/main/sub/x.bin", "Range", "bytes=0-9,500000-500009,-3")
		if resp.StatusCode != 206 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/byteranges" {
			t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		want := [][]byte{data[:10], data[500000:500010], data[size-3:]}
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("%d parts", i)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(p)
			if !bytes.Equal(b, want[i]) {
				t.Fatalf("part %d differs (%s)", i, p.Header.Get("Content-Range"))
			}
		}
	})

	t.Run("stats and log", func(t *testing.T) {
		resp, body := get("GET", "/debug/stats")
		var st Stats
		if resp.StatusCode != 200 || json.Unmarshal(body, &st) != nil {
			t.Fatalf("stats: %d %s", resp.StatusCode, body)
		}
		if st.Requests < int64(len(cases)) || st.BytesServed < size || st.ChunksLocal+st.ChunksFetched == 0 {
			t.Fatalf("stats %+v", st)
		}
		lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
		var l logLine
		if len(lines) < len(cases) || json.Unmarshal([]byte(lines[0]), &l) != nil || l.Status != 200 || l.Bytes != size {
			t.Fatalf("log: %d lines, first %s", len(lines), lines[0])
		}
		head, err := r.Snapshot("main")
		if err != nil {
			t.Fatal(err)
		}
		if l.ChunksLocal+l.ChunksFetched == 0 || l.Commit != head.Commit() {
			t.Fatalf("log of the first request, which read every chunk of %s: %s", head.Commit(), lines[0])
		}
	})
}

// A branch that moves is served at its new commit: what the server keeps
// of a commit is found by the commit, never by the rev that named it.
func TestServeFollowsBranch(t *testing.T) {
	v1, v2 := randomData(5000, 6), randomData(7000, 7)
	r := testRepo(t, v1)
	ts := httptest.NewServer(New(r, Options{}))
	defer ts.Close()
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		return body
	}
	if !bytes.Equal(get("/main/sub/x.bin"), v1) {
		t.Fatal("first version differs")
	}
	if err := os.WriteFile(filepath.Join(r.Root, "sub", "x.bin"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), repo.CommitOptions{Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(get("/main/sub/x.bin"), v2) {
		t.Error("main after a commit: the old version is served")
	}
	if !bytes.Equal(get("/feature/x/sub/x.bin"), v1) {
		t.Error("feature/x, which did not move: not the first version")
	}
}

func TestServeToken(t *testing.T) {
	r := testRepo(t, randomData(1000, 5))
	ts := httptest.NewServer(New(r, Options{Token: "s3cret"}))
	defer ts.Close()
	for _, c := range []struct {
		url, auth string
		code      int
	}{
		{"/main/sub/x.bin", "", 401},
		{"/main/sub/x.bin", "Bearer wrong", 401},
		{"/debug/stats", "", 401},
		{"/main/sub/x.bin", "Bearer s3cret", 200},
		{"/main/sub/x.bin?token=s3cret", "", 200},
	} {
		req, _ := http.NewRequest("GET", ts.URL+c.url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %q: %d, want %d", c.url, c.auth, resp.StatusCode, c.code)
		}
	}
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true}, {"[::1]:80", "", true}, {"localhost:8080", "", true},
		{"0.0.0.0:8080", "", false}, {":8080", "", false}, {"192.168.1.5:80", "", false},
		{"0.0.0.0:8080", "t", true},
	} {
		if err := CheckAddr(c.addr, c.token); (err == nil) != c.ok {
			t.Errorf("CheckAddr(%q, %q) = %v", c.addr, c.token, err)
		}
	}
}

type syncWriter struct {
	w io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) { return s.w.Write(p) }
