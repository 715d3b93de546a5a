package statcache

import "testing"

func TestReleaseAtLeast(t *testing.T) {
	for _, c := range []struct {
		rel  string
		want bool
	}{{"6.13.0", true}, {"6.18.44-fc-v657", true}, {"6.12.9-amd64", false}, {"6.1.0-28-amd64", false},
		{"7.0", true}, {"5.19.17", false}, {"6.13-rc1", true}, {"6", false}, {"x.y", false}, {"", false}} {
		if got := releaseAtLeast(c.rel, 6, 13); got != c.want {
			t.Errorf("releaseAtLeast(%q, 6, 13) = %v", c.rel, got)
		}
	}
}
