package zarr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/formats"
)

// maxTimeAxes bounds the "time_axis" summary fields of a store.
const maxTimeAxes = 8

// ErrTimeAxis is wrapped by ParseTimeAxis's errors.
var ErrTimeAxis = errors.New("invalid zarr time axis")

// TimeAxis is a CF time coordinate with evenly spaced values, as a
// "time_axis" summary field records it: element i of the array at Path is
// Start + i×Step Units after Epoch. A diff turns the index ranges of a
// dimension named like the array into dates with it.
type TimeAxis struct {
	Path        string // the coordinate array's path in the store
	Start, Step float64
	Unit        time.Duration
	Epoch       time.Time
	Units       string // as written: "days since 2020-01-01"
}

// cfUnits are the CF time units a TimeAxis accepts (calendar months and
// years are not fixed lengths, so they are left out).
var cfUnits = map[string]time.Duration{
	"seconds": time.Second, "second": time.Second, "secs": time.Second, "sec": time.Second, "s": time.Second,
	"minutes": time.Minute, "minute": time.Minute, "mins": time.Minute, "min": time.Minute,
	"hours": time.Hour, "hour": time.Hour, "hrs": time.Hour, "hr": time.Hour, "h": time.Hour,
	"days": 24 * time.Hour, "day": 24 * time.Hour, "d": 24 * time.Hour,
}

// cfDate is a CF reference date: "1-1-1", "2020-01-01", "1970-01-01
// 00:00:00", with a T or a space, seconds optional and fractional, and an
// optional "Z" or "UTC" (other time zones are not read).
var cfDate = regexp.MustCompile(`^(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d+)?)?)?\s*(?:Z|UTC|\+00:?00)?$`)

func parseCFDate(s string) (time.Time, bool) {
	m := cfDate.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.Time{}, false
	}
	n := make([]int, 6)
	for i := range n {
		if m[i+1] != "" {
			n[i], _ = strconv.Atoi(m[i+1])
		}
	}
	if n[1] < 1 || n[1] > 12 || n[2] < 1 || n[2] > 31 || n[3] > 23 || n[4] > 59 || n[5] > 60 {
		return time.Time{}, false
	}
	var frac float64
	if m[7] != "" {
		frac, _ = strconv.ParseFloat(m[7], 64)
	}
	return time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], int(frac*1e9), time.UTC), true
}

// parseCFUnits reads "<unit> since <date>" of the standard calendars.
func parseCFUnits(units, calendar string) (time.Duration, time.Time, bool) {
	switch strings.ToLower(calendar) {
	case "", "standard", "gregorian", "proleptic_gregorian":
	default:
		return 0, time.Time{}, false
	}
	unit, since, ok := strings.Cut(strings.TrimSpace(units), " since ")
	d, known := cfUnits[strings.ToLower(strings.TrimSpace(unit))]
	if !ok || !known {
		return 0, time.Time{}, false
	}
	t, ok := parseCFDate(since)
	if !ok {
		return 0, time.Time{}, false
	}
	return d, t, true
}

// TimeAxes returns a "time_axis" field for each 1-D array of st (read
// from fsys) whose attributes give CF time units and whose values are
// evenly spaced, at most maxTimeAxes. Arrays it cannot read are left out.
func TimeAxes(fsys fs.FS, st *Store) []formats.Field {
	if st == nil || st.Unsupported != "" {
		return nil
	}
	src := newCoordSource(fsys, st)
	var out []formats.Field
	for _, n := range st.Nodes {
		a := n.Array
		if a == nil || a.Rank() != 1 || a.Path == "" || len(out) == maxTimeAxes {
			continue
		}
		attrs, err := attrMap(a.Attrs)
		if err != nil {
			continue
		}
		var units, calendar string
		_ = json.Unmarshal(attrs["units"], &units)
		_ = json.Unmarshal(attrs["calendar"], &calendar)
		unit, epoch, ok := parseCFUnits(units, calendar)
		if !ok {
			continue
		}
		vals, ok, err := src.Coord(a.Path) // group "" resolves the full path
		if err != nil || !ok || len(vals) == 0 {
			continue
		}
		step, even := evenStep(vals)
		if !even {
			continue
		}
		ax := TimeAxis{Path: a.Path, Start: vals[0], Step: step, Unit: unit, Epoch: epoch, Units: units}
		out = append(out, formats.Field{Name: "time_axis", Value: ax.String()})
	}
	return out
}

// evenStep is the spacing of vals when it is constant (to 1e-9 of it).
func evenStep(vals []float64) (float64, bool) {
	if len(vals) == 1 {
		return 0, !math.IsNaN(vals[0]) && !math.IsInf(vals[0], 0)
	}
	step := vals[1] - vals[0]
	if step == 0 || math.IsNaN(step) || math.IsInf(step, 0) {
		return 0, false
	}
	for i := 2; i < len(vals); i++ {
		if math.Abs(vals[i]-vals[i-1]-step) > 1e-9*math.Abs(step) {
			return 0, false
		}
	}
	return step, true
}

// String is the field value: the path (escaped like summary tokens),
// start, step, then the units as written ("time 0 1 days since
// 2020-01-01").
func (t TimeAxis) String() string {
	return escape(t.Path, false) + " " + strconv.FormatFloat(t.Start, 'g', -1, 64) + " " +
		strconv.FormatFloat(t.Step, 'g', -1, 64) + " " + t.Units
}

// ParseTimeAxis reads a "time_axis" field value back.
func ParseTimeAxis(v string) (TimeAxis, error) {
	f := strings.SplitN(v, " ", 4)
	if len(f) != 4 {
		return TimeAxis{}, fmt.Errorf("%w: %q", ErrTimeAxis, v)
	}
	path, err := unescape(f[0])
	if err != nil {
		return TimeAxis{}, fmt.Errorf("%w: %q: %w", ErrTimeAxis, v, err)
	}
	start, err1 := strconv.ParseFloat(f[1], 64)
	step, err2 := strconv.ParseFloat(f[2], 64)
	unit, epoch, ok := parseCFUnits(f[3], "")
	if err1 != nil || err2 != nil || !ok {
		return TimeAxis{}, fmt.Errorf("%w: %q", ErrTimeAxis, v)
	}
	return TimeAxis{Path: path, Start: start, Step: step, Unit: unit, Epoch: epoch, Units: f[3]}, nil
}

// Date spells the date of element i: "2020-01-04", or with the time of
// day when the axis has one ("2020-01-04T06:00").
func (t TimeAxis) Date(i int64) string {
	off := (t.Start + float64(i)*t.Step) * float64(t.Unit)
	if math.IsNaN(off) || math.Abs(off) > float64(math.MaxInt64) {
		return ""
	}
	d := t.Epoch.Add(time.Duration(math.Round(off)))
	switch {
	case d.Hour() == 0 && d.Minute() == 0 && d.Second() == 0 && d.Nanosecond() == 0:
		return d.Format("2006-01-02")
	case d.Second() == 0 && d.Nanosecond() == 0:
		return d.Format("2006-01-02T15:04")
	}
	return d.Format("2006-01-02T15:04:05")
}
