package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/chunkvc/chunkvc/internal/diffview"
	"github.com/chunkvc/chunkvc/internal/progress"
)

// printJSON writes v as one JSON object on stdout.
func (g *globalOptions) printJSON(v any) error {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// say prints chatter to stderr unless --quiet or --json.
func (g *globalOptions) say(format string, a ...any) {
	if g.quiet || g.json {
		return
	}
	fmt.Fprintf(g.stderr, format, a...)
}

// progress returns a renderer on stderr when it is a terminal and output is
// neither --quiet nor --json; otherwise a no-op.
func (g *globalOptions) progress() progress.Counter {
	switch g.progressMode {
	case "plain", "json":
		return newLineCounter(g.stderr, g.progressMode == "json")
	case "none":
		return progress.Noop{}
	}
	if g.quiet || g.json {
		return progress.Noop{}
	}
	f, ok := g.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return progress.Noop{}
	}
	return &barCounter{w: f}
}

// barCounter renders progress with progressbar.
type barCounter struct {
	mu  sync.Mutex
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (b *barCounter) Start(label string, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if total <= 0 {
		total = -1
	}
	b.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)
}

func (b *barCounter) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Add64(n)
	}
}

func (b *barCounter) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Finish()
		b.bar = nil
	}
}

// humanBytes formats n in binary units.
func humanBytes(n int64) string { return diffview.HumanBytes(n) }
