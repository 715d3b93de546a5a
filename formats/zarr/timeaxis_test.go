package zarr

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// TestTimeAxisDates: CF units of the standard calendars date an index;
// months, other calendars and unknown spellings are refused.
func TestTimeAxisDates(t *testing.T) {
	for _, tc := range []struct {
		units, calendar string
		start, step     float64
		i               int64
		want            string
	}{
		{"days since 2020-01-01", "proleptic_gregorian", 0, 1, 10, "2020-01-11"},
		{"hours since 1970-01-01 00:00:00", "standard", 438000, 6, 3, "2019-12-20T18:00"},
		{"seconds since 2000-01-01T00:00:00Z", "", 0, 90, 1, "2000-01-01T00:01:30"},
		{"days since 1-1-1 0:0:0", "gregorian", 0, 1, 0, "0001-01-01"},
		{"minutes since 2024-02-28 23:00", "", 0, 30, 4, "2024-02-29T01:00"},
	} {
		unit, epoch, ok := parseCFUnits(tc.units, tc.calendar)
		if !ok {
			t.Errorf("%q %q refused", tc.units, tc.calendar)
			continue
		}
		ax := TimeAxis{Path: "g/time", Start: tc.start, Step: tc.step, Unit: unit, Epoch: epoch, Units: tc.units}
		if got := ax.Date(tc.i); got != tc.want {
			t.Errorf("%q start %v step %v: element %d is %q, want %q", tc.units, tc.start, tc.step, tc.i, got, tc.want)
		}
		back, err := ParseTimeAxis(ax.String())
		if err != nil || back.String() != ax.String() || back.Date(tc.i) != tc.want {
			t.Errorf("%q: round trip %+v %v", ax.String(), back, err)
		}
	}
	for _, bad := range [][2]string{{"months since 2020-01-01", ""}, {"days since 2020-01-01", "noleap"},
		{"days after 2020-01-01", ""}, {"days since yesterday", ""}, {"", ""}} {
		if _, _, ok := parseCFUnits(bad[0], bad[1]); ok {
			t.Errorf("%q %q accepted", bad[0], bad[1])
		}
	}
	if _, err := ParseTimeAxis("time 0 x days since 2020-01-01"); err == nil {
		t.Error("a step that is not a number accepted")
	}
	if got := (TimeAxis{Unit: time.Hour, Epoch: time.Unix(0, 0).UTC(), Step: 1e300}).Date(1e9); got != "" {
		t.Errorf("an overflowing date spelled %q", got)
	}
}

// TestTimeAxesXarray: the time coordinate xarray writes (int64 days since
// the first date, Blosc) is found and dates its elements; lat and lon,
// which have no time units, are not time axes.
func TestTimeAxesXarray(t *testing.T) {
	requirePythonZarr(t)
	dir := t.TempDir()
	if out, err := exec.Command(formattest.Python, "-c", xarrayCube, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	store := filepath.Join(dir, "cube.zarr")
	st, _ := checkStore(t, store)
	f := TimeAxes(os.DirFS(store), st)
	if len(f) != 1 || f[0].Name != "time_axis" || !strings.HasPrefix(f[0].Value, "time ") {
		t.Fatalf("time axes %+v, want one, of time", f)
	}
	ax, err := ParseTimeAxis(f[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if ax.Date(0) != "2024-01-01" || ax.Date(2) != "2024-01-03" {
		t.Errorf("%q dates 0 and 2 as %q and %q", f[0].Value, ax.Date(0), ax.Date(2))
	}
}

func FuzzParseTimeAxis(f *testing.F) {
	for _, s := range []string{"time 0 1 days since 2020-01-01", "g/t -3.5 0.25 hours since 1970-01-01 00:00:00",
		"%20 1e300 1 seconds since 2000-01-01T00:00:00Z", "t 0 1 months since 2020-01-01", "", "a b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ax, err := ParseTimeAxis(v)
		if err != nil {
			return
		}
		_ = ax.Date(0)
		_ = ax.Date(1 << 40)
		back, err := ParseTimeAxis(ax.String())
		if err != nil || back.Path != ax.Path || back.Units != ax.Units {
			t.Fatalf("%q → %q: %+v %v", v, ax.String(), back, err)
		}
	})
}
