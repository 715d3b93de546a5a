package statcache

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTimesMoveAfterStat checks what Settled relies on where
// TimesMoveAfterStat says so: a write right after a stat changes the times.
func TestTimesMoveAfterStat(t *testing.T) {
	dir := t.TempDir()
	if !TimesMoveAfterStat(dir) {
		t.Logf("%s: times need not move after a stat here; Settled waits out the racy window", dir)
		return
	}
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 200 {
		if _, err := f.WriteAt([]byte{byte(i)}, 0); err != nil {
			t.Fatal(err)
		}
		a, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{byte(i + 1)}, 0); err != nil {
			t.Fatal(err)
		}
		b, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if sa, sb := StatOf(a), StatOf(b); sa.Mtime == sb.Mtime || sa.Ctime == sb.Ctime {
			t.Fatalf("write %d after a stat left the times as they were (%d, %d)", i, sb.Mtime, sb.Ctime)
		}
	}
}
