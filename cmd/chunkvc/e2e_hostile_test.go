package main

import (
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
