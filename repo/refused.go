package repo

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chunkvc/chunkvc/manifest"
)

// Refused is a tracked file that commit leaves out, and status reports,
// because a manifest cannot name it: manifests are lines of text, and a
// name with a line break, a tab or another control character has no
// canonical spelling in one.
type Refused struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// storable splits listed, tracked files of the work tree, into those a
// manifest can name and those it cannot. Most often none is refused, and
// listed comes back as it is.
func storable(listed []string) ([]string, []Refused) {
	var refused []Refused
	ok := listed
	for i, p := range listed {
		err := manifest.CheckPath(p)
		if err == nil {
			if refused != nil {
				ok = append(ok, p)
			}
			continue
		}
		if refused == nil {
			ok = append([]string(nil), listed[:i]...)
		}
		refused = append(refused, Refused{Path: p, Reason: refusal(p, err)})
	}
	return ok, refused
}

// refusal says why a manifest cannot name p (err is CheckPath's).
func refusal(p string, err error) string {
	switch {
	case !utf8.ValidString(p):
		return "its name is not valid UTF-8, which a manifest cannot hold; rename it"
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "its name has a line break, tab or other control character, which a manifest cannot hold; rename it"
	case strings.Contains(p, `\`):
		return "its name has a backslash, which a manifest cannot hold; rename it"
	}
	return fmt.Sprintf("a manifest cannot name it (%v); rename it", err)
}

// refusedNames lists refused files for a message.
func refusedNames(refused []Refused) string {
	names := make([]string, len(refused))
	for i, f := range refused {
		names[i] = fmt.Sprintf("%q", f.Path)
	}
	return strings.Join(names, ", ")
}
