package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/internal/miniotest"
)

// Issue 10, fault injection: the real binary commits through a proxy that
// fails a fraction of S3 requests (5xx, resets before and after the
// server acted). Every commit either succeeds, and fsck --remote
// --verify=full passes against MinIO itself, or fails leaving HEAD where
// it was: never a manifest pointing at a missing chunk. A push whose
// uploads all fail leaves the Git remote untouched. Once the faults stop,
// repeating succeeds.
func TestS3Faults(t *testing.T) {
	srv := miniotest.Start(t)
	p := faultproxy.Start(t, srv.Endpoint, 10)
	a := newRunner(t)
	a.env = append(a.env, srv.Env()...)
	a.env = append(a.env, "AWS_ENDPOINT_URL_S3="+p.URL, "CHUNKVC_S3_TIMEOUT=2s", "CHUNKVC_S3_RETRY_TIME=3s")
	// fsck talks to MinIO directly: it checks what the server holds.
	direct := append(append([]string(nil), a.env...), "AWS_ENDPOINT_URL_S3="+srv.Endpoint)
	fsck := func(when string) {
		t.Helper()
		proxied := a.env
		a.env = direct
		res := a.run(binary, "fsck", "--remote", "--verify=full")
		a.env = proxied
		if res.code != 0 {
			t.Fatalf("fsck --remote --verify=full %s: exit %d\n%s%s", when, res.code, res.stdout, res.stderr)
		}
	}
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", "s3://chunkvc-fault/repo")
	a.cv("track", "*.bin")
	a.write("base.bin", randomBytes(512<<10, 1))
	a.cv("commit", "-m", "base")
	fsck("after the base commit")

	const bucket = "/chunkvc-fault/"
	writes := func(r *http.Request) bool { return r.Method == http.MethodPut || r.Method == http.MethodPost }
	rounds := []struct {
		name     string
		rule     faultproxy.Rule
		mustFail bool
	}{
		{"10% SlowDown", faultproxy.Rule{Path: bucket, Fraction: 0.1, Kind: faultproxy.Error}, false},
		{"15% reset before", faultproxy.Rule{Path: bucket, Fraction: 0.15, Kind: faultproxy.ResetBefore}, false},
		{"30% of writes reset after", faultproxy.Rule{Path: bucket, Match: writes, Fraction: 0.3, Kind: faultproxy.ResetAfter}, false},
		{"50% InternalError", faultproxy.Rule{Path: bucket, Fraction: 0.5, Kind: faultproxy.Error, Status: 500}, false},
		{"every PUT fails", faultproxy.Rule{Path: bucket, Method: http.MethodPut, Kind: faultproxy.Error, Status: 500}, true},
	}
	// A commit to S3 is a handful of requests (a LIST and the pack indexes
	// to read, one pack and its index to PUT), so besides each round's
	// random faults the first matching request always faults: every round
	// injects at least one.
	var ok, failed int
	var retried int64 // the retries successful commits report in their stages
	for i, round := range rounds {
		// Two new files and an edit: chunks the store has never seen.
		a.write(fmt.Sprintf("r%d/a.bin", i), randomBytes(1<<20, int64(10*i+2)))
		a.write(fmt.Sprintf("r%d/b.bin", i), randomBytes(768<<10, int64(10*i+3)))
		a.write("base.bin", randomBytes(512<<10, int64(10*i+4)))
		head := a.git("rev-parse", "HEAD")
		h := p.Add(round.rule)
		first := round.rule
		first.Fraction, first.Count = 1, 1
		h1 := p.Add(first)
		start := time.Now()
		res := a.run(binary, "commit", "--json", "-m", round.name)
		took := time.Since(start)
		p.Remove(h)
		p.Remove(h1)
		fired := h.Fired() + h1.Fired()
		t.Logf("%s: exit %d after %v, %d of %d requests faulted", round.name, res.code, took.Round(time.Millisecond), fired, h.Matched())
		if fired == 0 {
			t.Errorf("%s: no fault injected", round.name)
		}
		if took > 20*time.Second {
			t.Errorf("%s: commit took %v", round.name, took)
		}
		now := a.git("rev-parse", "HEAD")
		switch {
		case res.code == 0 && round.mustFail:
			t.Fatalf("%s: commit succeeded", round.name)
		case res.code == 0:
			ok++
			var c struct {
				Stages []struct {
					Retries int64 `json:"retries"`
				} `json:"stages"`
			}
			if err := json.Unmarshal([]byte(res.stdout), &c); err != nil {
				t.Fatalf("%s: commit --json: %v\n%s", round.name, err, res.stdout)
			}
			for _, s := range c.Stages {
				retried += s.Retries
			}
			if now == head {
				t.Fatalf("%s: commit succeeded but HEAD did not move", round.name)
			}
		default:
			failed++
			if now != head {
				t.Fatalf("%s: failed commit moved HEAD\n%s", round.name, res.stderr)
			}
			if !strings.Contains(res.stderr, "chunkvc-fault") {
				t.Errorf("%s: failure does not name the store:\n%s", round.name, res.stderr)
			}
			t.Logf("%s: %s", round.name, firstLine(res.stderr))
		}
		fsck("after " + round.name)
	}
	if ok == 0 {
		t.Error("no commit succeeded through transient faults")
	}
	if retried == 0 {
		t.Error("commits that went through injected faults report no retries in their stages")
	}

	// Faults gone: the commit that failed goes through, and the store
	// holds everything.
	a.cv("commit", "-m", "after the faults")
	fsck("after the faults")

	// Push: an offline commit's chunks wait in the embedded store; a push
	// whose every PUT fails leaves the Git remote where it was.
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("remote", "add", "origin", bare)
	a.cv("push")
	remote := a.git("--git-dir", bare, "rev-parse", "main")
	a.write("offline.bin", randomBytes(1<<20, 99))
	a.cv("commit", "--offline", "-m", "offline")
	h := p.Add(faultproxy.Rule{Path: bucket, Method: http.MethodPut, Kind: faultproxy.Error})
	start := time.Now()
	res := a.run(binary, "push")
	t.Logf("push with every PUT failing: exit %d after %v, %d faults: %s", res.code, time.Since(start).Round(time.Millisecond), h.Fired(), firstLine(res.stderr))
	if res.code == 0 || h.Fired() == 0 {
		t.Fatalf("push with every PUT failing: exit %d, %d faults\n%s", res.code, h.Fired(), res.stderr)
	}
	if got := a.git("--git-dir", bare, "rev-parse", "main"); got != remote {
		t.Fatal("Git remote advanced although the chunk upload failed")
	}
	p.Remove(h)
	var pr pushResult
	a.jsonOf(&pr, "push")
	if !pr.GitPushed || pr.ChunksUploaded == 0 {
		t.Fatalf("push after the faults: %+v", pr)
	}
	if got, want := a.git("--git-dir", bare, "rev-parse", "main"), a.git("rev-parse", "HEAD"); got != want {
		t.Fatalf("Git remote at %s after the push, HEAD at %s", got, want)
	}
	fsck("after the push")
	t.Logf("%d commits through faults succeeded, %d failed; proxy stats %+v", ok, failed, p.Stats())
}
