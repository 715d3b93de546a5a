package formattest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireTool returns the path of an external program (gdal_translate,
// ogr2ogr, …). Under CI=true a missing tool fails the test; elsewhere the
// test is skipped.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true: %v", name, err)
	}
	t.Skipf("%s not installed: %v", name, err)
	return ""
}

// Run1 runs a command and fails the test with its output on error.
func Run1(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(RequireTool(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Python is Debian's interpreter, which has python3-zarr, xarray and
// numcodecs (another python3 may come first on PATH without them).
const Python = "/usr/bin/python3"

// RequirePython returns Python once it imports every module named. Under
// CI=true a missing module fails the test (scripts/ensure-deps.sh
// installs them); elsewhere the test is skipped.
func RequirePython(t testing.TB, modules ...string) string {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput()
	if err == nil {
		return Python
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s with %s is required under CI=true: %v\n%s", Python, strings.Join(modules, ", "), err, out)
	}
	t.Skipf("%s with %s not installed: %v", Python, strings.Join(modules, ", "), err)
	return ""
}
