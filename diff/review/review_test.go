package review

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestWriteSelfContained requires the page to carry its data, its
// previews as data URIs, only the finest level's tiles, and no reference
// to anything it would have to fetch.
func TestWriteSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, fixture(t)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"data:image/png;base64,", `z0/r1/c2`, `asphalt`, `Content-Security-Policy`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `z1/r0/c0`) {
		t.Error("page lists an overview tile; only the finest level is drawn")
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:|//)`).FindString(page); m != "" {
		t.Errorf("page references the network: %s", m)
	}
}
