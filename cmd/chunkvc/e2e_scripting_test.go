package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// commit --if-changed makes "nothing to commit" a success a script can
// read (--json "commit": null) and still commits when something changed;
// status --exit-code exits 1 exactly when something differs from HEAD.
func TestIfChangedAndStatusExitCode(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(70000, 1))
	if res := r.run(binary, "status", "--exit-code"); res.code != exitFailure || !strings.Contains(res.stdout, "a.bin") {
		t.Fatalf("status --exit-code with a new file: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	if res := r.run(binary, "status", "--exit-code", "--json"); res.code != exitFailure || !json.Valid([]byte(res.stdout)) {
		t.Fatalf("status --exit-code --json with a new file: exit %d, %q", res.code, res.stdout)
	}
	var first struct {
		Commit *string `json:"commit"`
	}
	r.jsonOf(&first, "commit", "--if-changed", "--json", "-m", "first")
	if first.Commit == nil || len(*first.Commit) != 40 {
		t.Fatalf("commit --if-changed of a new file: commit %v", first.Commit)
	}
	if res := r.run(binary, "status", "--exit-code"); res.code != exitOK || strings.Contains(res.stdout, "a.bin") {
		t.Fatalf("status --exit-code when clean: exit %d, %q", res.code, res.stderr)
	}
	res := r.run(binary, "commit", "--if-changed", "--json", "-m", "again")
	var again map[string]json.RawMessage
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &again) != nil || string(again["commit"]) != "null" {
		t.Fatalf("commit --if-changed with nothing to commit: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	if res := r.run(binary, "commit", "--if-changed", "-m", "again"); res.code != exitOK || !strings.Contains(res.stderr+res.stdout, "nothing to commit") {
		t.Fatalf("commit --if-changed, text: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	if res := r.run(binary, "commit", "-m", "again"); res.code != exitFailure {
		t.Fatalf("commit without --if-changed, nothing to commit: exit %d", res.code)
	}
	if got := r.git("log", "--format=%s"); got != "first\n" {
		t.Fatalf("git log: %q", got)
	}
}
