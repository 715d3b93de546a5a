package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/miniotest"
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

// A store that cannot be reached (MinIO stopped, or an endpoint on a
// closed port) is neither an integrity problem nor a plain failure:
// fsck --remote, fsck and cat exit 5, in bounded time, and say which
// store; restarted, fsck --remote passes.
func TestStoreUnreachableExit5(t *testing.T) {
	srv := miniotest.Start(t)
	r := newRunner(t)
	r.env = append(r.env, srv.Env()...)
	r.env = append(r.env, "CHUNKVC_S3_TIMEOUT=1s", "CHUNKVC_S3_RETRY_TIME=2s")
	r.cv("init", "--store", "s3://chunkvc-unreachable/x")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(200000, 31))
	r.cv("commit", "-m", "v1")
	r.cv("fsck", "--remote")

	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	srv.Stop()
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"stopped fsck --remote", nil, []string{"fsck", "--remote"}},
		{"stopped fsck", nil, []string{"fsck"}},
		{"stopped cat", nil, []string{"cat", "HEAD:a.bin"}},
		{"closed port fsck --remote", []string{"AWS_ENDPOINT_URL_S3=" + closed}, []string{"fsck", "--remote", "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved := r.env
			r.env = append(append([]string(nil), r.env...), c.env...)
			defer func() { r.env = saved }()
			start := time.Now()
			res := r.run(binary, c.args...)
			took := time.Since(start)
			t.Logf("chunkvc %s: exit %d in %v", strings.Join(c.args, " "), res.code, took.Round(time.Millisecond))
			if res.code != exitUnavailable || !strings.Contains(res.stderr, "s3://chunkvc-unreachable/x") {
				t.Fatalf("exit %d, want %d naming the store\nstdout: %s\nstderr: %s", res.code, exitUnavailable, res.stdout, res.stderr)
			}
			if res.stdout != "" {
				t.Fatalf("something on stdout: %s", res.stdout)
			}
			if took > 30*time.Second {
				t.Fatalf("took %v", took)
			}
		})
	}
	srv.Restart()
	r.cv("fsck", "--remote")
}
