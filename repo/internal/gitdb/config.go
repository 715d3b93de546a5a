package gitdb

import (
	"bytes"

	gitformat "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Config is a git config file, parsed. Includes are not followed, so a
// key set in an included file is not in it.
type Config struct {
	c *gitformat.Config
}

// ParseConfig parses the bytes of a git config file with the parser Open
// reads .git/config with, so it does not refuse a file Open took.
func ParseConfig(data []byte) (*Config, error) {
	c := gitformat.New()
	if err := gitformat.NewDecoder(bytes.NewReader(data)).Decode(c); err != nil {
		return nil, err
	}
	return &Config{c: c}, nil
}

// Get returns the last value of key in section (both compared without
// regard to case, as git does), or "" when it is not set.
func (c *Config) Get(section, key string) string {
	return c.c.Section(section).Options.Get(key)
}

// GetAll returns every value of key in section, in file order.
func (c *Config) GetAll(section, key string) []string {
	return c.c.Section(section).Options.GetAll(key)
}
