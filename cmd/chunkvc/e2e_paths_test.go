package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// statusJSON mirrors status --json.
type statusJSON struct {
	Files []struct{ Path, Status string } `json:"files"`
	Clean bool                            `json:"clean"`
}

// agreeClean fails unless git and chunkvc both see a clean work tree.
func agreeClean(t *testing.T, r *runner, when string) {
	t.Helper()
	var st statusJSON
	r.jsonOf(&st, "status")
	if g := r.git("status", "--porcelain"); g != "" || !st.Clean {
		t.Fatalf("%s: git status --porcelain %q, chunkvc status %+v; want both clean", when, g, st)
	}
}

// A tracked file replaced by a folder of tracked files is, as git has it,
// the file's deletion and new files; the reverse too. The commit holds
// exactly that and the work tree's manifests match it: git status and
// chunkvc status agree that nothing is left to commit.
func TestFileReplacedByFolder(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(30000, 41))
	r.write("d.bin/y.bin", randomBytes(30000, 42))
	r.cv("commit", "-m", "v1")

	os.Remove(r.path("a.bin"))
	r.write("a.bin/x.bin", randomBytes(3000, 43))
	os.RemoveAll(r.path("d.bin"))
	r.write("d.bin", randomBytes(3000, 44))
	var st statusJSON
	r.jsonOf(&st, "status")
	want := []string{"a.bin deleted", "a.bin/x.bin added", "d.bin added", "d.bin/y.bin deleted"}
	var got []string
	for _, f := range st.Files {
		got = append(got, f.Path+" "+f.Status)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("status before the commit: %q, want %q", got, want)
	}
	var res commitResult
	r.jsonOf(&res, "commit", "-m", "v2")
	got = nil
	for _, f := range res.Files {
		got = append(got, f.Path+" "+f.Status)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("commit: %q, want %q", got, want)
	}
	tree := r.git("ls-tree", "-r", "--name-only", "HEAD", ".chunkvc/manifests/")
	if tree != ".chunkvc/manifests/a.bin/x.bin\n.chunkvc/manifests/d.bin\n" {
		t.Fatalf("manifests in HEAD:\n%s", tree)
	}
	agreeClean(t, r, "after the commit")
}

// Something of the user's where a manifest must go is refused before the
// Git commit is made: HEAD does not move, exit status 4.
func TestManifestPlaceTakenRefused(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(3000, 45))
	r.cv("commit", "-m", "v1")
	head := r.git("rev-parse", "HEAD")
	r.write(".chunkvc/manifests/b.bin/notes.txt", []byte("mine\n"))
	r.write("b.bin", randomBytes(3000, 46))
	res := r.run(binary, "commit", "-m", "v2")
	if res.code != exitRefused || !strings.Contains(res.stderr, ".chunkvc/manifests/b.bin/notes.txt") {
		t.Fatalf("commit: exit %d, want %d naming what is in the way\n%s", res.code, exitRefused, res.stderr)
	}
	if r.git("rev-parse", "HEAD") != head {
		t.Fatal("HEAD moved")
	}
	os.RemoveAll(r.path(".chunkvc/manifests/b.bin"))
	r.cv("commit", "-m", "v2")
	agreeClean(t, r, "after the commit")
}

// A tracked file whose name a manifest cannot hold (a tab, a line break)
// is left out by name, with a warning and in --json, and the rest is
// committed; status shows it as refused.
func TestUnnameableFilesRefused(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	tab, nl := "b\tx.bin", "c\ny.bin"
	r.write("a.bin", randomBytes(3000, 51))
	r.write(tab, randomBytes(3000, 52))
	r.write(nl, randomBytes(3000, 53))

	var st struct {
		Files []struct{ Path, Status, Reason string } `json:"files"`
		Clean bool                                    `json:"clean"`
	}
	r.jsonOf(&st, "status")
	refusedIn := func(files []struct{ Path, Status, Reason string }) []string {
		var out []string
		for _, f := range files {
			if f.Status == "refused" && strings.Contains(f.Reason, "control character") {
				out = append(out, f.Path)
			}
		}
		return out
	}
	if got := refusedIn(st.Files); !slices.Equal(got, []string{tab, nl}) || st.Clean {
		t.Fatalf("status --json: %+v; want %q and %q refused", st, tab, nl)
	}
	if out := r.cv("status"); !strings.Contains(out, `refused   "b\tx.bin"`) || !strings.Contains(out, `refused   "c\ny.bin"`) {
		t.Fatalf("status does not show the refused names quoted:\n%s", out)
	}

	var res struct {
		commitResult
		Refused []struct{ Path, Reason string } `json:"refused"`
	}
	r.jsonOf(&res, "commit", "-m", "v1")
	if len(res.Files) != 1 || res.Files[0].Path != "a.bin" || len(res.Refused) != 2 || res.Refused[0].Path != tab || res.Refused[1].Path != nl {
		t.Fatalf("commit --json: files %+v, refused %+v", res.Files, res.Refused)
	}
	if tree := r.git("ls-tree", "-r", "--name-only", "HEAD", ".chunkvc/manifests/"); tree != ".chunkvc/manifests/a.bin\n" {
		t.Fatalf("manifests in HEAD:\n%s", tree)
	}

	r.write("a.bin", randomBytes(3000, 54))
	out := r.run(binary, "commit", "-m", "v2")
	if out.code != 0 || !strings.Contains(out.stderr, `warning: "b\tx.bin" not committed: its name has a line break, tab`) {
		t.Fatalf("commit: exit %d, want 0 with a warning naming %q\n%s", out.code, tab, out.stderr)
	}
	out = r.run(binary, "commit", "-m", "v3")
	if out.code != exitFailure || !strings.Contains(out.stderr, "nothing to commit") || !strings.Contains(out.stderr, `"c\ny.bin"`) {
		t.Fatalf("commit of refused files alone: exit %d, want %d saying nothing to commit and naming them\n%s", out.code, exitFailure, out.stderr)
	}
}
