package main

import (
	"strings"
	"testing"
)

// The README and --help promise exit status 2 for every mistake in how
// chunkvc is called: an unknown command, an unknown flag, a missing or
// extra argument.
func TestUsageErrorsExit2(t *testing.T) {
	r := newRunner(t)
	help := r.cv("--help")
	if !strings.Contains(help, "2    usage error: unknown command") {
		t.Fatalf("--help does not document exit status 2:\n%s", help)
	}
	for _, c := range []struct {
		args []string
		says string // on stderr
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"staus"}, "status"}, // cobra's suggestion
		{[]string{"-C", r.dir, "frobnicate", "--json"}, `unknown command "frobnicate"`},
		{[]string{"--bogus"}, "unknown flag: --bogus (see chunkvc --help)"},
		{[]string{"status", "--bogus"}, "unknown flag: --bogus (see chunkvc status --help)"},
		{[]string{"-C"}, "flag needs an argument"},
		{[]string{"cat"}, "accepts 1 arg(s), received 0"},
		{[]string{"ls-chunks"}, "accepts 1 arg(s), received 0"},
		{[]string{"status", "extra"}, `unknown command "extra"`},
		{[]string{"commit"}, "a commit message is required"},
		{[]string{"fsck", "--verify=quick"}, "--verify must be size or full"},
	} {
		res := r.run(binary, c.args...)
		if res.code != exitUsage || !strings.Contains(res.stderr, c.says) {
			t.Errorf("chunkvc %s: exit %d, want %d, with %q on stderr\nstderr: %s", strings.Join(c.args, " "), res.code, exitUsage, c.says, res.stderr)
		}
	}
}
