package pattern

import (
	"strings"
	"testing"
)

func TestMatchPattern(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"*.tif", "a.tif", true},
		{"*.tif", "deep/dir/a.tif", true},
		{"*.tif", "a.tiff", false},
		{"data/*.tif", "data/a.tif", true},
		{"data/*.tif", "data/x/a.tif", false},
		{"data/**/*.tif", "data/a.tif", true},
		{"data/**/*.tif", "data/x/y/a.tif", true},
		{"data/**", "data/x/y/a.bin", true},
		{"data/**", "other/a.bin", false},
		{"/top.bin", "top.bin", true},
		{"/top.bin", "sub/top.bin", false},
	}
	for _, c := range cases {
		if got := Match(c.pat, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pat, c.name, got, c.want)
		}
	}
	for _, bad := range []string{"", "../x", "a/[", "x\ny"} {
		if Check(bad) == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

func TestGitignoreBlockIsReplacedNotDuplicated(t *testing.T) {
	user := "node_modules/\n*.log"
	a, err := GitignoreWith(user, []string{"*.tif"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := GitignoreWith(a+"extra-after\n", []string{"*.tif", "*.fgb"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(b, BlockBegin) != 1 || !strings.Contains(b, "node_modules/\n*.log\n") || !strings.Contains(b, "extra-after\n") {
		t.Fatalf("block not replaced in place:\n%s", b)
	}
	// The re-include of .chunkvc must come after the patterns it overrides.
	if strings.Index(b, "*.fgb") > strings.Index(b, "!/.chunkvc/**") {
		t.Fatalf("negation precedes a pattern:\n%s", b)
	}
	if _, err := GitignoreWith(BlockBegin+"\n*.tif\n", nil); err == nil {
		t.Fatal("unterminated block accepted")
	}
}
