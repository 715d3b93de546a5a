package repo

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/pattern"
)

// Config is .chunkvc/config: committed, so every clone agrees on what is
// tracked and where the chunks live. It never holds credentials.
type Config struct {
	// Store is the chunk store URL; empty means the embedded local store.
	Store string
	// Track lists the tracked glob patterns, in the order they were added.
	Track []string
	// Datasets lists the tracked datasets (Zarr stores), each a directory
	// as a slash path from the root, in the order they were added: a
	// dataset is committed as one unit, and the files under it are its
	// members, never tracked one by one whatever the patterns say.
	Datasets []string
	// Policies are the gates commit, check and push apply, in file order.
	Policies []Policy
}

const configHeader = "# chunkvc repository configuration; edit with `chunkvc init` and `chunkvc track`.\n"

// Encode writes the config file text.
func (c *Config) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(configHeader)
	b.WriteString("version = 1\n")
	if c.Store != "" {
		fmt.Fprintf(&b, "store = %s\n", c.Store)
	}
	for _, p := range c.Track {
		fmt.Fprintf(&b, "track = %s\n", p)
	}
	for _, d := range c.Datasets {
		fmt.Fprintf(&b, "dataset = %s\n", d)
	}
	for _, p := range c.Policies {
		fmt.Fprintf(&b, "%s\n", p)
	}
	return b.Bytes()
}

// ParseConfig reads the config file text.
func ParseConfig(data []byte) (*Config, error) {
	c := &Config{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want key = value, got %q", ln, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "version":
			if v != "1" {
				return nil, fmt.Errorf("line %d: config version %q is not supported by this chunkvc", ln, v)
			}
		case "store":
			c.Store = v
		case "track":
			if err := pattern.Check(v); err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			c.Track = append(c.Track, v)
		case "dataset":
			if err := checkDataset(v, c.Datasets); err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			c.Datasets = append(c.Datasets, v)
		case string(RuleAppendOnly), string(RuleStrictProfile), string(RuleGeoIdentical), string(RuleCRS):
			p, err := parsePolicy(Rule(k), v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			c.Policies = append(c.Policies, p)
		default:
			return nil, fmt.Errorf("line %d: unknown key %q", ln, k)
		}
	}
	return c, sc.Err()
}

// IsTracked reports whether the slash path name matches a tracked pattern.
func (c *Config) IsTracked(name string) bool {
	for _, p := range c.Track {
		if pattern.Match(p, name) {
			return true
		}
	}
	return false
}

// DatasetOf returns the tracked dataset that slash path p is, or lies in.
func (c *Config) DatasetOf(p string) (string, bool) {
	for _, d := range c.Datasets {
		if p == d || strings.HasPrefix(p, d+"/") {
			return d, true
		}
	}
	return "", false
}

// IsDataset reports whether slash path p is a tracked dataset itself.
func (c *Config) IsDataset(p string) bool {
	return slices.Contains(c.Datasets, p)
}

// checkDataset checks that d can be a dataset beside those of have: a
// clean relative path outside .git and .chunkvc, neither inside another
// dataset nor holding one.
func checkDataset(d string, have []string) error {
	if err := manifest.CheckPath(d); err != nil {
		return fmt.Errorf("dataset %q: %w", d, err)
	}
	if isInternal(d) {
		return fmt.Errorf("dataset %q is inside .git or .chunkvc", d)
	}
	for _, o := range have {
		if o == d || strings.HasPrefix(d, o+"/") || strings.HasPrefix(o, d+"/") {
			return fmt.Errorf("dataset %q overlaps dataset %q", d, o)
		}
	}
	return nil
}

// ignored is what the .gitignore block lists: the tracked patterns and
// each dataset's directory, anchored.
func (c *Config) ignored() []string {
	out := slices.Clone(c.Track)
	for _, d := range c.Datasets {
		out = append(out, "/"+d+"/")
	}
	return out
}
