package codec

import (
	"os"
	"os/exec"
	"testing"
)

// python is Debian's python3 with numcodecs and zarr, the writers these
// tests check the decoders against. Under CI=true a missing one fails the
// test; elsewhere the test is skipped.
func python(t testing.TB) string {
	t.Helper()
	const py = "/usr/bin/python3"
	out, err := exec.Command(py, "-c", "import numcodecs, zarr, numpy").CombinedOutput()
	if err == nil {
		return py
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("python3 with numcodecs and zarr is required under CI=true: %v\n%s", err, out)
	}
	t.Skipf("python3 with numcodecs and zarr not installed: %v", err)
	return ""
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
