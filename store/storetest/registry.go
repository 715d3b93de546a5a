package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// listNamed returns the names ListNamed reports under prefix, failing the
// test on an error.
func listNamed(t *testing.T, r store.Registry, prefix string) []string {
	t.Helper()
	var names []string
	if err := r.ListNamed(t.Context(), prefix, func(n string) error {
		names = append(names, n)
		return nil
	}); err != nil {
		t.Fatalf("list named %q: %v", prefix, err)
	}
	return names
}

// wantNamed fails unless ListNamed(prefix) reports want, in that order,
// within listWait.
func wantNamed(t *testing.T, r store.Registry, prefix string, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(listWait); ; time.Sleep(100 * time.Millisecond) {
		if got = listNamed(t, r, prefix); slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("named objects under %q: %q, want %q", prefix, got, want)
	}
}

func testRegistry(t *testing.T, s store.Store) {
	r, ok := s.(store.Registry)
	if !ok {
		t.Fatalf("%T does not implement store.Registry (gc refuses to collect a store that cannot list its users)", s)
	}
	ctx := t.Context()
	if _, err := r.GetNamed(ctx, "repos/a.json"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get of a missing name: %v, want ErrNotFound", err)
	}
	for _, n := range []string{"repos/b.json", "repos/a.json", "other/c", "repos/a.json"} {
		if err := r.PutNamed(ctx, n, []byte("v1 "+n)); err != nil {
			t.Fatalf("put %s: %v", n, err)
		}
	}
	if err := r.PutNamed(ctx, "repos/a.json", []byte("v2")); err != nil {
		t.Fatalf("put again: %v", err)
	}
	if b, err := r.GetNamed(ctx, "repos/a.json"); err != nil || string(b) != "v2" {
		t.Errorf("get after a replace: %q, %v; want v2", b, err)
	}
	wantNamed(t, r, "repos/", "repos/a.json", "repos/b.json")
	wantNamed(t, r, "", "other/c", "repos/a.json", "repos/b.json")
	wantNamed(t, r, "none/")

	// Named objects are apart from the objects.
	data, id := object(99, 1000)
	put(t, s, data)
	wantListing(t, s, map[hashing.ID]int64{id: 1000})

	stop := errors.New("stop")
	calls := 0
	if err := r.ListNamed(ctx, "", func(string) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("list named whose fn fails: %v after %d calls, want the fn's error after 1", err, calls)
	}
	for _, bad := range []string{"", "/a", "a/", "a//b", "../a", "a/../b", ".a", "a/.b", "A/b", "a b", "a\\b"} {
		if err := r.PutNamed(ctx, bad, []byte("x")); err == nil {
			t.Errorf("put of the bad name %q succeeded", bad)
		}
	}
	if err := r.PutNamed(ctx, "big", make([]byte, store.MaxNamed+1)); err == nil {
		t.Error("put of a named object over MaxNamed succeeded")
	}

	for _, n := range []string{"repos/a.json", "repos/a.json", "never/was"} {
		if err := r.DeleteNamed(ctx, n); err != nil {
			t.Errorf("delete %s: %v", n, err)
		}
	}
	if _, err := r.GetNamed(ctx, "repos/a.json"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}
	wantNamed(t, r, "repos/", "repos/b.json")
	if b, err := r.GetNamed(ctx, "repos/b.json"); err != nil || string(b) != "v1 repos/b.json" {
		t.Errorf("get of a name kept: %q, %v", b, err)
	}
}
