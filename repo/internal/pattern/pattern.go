package pattern

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Check accepts a glob the way track stores it: slash-separated,
// relative, valid for path.Match in every element.
func Check(p string) error {
	if p == "" || strings.HasPrefix(p, "/") && len(p) == 1 || strings.ContainsAny(p, "\n\r\\") {
		return fmt.Errorf("invalid pattern %q", p)
	}
	for _, el := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if el == ".." {
			return fmt.Errorf("pattern %q leaves the work tree", p)
		}
		if el == "**" {
			continue
		}
		if _, err := path.Match(el, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	return nil
}

// Match reports whether the slash path name matches pattern p with
// gitignore-like rules: a pattern without a slash matches the base name at
// any depth; otherwise it is anchored at the root and "**" matches any
// number of directories.
func Match(p, name string) bool {
	if !strings.Contains(strings.TrimPrefix(p, "/"), "/") && !strings.HasPrefix(p, "/") {
		ok, _ := path.Match(p, path.Base(name))
		return ok
	}
	return matchParts(strings.Split(strings.TrimPrefix(p, "/"), "/"), strings.Split(name, "/"))
}

func matchParts(ps, ns []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for i := 0; i <= len(ns); i++ {
				if matchParts(ps[1:], ns[i:]) {
					return true
				}
			}
			return false
		}
		if len(ns) == 0 {
			return false
		}
		if ok, _ := path.Match(ps[0], ns[0]); !ok {
			return false
		}
		ps, ns = ps[1:], ns[1:]
	}
	return len(ns) == 0
}

// BlockBegin and BlockEnd enclose chunkvc's block of .gitignore.
const (
	BlockBegin = "# >>> chunkvc: data files are versioned by chunkvc, not Git"
	BlockEnd   = "# <<< chunkvc"
)

// GitignoreWith returns .gitignore text whose chunkvc block lists patterns
// (and re-includes .chunkvc/, whose manifests share the data files' names).
// Text outside the block is kept as it is.
func GitignoreWith(old string, patterns []string) (string, error) {
	var before, after string
	if i := strings.Index(old, BlockBegin); i >= 0 {
		j := strings.Index(old[i:], BlockEnd)
		if j < 0 {
			return "", errors.New(".gitignore has a chunkvc block without its end line")
		}
		before = old[:i]
		after = strings.TrimPrefix(old[i+j+len(BlockEnd):], "\n")
	} else {
		before = old
		if before != "" && !strings.HasSuffix(before, "\n") {
			before += "\n"
		}
	}
	var b strings.Builder
	b.WriteString(before)
	b.WriteString(BlockBegin + "\n")
	for _, p := range patterns {
		b.WriteString(p + "\n")
	}
	b.WriteString("!/.chunkvc/\n!/.chunkvc/**\n")
	b.WriteString(BlockEnd + "\n")
	b.WriteString(after)
	return b.String(), nil
}
