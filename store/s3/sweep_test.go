package s3

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// TestSweepDebris: Sweep removes, and a dry run counts, a pack object
// without an index and a multipart upload never completed under the
// store's prefix once they are older than its cutoff, and leaves younger
// ones, indexed packs, loose and named objects, and another prefix's
// uploads alone.
func TestSweepDebris(t *testing.T) {
	s, _ := testStore(t, "s3://sweep/p", Options{})
	objs := randomObjects(20, 10, 4<<10)
	ids := commit(t, s, objs)
	loose := randomObjects(21, 1, 3000)[0]
	if err := store.Put(t.Context(), s, hashing.Sum(loose), loose); err != nil {
		t.Fatal(err)
	}
	if err := s.PutNamed(t.Context(), "repos/x.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	core := minio.Core{Client: s.client}
	orphan := s.packKey("pack-"+strings.Repeat("ab", 32), ".pack")
	if _, err := s.client.PutObject(t.Context(), s.bucket, orphan, bytes.NewReader(make([]byte, 1000)), 1000, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	upload := func(key string) {
		t.Helper()
		id, err := core.NewMultipartUpload(t.Context(), s.bucket, key, minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := core.PutObjectPart(t.Context(), s.bucket, key, id, 1, bytes.NewReader(make([]byte, 5<<20)), 5<<20, minio.PutObjectPartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	upload(s.key(hashing.Sum([]byte("big"))))
	upload("other/" + strings.Repeat("cd", 32))
	uploads := func() (mine, others int) {
		res, err := core.ListMultipartUploads(t.Context(), s.bucket, "", "", "", "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range res.Uploads {
			if strings.HasPrefix(u.Key, s.prefix) {
				mine++
			} else {
				others++
			}
		}
		return mine, others
	}

	if d, err := s.Sweep(t.Context(), time.Now().Add(-time.Hour), false); err != nil || d.Files != 0 {
		t.Fatalf("sweep of debris older than an hour: %+v, %v; want nothing", d, err)
	}
	want := store.Debris{Files: 2, Bytes: 1000 + 5<<20}
	cutoff := time.Now().Add(2 * time.Second) // past the server's clock
	if d, err := s.Sweep(t.Context(), cutoff, true); err != nil || d != want {
		t.Fatalf("dry run: %+v, %v; want %+v", d, err, want)
	}
	if mine, _ := uploads(); mine != 1 || !slices.Contains(keys(t, s, packDir), orphan) {
		t.Fatal("dry run removed debris")
	}
	if d, err := s.Sweep(t.Context(), cutoff, false); err != nil || d != want {
		t.Fatalf("sweep: %+v, %v; want %+v", d, err, want)
	}
	if mine, others := uploads(); mine != 0 || others != 1 {
		t.Errorf("after the sweep: %d uploads under the prefix (want 0), %d under another (want 1)", mine, others)
	}
	if slices.Contains(keys(t, s, packDir), orphan) {
		t.Error("pack without an index left by the sweep")
	}
	other := openAgain(t, s)
	for i, id := range ids {
		if got := readAll(t, other, id, 0, -1); !bytes.Equal(got, objs[i]) {
			t.Fatalf("packed object %d after a sweep: wrong bytes", i)
		}
	}
	if got := readAll(t, other, hashing.Sum(loose), 0, -1); !bytes.Equal(got, loose) {
		t.Fatal("loose object after a sweep: wrong bytes")
	}
	if b, err := other.GetNamed(t.Context(), "repos/x.json"); err != nil || string(b) != "{}" {
		t.Errorf("named object after a sweep: %q, %v", b, err)
	}
}
