package tiff

import (
	"bytes"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// sparseCopy plans and writes a sparse copy of data keeping every other
// block, then checks the copy parses and is smaller when something was left out.
func sparseCopy(t testing.TB, data []byte) {
	t.Helper()
	n := 0
	plan, err := PlanSparse(bytes.NewReader(data), int64(len(data)), func(off, l int64) bool { n++; return n%2 == 0 })
	if err != nil {
		return // refused: fine, as long as it did not panic
	}
	var out bytes.Buffer
	for _, span := range plan.Kept(int64(len(data))) {
		b := append([]byte(nil), data[span[0]:span[1]]...)
		plan.Patch(b, span[0])
		out.Write(b)
	}
	if err := CheckSparse(bytes.NewReader(out.Bytes()), int64(out.Len())); err != nil {
		t.Fatalf("sparse copy does not parse: %v", err)
	}
	var dropped int64
	for _, d := range plan.Dropped() {
		dropped += d[1] - d[0]
	}
	if int64(out.Len()) != int64(len(data))-dropped {
		t.Fatalf("copy has %d bytes, want %d - %d dropped", out.Len(), len(data), dropped)
	}
}

func TestSparseCorpus(t *testing.T) {
	for _, f := range formattest.Corpus(t, ".tif", ".tiff") {
		t.Run(f.Name, func(t *testing.T) { sparseCopy(t, f.Data) })
	}
}

func FuzzPlanSparse(f *testing.F) {
	formattest.Seeds(f, "cog.tiff", "utm.tif", "cog_no_offest.tif")
	f.Fuzz(func(t *testing.T, data []byte) { sparseCopy(t, data) })
}
