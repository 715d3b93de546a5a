package gitdb

import (
	"maps"
	"testing"
)

// Tips names each branch, tag (peeled to its commit) and remote-tracking
// ref by its commit, leaves other refs out, and adds HEAD only when it is
// detached; RemoteURLs names each remote's fetch URL.
func TestTips(t *testing.T) {
	dir, hs := newRepo(t)
	git(t, dir, "tag", "-a", "-m", "v1", "v1", hs[0].String())
	git(t, dir, "update-ref", "refs/remotes/origin/main", hs[0].String())
	git(t, dir, "update-ref", "refs/notes/commits", hs[1].String())
	want := map[string]string{"refs/heads/main": hs[1].String(), "refs/tags/v1": hs[0].String(), "refs/remotes/origin/main": hs[0].String()}
	tips := func() map[string]string {
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.Tips()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := tips(); !maps.Equal(got, want) {
		t.Fatalf("on a branch: got %v, want %v", got, want)
	}
	git(t, dir, "checkout", "-q", "--detach", hs[0].String())
	want["HEAD"] = hs[0].String()
	if got := tips(); !maps.Equal(got, want) {
		t.Fatalf("detached: got %v, want %v", got, want)
	}

	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if urls := g.RemoteURLs(); urls != nil {
		t.Fatalf("no remote: got %v", urls)
	}
	git(t, dir, "remote", "add", "origin", "/srv/data.git")
	g.Reload()
	if urls := g.RemoteURLs(); !maps.Equal(urls, map[string]string{"origin": "/srv/data.git"}) {
		t.Fatalf("got %v", urls)
	}
}
