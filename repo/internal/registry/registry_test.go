package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/store/mem"
)

func entry(id string) *Entry {
	return &Entry{ID: id, Host: "h", Root: "/w/" + id[:4], Tips: map[string]string{"refs/heads/main": strings.Repeat("ab", 20)},
		Updated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

const (
	idA = "aaaaaaaa000000000000000000000001"
	idB = "aaaaaaaa000000000000000000000002"
	idC = "cccccccc000000000000000000000003"
)

func TestPutRead(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	for _, id := range []string{idB, idA} {
		if err := Put(ctx, st, entry(id)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{*entry(idA), *entry(idB)}; !reflect.DeepEqual(got, want) {
		t.Errorf("Read = %+v, want %+v", got, want)
	}
	b, err := st.GetNamed(ctx, "repos/"+idA+".json")
	if err != nil || !strings.HasPrefix(string(b), "{\n  \"id\": \""+idA) || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("entry bytes %q, %v: want indented JSON ending in LF", b, err)
	}
}

// An entry gc cannot use stops it: Read fails naming the entry and how to
// remove it, and a store with no registry at all fails too.
func TestReadRefuses(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	if err := Put(ctx, st, entry(idA)); err != nil {
		t.Fatal(err)
	}
	// Valid JSON under another id's name.
	if err := st.PutNamed(ctx, EntryName(idC), []byte(`{"id":"`+idA+`"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := Read(ctx, st)
	if !errors.Is(err, ErrUnknownRepos) || !strings.Contains(err.Error(), "chunkvc store forget "+idC) {
		t.Errorf("Read with a mismatched entry: %v", err)
	}
	type plain struct{ *mem.Store } // hides the named objects
	if _, err := Read(ctx, struct{ plain }{plain{st}}.plain); !errors.Is(err, ErrUnknownRepos) {
		t.Errorf("Read of a store without a registry: %v", err)
	}
}

func TestForget(t *testing.T) {
	ctx := context.Background()
	self := func() (string, error) { return idC, nil }
	for _, tc := range []struct {
		ids     []string
		want    []string
		wantErr bool
	}{
		{ids: []string{idA}, want: []string{idA}},
		{ids: []string{"aaaaaaaa00000000000000000000000"}, wantErr: true}, // ambiguous
		{ids: []string{"ccccc"}, wantErr: true},                           // too short to be a prefix
		{ids: []string{"cccccc"}, wantErr: true},                          // self
		{ids: []string{idB, "dddddd"}, wantErr: true},                     // one unknown: none removed
		{ids: []string{idB, idA}, want: []string{idB, idA}},
	} {
		st := mem.New()
		for _, id := range []string{idA, idB, idC} {
			if err := Put(ctx, st, entry(id)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Forget(ctx, st, self, tc.ids)
		if tc.wantErr {
			if !errors.Is(err, ErrNoSuchRepo) {
				t.Errorf("Forget(%v) = %v, %v; want ErrNoSuchRepo", tc.ids, got, err)
			}
			if left, _ := Read(ctx, st); len(left) != 3 {
				t.Errorf("Forget(%v) failed but left %d entries", tc.ids, len(left))
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Forget(%v) = %v, %v; want %v", tc.ids, got, err, tc.want)
		}
		if left, _ := Read(ctx, st); len(left) != 3-len(tc.want) {
			t.Errorf("Forget(%v) left %d entries", tc.ids, len(left))
		}
	}
}

// A clone makes an id, keeps it, keeps it when moved, and a copy whose
// original is still there takes a new one.
func TestResolveID(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig")
	write := func(root string, f IDFile) {
		t.Helper()
		p := idPath(root)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, w, err := ResolveID(idPath(orig), orig)
	if err != nil || !w || !validID(f.ID) || f.Root != orig {
		t.Fatalf("first ResolveID = %+v, %v, %v", f, w, err)
	}
	write(orig, f)
	if g, w, err := ResolveID(idPath(orig), orig); err != nil || w || g != f {
		t.Errorf("second ResolveID = %+v, %v, %v; want %+v unchanged", g, w, err, f)
	}
	cp := filepath.Join(dir, "copy")
	write(cp, f)
	if g, w, err := ResolveID(idPath(cp), cp); err != nil || !w || g.ID == f.ID || g.Root != cp {
		t.Errorf("ResolveID of a copy = %+v, %v, %v; want a new id", g, w, err)
	}
	if err := os.RemoveAll(orig); err != nil {
		t.Fatal(err)
	}
	if g, w, err := ResolveID(idPath(cp), cp); err != nil || !w || g.ID != f.ID || g.Root != cp {
		t.Errorf("ResolveID of a moved repository = %+v, %v, %v; want id %s kept", g, w, err, f.ID)
	}
	bad := filepath.Join(dir, "bad")
	write(bad, IDFile{ID: "XYZ", Root: bad})
	if _, err := ReadIDFile(idPath(bad)); !errors.Is(err, ErrBadID) {
		t.Errorf("ReadIDFile of a bad id: %v", err)
	}
	if g, w, err := ResolveID(idPath(bad), bad); err != nil || !w || !validID(g.ID) {
		t.Errorf("ResolveID over a bad id file = %+v, %v, %v; want a new id", g, w, err)
	}
}

func TestCheckGrace(t *testing.T) {
	others := []Entry{*entry(idA)}
	st := mem.New()
	for _, tc := range []struct {
		grace  time.Duration
		force  bool
		others []Entry
		want   string // "" = allowed
	}{
		{grace: time.Minute, others: nil},
		{grace: time.Hour, others: others},
		{grace: time.Minute, force: true, others: others},
		{grace: 59 * time.Minute, others: others, want: "--grace 59m is below 1h on store mem, which 1 other repositories use (" + idA + ")"},
		{grace: 90 * time.Second, others: others, want: "--grace 1m30s is below 1h"},
	} {
		err := CheckGrace(tc.grace, tc.force, st, tc.others)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrShortGrace) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckGrace(%v, %v, %d others) = %v; want %q", tc.grace, tc.force, len(tc.others), err, tc.want)
		}
	}
}
