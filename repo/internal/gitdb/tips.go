package gitdb

import "strings"

// Tips returns, by ref name, the commit each branch, tag and
// remote-tracking ref names (a tag peeled to its commit; a ref naming no
// commit left out), and HEAD's when it is detached: what a registry entry
// records so that another repository can keep those commits' chunks.
func (g *Repo) Tips() (map[string]string, error) {
	tips := map[string]string{}
	err := g.Refs().List(func(name string, h Hash) error {
		if !strings.HasPrefix(name, "refs/heads/") && !strings.HasPrefix(name, "refs/tags/") && !strings.HasPrefix(name, "refs/remotes/") {
			return nil
		}
		if c, err := g.Peel(h); err == nil {
			tips[name] = c.Hash.String()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if branch, det, err := g.Refs().Head(); err == nil && branch == "" {
		tips["HEAD"] = det.String()
	}
	return tips, nil
}

// RemoteURLs returns the URL each remote is fetched from, by remote name;
// nil when there is none or the config cannot be read.
func (g *Repo) RemoteURLs() map[string]string {
	remotes, err := g.Remotes()
	if err != nil {
		return nil
	}
	var urls map[string]string
	for _, rm := range remotes {
		if len(rm.URLs) > 0 {
			if urls == nil {
				urls = map[string]string{}
			}
			urls[rm.Name] = rm.URLs[0]
		}
	}
	return urls
}
