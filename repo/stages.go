package repo

import "time"

// Stage is one step of a long command, for --json's "stages": how long it
// took, how many items it handled and how many bytes went in (read) and
// out (stored or written).
type Stage struct {
	Name     string  `json:"name"`
	Seconds  float64 `json:"seconds"`
	Items    int64   `json:"items"`
	BytesIn  int64   `json:"bytes_in"`
	BytesOut int64   `json:"bytes_out"`
}

// stageClock times consecutive stages: each lap ends the stage that
// began at the previous one.
type stageClock struct {
	last   time.Time
	stages []Stage
}

func startStages() *stageClock { return &stageClock{last: time.Now()} }

func (c *stageClock) lap(name string, items, in, out int64) {
	now := time.Now()
	c.stages = append(c.stages, Stage{Name: name, Seconds: now.Sub(c.last).Seconds(), Items: items, BytesIn: in, BytesOut: out})
	c.last = now
}
