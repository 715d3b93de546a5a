package review

import (
	"bytes"
	"encoding/json"
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

// TestFeaturesFrom: any value with the "features" JSON contract converts,
// a nil pointer gives no features, and a value of another shape fails.
func TestFeaturesFrom(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal([]byte(featuresJSON), &v); err != nil {
		t.Fatal(err)
	}
	f, err := FeaturesFrom(v)
	if err != nil || len(f.Changes) != 4 || f.Changes[2].Columns[1].Name != "surface" || f.Changes[3].FromPath != "old/roads.parquet" {
		t.Fatalf("FeaturesFrom: %+v, %v", f, err)
	}
	var none *Features
	if f, err := FeaturesFrom(none); f != nil || err != nil {
		t.Errorf("nil pointer: %+v, %v", f, err)
	}
	if _, err := FeaturesFrom([]int{1}); err == nil {
		t.Error("a list converted to features")
	}
}
