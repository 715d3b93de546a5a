package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Manifests arrive in pull requests: a forged one must never make chunkvc
// write outside the work tree or write wrong bytes.
func TestHostileManifestsAreRefused(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(100000, 1))
	r.cv("commit", "-m", "v1")
	good := string(r.read(".chunkvc/manifests/a.bin"))
	outside := t.TempDir()

	cases := map[string]string{
		"path escape":     strings.Replace(good, "path a.bin", "path ../"+filepath.Base(outside)+"/evil.bin", 1),
		"path mismatch":   strings.Replace(good, "path a.bin", "path b.bin", 1),
		"absurd count":    replaceLine(good, "chunks ", "chunks 99999999"),
		"not canonical":   strings.Replace(good, "size ", "size 0", 1),
		"forged digest":   replaceLine(good, "digest ", "digest blake3:"+strings.Repeat("0", 64)),
		"forged chunk id": replaceLastField(good, strings.Repeat("ab", 32)),
		"forged size":     strings.Replace(good, "size 100000", "size 100001", 1),
		"truncated":       good[:len(good)/2],
		"unknown version": strings.Replace(good, "chunkvc-manifest 1", "chunkvc-manifest 9", 1),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			r.write(".chunkvc/manifests/a.bin", []byte(m))
			r.git("add", ".chunkvc/manifests/a.bin")
			r.git("commit", "-q", "-m", "hostile: "+name)
			os.Remove(r.path("a.bin"))
			res := r.run(binary, "checkout")
			if res.code == 0 {
				t.Fatalf("checkout of a %s manifest succeeded", name)
			}
			if _, err := os.Stat(r.path("a.bin")); err == nil {
				t.Fatalf("%s: a file was written under the real name", name)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("%s: wrote outside the work tree", name)
			}
			if res := r.run(binary, "fsck", "--verify=full"); res.code != exitIntegrity {
				t.Fatalf("%s: fsck exit %d, want %d", name, res.code, exitIntegrity)
			}
			r.git("reset", "-q", "--hard", "HEAD~1")
		})
	}
}

func replaceLine(s, prefix, line string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = line
		}
	}
	return strings.Join(lines, "\n")
}

// replaceLastField swaps the hash of the first chunk line.
func replaceLastField(s, hash string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 3 && len(f[2]) == 64 && !strings.HasPrefix(l, "digest") && !strings.HasPrefix(l, "layout") {
			f[2] = hash
			lines[i] = strings.Join(f, " ")
			break
		}
	}
	return strings.Join(lines, "\n")
}

// A manifest's layout line gives the layout blob's length: one that
// misstates it, however little or absurdly, is a forgery or damage that
// checkout, cat and fsck report as an integrity problem naming the file.
func TestLayoutLengthIsChecked(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(100000, 2))
	r.cv("commit", "-m", "v1")
	good := string(r.read(".chunkvc/manifests/a.bin"))
	real := layoutSize(t, r, "a.bin")
	for _, n := range []int64{1 << 62, 0, 999, real + 1, real - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var line string
			for _, l := range strings.Split(good, "\n") {
				if f := strings.Fields(l); len(f) == 3 && f[0] == "layout" {
					line = fmt.Sprintf("layout %s %d", f[1], n)
				}
			}
			r.write(".chunkvc/manifests/a.bin", []byte(replaceLine(good, "layout ", line)))
			r.git("commit", "-q", "-a", "-m", "layout length "+fmt.Sprint(n))
			defer r.git("reset", "-q", "--hard", "HEAD~1")
			os.Remove(r.path("a.bin"))
			res := r.run(binary, "checkout")
			if res.code != exitIntegrity || !strings.Contains(res.stderr, "a.bin") || !strings.Contains(res.stderr, "layout") {
				t.Fatalf("checkout: exit %d, want %d naming a.bin and its layout\n%s", res.code, exitIntegrity, res.stderr)
			}
			if _, err := os.Stat(r.path("a.bin")); err == nil {
				t.Fatal("checkout wrote a.bin")
			}
			res = r.run(binary, "cat", "HEAD:a.bin")
			if res.code != exitIntegrity || res.stdout != "" {
				t.Fatalf("cat: exit %d, %d bytes on stdout; want %d and none\n%s", res.code, len(res.stdout), exitIntegrity, res.stderr)
			}
			res = r.run(binary, "fsck", "--verify=full")
			if res.code != exitIntegrity || !strings.Contains(res.stdout, " a.bin chunk (layout)") {
				t.Fatalf("fsck --verify=full: exit %d, want %d with a problem of a.bin's layout\n%s%s", res.code, exitIntegrity, res.stdout, res.stderr)
			}
		})
	}
}
