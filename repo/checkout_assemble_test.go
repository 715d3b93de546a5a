package repo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A working file that the stat cache calls clean is copied from without
// hashing each chunk; when its bytes are not what the layout says after
// all, the digest check must catch it and the file be rebuilt from the
// store, bit for bit.
func TestAssembleReuseFastPathAndFallback(t *testing.T) {
	data := randomData(3<<20+777, 7)
	r := testRepo(t, data)
	ctx := context.Background()
	m, err := r.Manifest("HEAD", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		damage  bool
		wantAll bool // every chunk reused
	}{{"intact", false, true}, {"damaged", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			work := append([]byte(nil), data...)
			if tc.damage {
				work[len(work)/2] ^= 0x40
			}
			wp := filepath.Join(t.TempDir(), "work.bin")
			if err := os.WriteFile(wp, work, 0o644); err != nil {
				t.Fatal(err)
			}
			ru := r.reuseFrom(ctx, "sub/x.bin", m.Layout)
			if ru == nil {
				t.Fatal("no reuse index for a committed layout")
			}
			ru.f.Close()
			if ru.f, err = os.Open(wp); err != nil {
				t.Fatal(err)
			}
			defer ru.close()
			out, err := os.Create(filepath.Join(t.TempDir(), "out.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			st, err := r.assembleFile(ctx, m, out, ru, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("assembled %d bytes that differ from the committed %d", len(got), len(data))
			}
			if all := st.ChunksReused == len(m.Chunks); all != tc.wantAll {
				t.Errorf("reused %d of %d chunks (local %d)", st.ChunksReused, len(m.Chunks), st.ChunksLocal)
			}
			if tc.damage && st.ChunksLocal+st.ChunksFetched != 1 {
				t.Errorf("damaged working file: %d chunks read from the store, want the 1 damaged one (%+v)", st.ChunksLocal, st)
			}
		})
	}
}
