package repo

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/chunkvc/chunkvc/repo/internal/pattern"
)

// Config is .chunkvc/config: committed, so every clone agrees on what is
// tracked and where the chunks live. It never holds credentials.
type Config struct {
	// Store is the chunk store URL; empty means the embedded local store.
	Store string
	// Track lists the tracked glob patterns, in the order they were added.
	Track []string
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
