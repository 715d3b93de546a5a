package statcache

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// randomFiles returns n files of a tree listing, in no order.
func randomFiles(rng *rand.Rand, n int) []gitdb.TreeEntry {
	out := make([]gitdb.TreeEntry, n)
	for i := range out {
		out[i].Path = fmt.Sprintf("d%02d/f%05d-%d.csv", rng.Intn(7), i, rng.Intn(1000))
		rng.Read(out[i].Hash[:])
	}
	return out
}

func listingRepo(t *testing.T) (*confine.Tree, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".git")
	if err := os.MkdirAll(filepath.Join(dir, "chunkvc"), 0o755); err != nil {
		t.Fatal(err)
	}
	return confine.New(dir, ".git"), filepath.Join(dir, "chunkvc", "listing")
}

// A listing comes back, sorted, for the tree and folders it was saved
// for and for nothing else; a damaged file is none.
func TestListingRoundTripAndDamage(t *testing.T) {
	git, file := listingRepo(t)
	rng := rand.New(rand.NewSource(5))
	var tree, other gitdb.Hash
	rng.Read(tree[:])
	rng.Read(other[:])
	dirs := []string{".chunkvc/manifests", ".chunkvc/shards"}
	files := [][]gitdb.TreeEntry{randomFiles(rng, 500), nil}
	if _, ok := LoadListing(git, tree, dirs); ok {
		t.Fatal("a listing before any was saved")
	}
	if err := SaveListing(git, tree, dirs, files); err != nil {
		t.Fatal(err)
	}
	got, ok := LoadListing(git, tree, dirs)
	if !ok {
		t.Fatal("the listing saved is not loaded")
	}
	want := slices.SortedFunc(slices.Values(files[0]), byPath)
	if !reflect.DeepEqual(got[0], want) || len(got[1]) != 0 {
		t.Fatalf("loaded %d and %d files, want the %d saved, sorted", len(got[0]), len(got[1]), len(want))
	}
	for _, miss := range []struct {
		tree gitdb.Hash
		dirs []string
	}{{other, dirs}, {tree, dirs[:1]}, {tree, []string{dirs[1], dirs[0]}}, {tree, []string{".chunkvc/manifests", "x"}}} {
		if _, ok := LoadListing(git, miss.tree, miss.dirs); ok {
			t.Errorf("the listing of %s %v was taken for %s %v", tree, dirs, miss.tree, miss.dirs)
		}
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(good); i++ {
		bad := bytes.Clone(good)
		bad[i] ^= 0x10
		if err := os.WriteFile(file, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := LoadListing(git, tree, dirs); ok {
			t.Fatalf("a listing with byte %d changed was loaded", i)
		}
		if i > 64 {
			i += 97 // the header's every byte, a sample of the rest
		}
	}
	if err := os.WriteFile(file, good[:len(good)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := LoadListing(git, tree, dirs); ok {
		t.Fatal("a cut listing was loaded")
	}
}

// FuzzDecodeListing: decoding never panics; what decodes has its paths in
// strictly increasing order and encodes to the same bytes. Unless raw,
// the input is a body whose checksum is appended, so that mutations reach
// the parser.
func FuzzDecodeListing(f *testing.F) {
	var tree gitdb.Hash
	tree[0] = 1
	rng := rand.New(rand.NewSource(9))
	seeds := [][]byte{
		encodeListing(tree, []listed{{".chunkvc/manifests", randomFiles(rng, 4)}, {".chunkvc/shards", randomFiles(rng, 2)}}),
		encodeListing(tree, []listed{{".chunkvc/manifests", nil}}),
		encodeListing(tree, nil),
	}
	for _, s := range seeds {
		f.Add(s[:len(s)-idLen], false)
		f.Add(s, true)
	}
	f.Add([]byte(listingMagic), true)
	f.Fuzz(func(t *testing.T, b []byte, raw bool) {
		b = bytes.Clone(b) // decoded paths share the bytes
		if !raw {
			sum := hashing.Sum(b)
			b = append(b, sum[:]...)
		}
		got, lists, ok := decodeListing(b)
		if !ok {
			return
		}
		for _, l := range lists {
			for i := 1; i < len(l.files); i++ {
				if l.files[i].Path <= l.files[i-1].Path {
					t.Fatalf("%s: %q after %q", l.dir, l.files[i].Path, l.files[i-1].Path)
				}
			}
		}
		if enc := encodeListing(got, lists); !bytes.Equal(enc, b) {
			t.Fatal("a listing decoded does not encode to its bytes")
		}
	})
}
