package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Files Git itself tracks (a lake's _manifest.json) are served at any
// revision like data: the version of that commit, with ranges, an ETag of
// their blob and a media type by extension; absent ones are 404.
func TestServeGitFile(t *testing.T) {
	r := testRepo(t, randomData(5000, 1))
	gitc := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", r.Root}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	put := func(v string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(r.Root, "lake"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.Root, "lake", "_manifest.json"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		gitc("add", "lake/_manifest.json")
		gitc("commit", "-q", "-m", "manifest "+v)
		return gitc("rev-parse", "HEAD")
	}
	v1, v2 := `{"snapshot": 1}`, `{"snapshot": 2, "files": []}`
	c1 := put(v1)
	put(v2)
	blob1 := gitc("rev-parse", c1+":lake/_manifest.json")

	ts := httptest.NewServer(New(r, Options{}))
	defer ts.Close()
	get := func(path, rng string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	if resp, body := get("/main/lake/_manifest.json", ""); resp.StatusCode != 200 || body != v2 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("main: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	resp, body := get("/"+c1+"/lake/_manifest.json", "")
	if resp.StatusCode != 200 || body != v1 || resp.Header.Get("ETag") != `"git-`+blob1+`"` ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("first commit: %d %q ETag %q Cache-Control %q", resp.StatusCode, body, resp.Header.Get("ETag"), resp.Header.Get("Cache-Control"))
	}
	if resp, body := get("/main/lake/_manifest.json", "bytes=1-4"); resp.StatusCode != http.StatusPartialContent || body != v2[1:5] {
		t.Errorf("range: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get("/main/lake/none.json", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("absent file: %d", resp.StatusCode)
	}
	if resp, _ := get("/main/lake", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a folder: %d", resp.StatusCode)
	}
}
