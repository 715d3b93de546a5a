package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A line counter prints a start line, at most one line per interval
// while work goes on, and a done line; json lines decode as events.
func TestLineCounter(t *testing.T) {
	var out bytes.Buffer
	c := newLineCounter(&out, true)
	now := time.Unix(100, 0)
	c.now = func() time.Time { return now }
	c.Start("hash", 1000)
	for range 10 {
		now = now.Add(300 * time.Millisecond)
		c.Add(100)
	}
	c.Done()
	c.Done() // a second Done of the same stage prints nothing
	var events []progressEvent
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var e progressEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		events = append(events, e)
	}
	// 3 s of work in 300 ms steps: progress at 1.2, 2.4 s (every ≥ 1 s).
	if len(events) != 4 || events[0].Event != "start" || events[1].Event != "progress" || events[3].Event != "done" ||
		events[3].Done != 1000 || events[3].Total != 1000 || events[1].Done != 400 {
		t.Fatalf("events %+v", events)
	}
	out.Reset()
	p := newLineCounter(&out, false)
	p.Start("upload", 0)
	p.Add(2048)
	p.Done()
	if got := out.String(); !strings.Contains(got, "upload: start") || !strings.Contains(got, "upload: done 2.0 KiB") {
		t.Fatalf("plain lines %q", got)
	}
}

// --progress=plain reports a commit's stages on stderr even when stderr
// is not a terminal, without touching --json's stdout; a bad mode is a
// usage error.
func TestProgressPlainFlag(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(3<<20, 1))
	res := r.run(binary, "--progress=json", "commit", "--json", "-m", "first")
	if res.code != exitOK || !json.Valid([]byte(res.stdout)) {
		t.Fatalf("commit --json with --progress=json: exit %d\n%s", res.code, res.stdout)
	}
	if !strings.Contains(res.stderr, `"event":"done"`) {
		t.Errorf("no progress events on stderr: %q", res.stderr)
	}
	if res := r.run(binary, "--progress=loud", "status"); res.code != exitUsage {
		t.Errorf("--progress=loud: exit %d, want %d", res.code, exitUsage)
	}
}
