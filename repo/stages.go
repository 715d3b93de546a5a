package repo

import (
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/store"
)

// Stage is one step of a long command, for --json's "stages": how long it
// took, how many items it handled, how many bytes went in (read) and out
// (stored or written), how many requests to the store were retried, and
// the most bytes an upload had in flight at once.
type Stage struct {
	Name      string  `json:"name"`
	Seconds   float64 `json:"seconds"`
	Items     int64   `json:"items"`
	BytesIn   int64   `json:"bytes_in"`
	BytesOut  int64   `json:"bytes_out"`
	Retries   int64   `json:"retries"`
	PeakBytes int64   `json:"peak_bytes_in_flight"`
}

// stageClock times consecutive stages: each lap ends the stage that
// began at the previous one, with the retries the watched stores made
// meanwhile and the peak a watched upload reached (then reset).
type stageClock struct {
	last    time.Time
	stages  []Stage
	stores  []store.Store
	retries int64
	up      *upload
}

func startStages() *stageClock { return &stageClock{last: time.Now()} }

// watch counts the retries of stores in the stages from now on.
func (c *stageClock) watch(stores ...store.Store) {
	c.stores = append(c.stores, stores...)
	c.retries = c.retried()
}

func (c *stageClock) retried() int64 {
	var n int64
	for _, s := range c.stores {
		n += store.Retries(s)
	}
	return n
}

func (c *stageClock) lap(name string, items, in, out int64) {
	now := time.Now()
	st := Stage{Name: name, Seconds: now.Sub(c.last).Seconds(), Items: items, BytesIn: in, BytesOut: out}
	r := c.retried()
	st.Retries, c.retries = r-c.retries, r
	if c.up != nil {
		st.PeakBytes = c.up.peak.Swap(0)
	}
	c.stages = append(c.stages, st)
	c.last = now
}

// inFlight tracks the bytes an upload is putting and their peak.
type inFlight struct {
	now, peak atomic.Int64
}

// start counts n bytes going out; done(n) when they are stored.
func (f *inFlight) start(n int64) {
	v := f.now.Add(n)
	for {
		p := f.peak.Load()
		if v <= p || f.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

func (f *inFlight) done(n int64) { f.now.Add(-n) }
