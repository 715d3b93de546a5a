package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// chunkvc merge installs the driver and hook itself, merges a branch that
// changed another data file (written into the work tree by the hook) and
// reports the merge commit and the files; a file both sides changed stops
// the merge with exit 1 and its conflict lines, and git merge --abort
// leaves nothing behind.
func TestMergeCommand(t *testing.T) {
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(200000, 1))
	r.write("b.bin", randomBytes(200000, 2))
	r.write("c.bin", randomBytes(200000, 3))
	r.cv("commit", "-q", "-m", "base")
	r.git("checkout", "-q", "-b", "theirs-a")
	theirsA := randomBytes(200000, 4)
	r.write("a.bin", theirsA)
	r.cv("commit", "-q", "-m", "theirs: a.bin")
	r.git("checkout", "-q", "-b", "theirs-c", "main")
	r.cv("checkout", "--force")
	r.write("c.bin", randomBytes(200000, 5))
	r.cv("commit", "-q", "-m", "theirs: c.bin")
	r.git("checkout", "-q", "-b", "side", "main")
	r.cv("checkout", "--force")
	r.write("b.bin", randomBytes(200000, 6))
	r.cv("commit", "-q", "-m", "side")

	var ok struct {
		Commit string   `json:"commit"`
		Files  []string `json:"files"`
	}
	r.jsonOf(&ok, "merge", "--json", "theirs-a")
	if len(ok.Commit) != 40 || strings.Join(ok.Files, " ") != "a.bin" {
		t.Fatalf("merge of theirs-a: %+v", ok)
	}
	if !bytes.Equal(r.read("a.bin"), theirsA) {
		t.Fatal("a.bin, changed only on their side, is not theirs after the merge")
	}
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after the merge: %q", st)
	}

	r.write("c.bin", randomBytes(200000, 7))
	r.cv("commit", "-q", "-m", "side changes c.bin too")
	res := r.run(binary, "merge", "--json", "theirs-c")
	var bad struct {
		Commit    string `json:"commit"`
		Conflicts []struct {
			Path      string   `json:"path"`
			Conflicts []string `json:"conflicts"`
		} `json:"conflicts"`
	}
	if res.code != exitFailure || json.Unmarshal([]byte(res.stdout), &bad) != nil || bad.Commit != "" ||
		len(bad.Conflicts) != 1 || bad.Conflicts[0].Path != "c.bin" || len(bad.Conflicts[0].Conflicts) == 0 {
		t.Fatalf("merge with a conflict: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	var st struct {
		Files []struct {
			Path, Status string
			Conflicts    []string `json:"conflicts"`
		} `json:"files"`
	}
	r.jsonOf(&st, "status", "--json")
	if len(st.Files) != 1 || st.Files[0].Path != "c.bin" || st.Files[0].Status != "conflict" || len(st.Files[0].Conflicts) == 0 {
		t.Fatalf("status during the stopped merge: %+v", st.Files)
	}
	r.git("merge", "--abort")
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after git merge --abort: %q", st)
	}
	r.cv("fsck")
}
