package review

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromium returns Debian's headless browser. Under CI=true a missing one
// fails the test (scripts/ensure-deps.sh installs it); elsewhere it skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required under CI=true (make deps installs it)")
	}
	t.Skip("chromium not installed")
	return ""
}

// artifacts is where the browser test leaves the page and its screenshots.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CHUNKVC_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "review")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPageInBrowser opens the fixture page in headless Chromium with name
// resolution disabled and every request recorded: the page must load
// without one network request, draw the three finest changed tiles and
// the four changed features, switch its picture with the before/after
// toggle, and move and highlight the map when a table row is clicked.
func TestPageInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := artifacts(t)
	var b bytes.Buffer
	if err := Write(&b, fixture(t)); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "review.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 900),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"), chromedp.Flag("proxy-server", "127.0.0.1:9"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	var mu sync.Mutex
	var requests []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	shot := func(t *testing.T, name string, sel chromedp.CSS) []byte {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.Screenshot(sel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		return png
	}
	eval := func(t *testing.T, js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	t.Run("offline", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range requests {
			if !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
				t.Errorf("page requested %s", u)
			}
		}
	})
	t.Run("counts", func(t *testing.T) {
		got := eval(t, `[document.querySelectorAll('section[data-path="dem.tif"] svg rect.tile').length,
			document.querySelectorAll('section[data-path="roads.parquet"] svg .feature').length,
			document.querySelectorAll('#features tbody tr').length].join(",")`)
		if got != "3,4,4" {
			t.Errorf("tiles, features, rows = %s, want 3,4,4", got)
		}
	})
	t.Run("toggle", func(t *testing.T) {
		const img = `document.querySelector('section[data-path="dem.tif"] image.preview').getAttribute('href')`
		hrefAfter := eval(t, img)
		pngAfter := shot(t, "raster-after", `section[data-path="dem.tif"] svg`)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`section[data-path="dem.tif"] button[data-side="before"]`))); err != nil {
			t.Fatal(err)
		}
		pngBefore := shot(t, "raster-before", `section[data-path="dem.tif"] svg`)
		if eval(t, img) == hrefAfter {
			t.Error("the toggle left the preview's image as it was")
		}
		if bytes.Equal(pngAfter, pngBefore) {
			t.Error("the toggle did not change the picture")
		}
	})
	t.Run("row_moves_map", func(t *testing.T) {
		const vb = `document.querySelector('section[data-path="roads.parquet"] svg').getAttribute('viewBox')`
		home := eval(t, vb)
		shot(t, "vector-home", `section[data-path="roads.parquet"] svg`)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#row2`))); err != nil {
			t.Fatal(err)
		}
		zoomed := eval(t, vb)
		shot(t, "vector-row2", `section[data-path="roads.parquet"] svg`)
		if zoomed == home {
			t.Errorf("viewBox stayed %q after clicking the row", home)
		}
		if got := eval(t, `document.querySelector('#f2').classList.contains('sel') + "," + document.querySelector('#row2').classList.contains('sel')`); got != "true,true" {
			t.Errorf("feature, row highlighted = %s, want true,true", got)
		}
	})
	t.Logf("page and screenshots in %s", dir)
}
