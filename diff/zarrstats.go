package diff

import (
	"fmt"
	"math"
)

// ZarrChunkStats is one changed chunk of a Zarr array as diff --stats
// measures it: both versions decoded (an absent chunk is the fill value)
// and compared element by element, inside the array's shape only. A
// difference that is not a number (a NaN on one side, an infinity)
// changes the element but does not enter Min, Max or Mean; two NaNs are
// equal. With no numeric difference all three are 0.
type ZarrChunkStats struct {
	Key    string  `json:"key"`    // the chunk's key, without a piece part
	Coords []int64 `json:"coords"` // its place in the array's key grid
	Change Change  `json:"change"` // added, removed or changed
	// Elements is how many elements were compared: the chunk's, clipped
	// to the new shape.
	Elements int64 `json:"elements"`
	// Changed is how many of them differ; Numeric how many of those
	// differ by a finite number, the ones Min, Max and Mean describe.
	Changed int64   `json:"changed"`
	Numeric int64   `json:"numeric"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Mean    float64 `json:"mean"`
	// Error says why the chunk was not measured ("stats: …"); the counts
	// are then zero.
	Error string `json:"error,omitempty"`

	sum float64 // of the numeric differences, for TotalZarr
}

// ZarrStats totals the measured chunks of one array: changed elements
// and the minimum, maximum and mean of new − old over all of them.
type ZarrStats struct {
	Chunks  int     `json:"chunks"` // chunks measured (no Error)
	Changed int64   `json:"changed"`
	Numeric int64   `json:"numeric"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Mean    float64 `json:"mean"`
}

// ZarrValues is one version of a chunk, decoded: its values in C order
// over the chunk shape, how far along each dimension the version's shape
// reaches from the chunk's origin (elements past it are the fill value:
// the array grew), and that fill value.
type ZarrValues struct {
	Values []float64
	Valid  []int64
	Fill   float64
}

// CompareZarr fills c's counts and statistics from the two versions of a
// chunk of shape chunk. Only elements inside cur.Valid are compared; an
// old element outside old.Valid is old.Fill.
func CompareZarr(c *ZarrChunkStats, chunk []int64, old, cur ZarrValues) error {
	n := int64(1)
	for _, s := range chunk {
		n *= s
	}
	if int64(len(old.Values)) != n || int64(len(cur.Values)) != n || len(old.Valid) != len(chunk) || len(cur.Valid) != len(chunk) {
		return fmt.Errorf("chunk %s: %d and %d values for a chunk of %d", c.Key, len(old.Values), len(cur.Values), n)
	}
	*c = ZarrChunkStats{Key: c.Key, Coords: c.Coords, Change: c.Change, Min: math.Inf(1), Max: math.Inf(-1)}
	idx := make([]int64, len(chunk)) // the C-order odometer over chunk
	for i := int64(0); i < n; i++ {
		in, oldIn := true, true
		for d, x := range idx {
			in = in && x < cur.Valid[d]
			oldIn = oldIn && x < old.Valid[d]
		}
		if in {
			o := old.Fill
			if oldIn {
				o = old.Values[i]
			}
			c.Elements++
			c.measure(o, cur.Values[i])
		}
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < chunk[d] {
				break
			}
			idx[d] = 0
		}
	}
	if c.Numeric == 0 {
		c.Min, c.Max = 0, 0
	} else {
		c.Mean = c.sum / float64(c.Numeric)
	}
	return nil
}

// measure counts one compared element whose values are o and v.
func (c *ZarrChunkStats) measure(o, v float64) {
	if o == v || (math.IsNaN(o) && math.IsNaN(v)) {
		return
	}
	c.Changed++
	d := v - o
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return
	}
	c.Numeric++
	c.Min, c.Max = math.Min(c.Min, d), math.Max(c.Max, d)
	c.sum += d
}

// TotalZarr totals chunks (those without an Error) into an array's
// statistics; nil when none was measured.
func TotalZarr(chunks []ZarrChunkStats) *ZarrStats {
	t := &ZarrStats{Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	for _, c := range chunks {
		if c.Error != "" {
			continue
		}
		t.Chunks++
		t.Changed += c.Changed
		if c.Numeric == 0 {
			continue
		}
		t.Numeric += c.Numeric
		t.Min, t.Max = math.Min(t.Min, c.Min), math.Max(t.Max, c.Max)
		sum += c.sum
	}
	if t.Chunks == 0 {
		return nil
	}
	if t.Numeric == 0 {
		t.Min, t.Max = 0, 0
	} else {
		t.Mean = sum / float64(t.Numeric)
	}
	return t
}
