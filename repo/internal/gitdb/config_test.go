package gitdb

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ParseConfig reads a key as git config --get does (the last value wins,
// names compare without case) and all of its values as --get-all does.
func TestParseConfigIsGitConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config")
	text := "[core]\n\tbare = false\n[chunkvc]\n\tstore = /a\n\ttrustedStore = /t1\n" +
		"[ChunkVC]\n\tSTORE = \"/b c\"\n\ttrustedstore = /t2 ; a comment\n[other]\n\tstore = /x\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Get("chunkvc", "store"), git(t, dir, "config", "--file", file, "--get", "chunkvc.store"); got != want {
		t.Errorf("Get(chunkvc, store) = %q, git config says %q", got, want)
	}
	want := strings.Split(git(t, dir, "config", "--file", file, "--get-all", "chunkvc.trustedStore"), "\n")
	if got := c.GetAll("chunkvc", "trustedStore"); !slices.Equal(got, want) {
		t.Errorf("GetAll(chunkvc, trustedStore) = %q, git config says %q", got, want)
	}
	if got := c.Get("chunkvc", "unset"); got != "" {
		t.Errorf("an unset key reads %q", got)
	}
	if _, err := ParseConfig([]byte("[chunkvc\n\tstore = x\n")); err == nil {
		t.Error("a section header without its ] parses")
	}
}

// The cost of reading .git/config: ParseConfig, and the library's full
// read of it (every section decoded into its settings).
func BenchmarkConfig(b *testing.B) {
	dir, _ := newRepo(b)
	git(b, dir, "config", "--add", "chunkvc.trustedStore", "/srv/store")
	g, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ParseConfig", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseConfig(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Repository.Config", func(b *testing.B) {
		for b.Loop() {
			if _, err := g.r.Config(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
