// Package progress is how long-running work reports how far it has got.
// Core packages call a Counter; rendering lives in cmd/chunkvc.
package progress

// Counter receives progress. Methods may be called from several goroutines.
type Counter interface {
	// Start begins a stage with a label and a total (bytes, or 0 if unknown).
	Start(label string, total int64)
	// Add reports n more units done in the current stage.
	Add(n int64)
	// Done ends the current stage.
	Done()
}

// Noop discards progress.
type Noop struct{}

func (Noop) Start(string, int64) {}
func (Noop) Add(int64)           {}
func (Noop) Done()               {}

// OrNoop returns c, or Noop when c is nil.
func OrNoop(c Counter) Counter {
	if c == nil {
		return Noop{}
	}
	return c
}
