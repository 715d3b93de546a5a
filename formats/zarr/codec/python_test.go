package codec

import (
	"os/exec"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// python is Debian's python3 with numcodecs and zarr, the writers these
// tests check the decoders against.
func python(t testing.TB) string {
	t.Helper()
	return formattest.RequirePython(t, "numcodecs", "zarr", "numpy")
}

// runPython runs a script from testdata with args and fails the test
// with its output on error.
func runPython(t testing.TB, script string, args ...string) {
	t.Helper()
	cmd := exec.Command(python(t), append([]string{"testdata/" + script}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}
