package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// lineCounter reports progress for logs, not terminals: a line when a
// stage starts, at most one a second while it runs, and one when it ends.
// asJSON writes newline-delimited JSON events (--progress=json), else
// plain text (--progress=plain).
type lineCounter struct {
	mu     sync.Mutex
	w      io.Writer
	asJSON bool
	now    func() time.Time
	every  time.Duration

	stage       string
	done, total int64
	began, last time.Time
}

// progressEvent is one line of --progress=json.
type progressEvent struct {
	Event   string  `json:"event"` // start, progress, done
	Stage   string  `json:"stage"`
	Done    int64   `json:"done"`
	Total   int64   `json:"total,omitempty"`
	Seconds float64 `json:"seconds"`
}

func newLineCounter(w io.Writer, asJSON bool) *lineCounter {
	return &lineCounter{w: w, asJSON: asJSON, now: time.Now, every: time.Second}
}

func (c *lineCounter) Start(label string, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stage, c.done, c.total = label, 0, max(total, 0)
	c.began = c.now()
	c.last = c.began
	c.emit("start")
}

func (c *lineCounter) Add(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done += n
	if t := c.now(); t.Sub(c.last) >= c.every {
		c.last = t
		c.emit("progress")
	}
}

func (c *lineCounter) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stage == "" {
		return
	}
	c.emit("done")
	c.stage = ""
}

// emit writes one line; c.mu is held.
func (c *lineCounter) emit(event string) {
	secs := c.now().Sub(c.began).Seconds()
	if c.asJSON {
		b, _ := json.Marshal(progressEvent{Event: event, Stage: c.stage, Done: c.done, Total: c.total, Seconds: secs})
		fmt.Fprintf(c.w, "%s\n", b)
		return
	}
	line := fmt.Sprintf("%s: %s %s", c.stage, event, humanBytes(c.done))
	if c.total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", humanBytes(c.total), c.done*100/c.total)
	}
	fmt.Fprintf(c.w, "%s, %.1fs\n", line, secs)
}
