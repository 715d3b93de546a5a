// Package retry is the one retry loop of the cloud stores (s3, azure,
// gcs): attempts bounded in number and time, exponential backoff with
// jitter, connection slots that bound the requests in flight, a count of
// the retries (store.RetryCounter), and the classification every SDK
// shares of failures that came with no answer from the service. Each store
// supplies only what its SDK's errors mean: which answers are transient,
// and the HTTP status in an error.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/store"
)

// Backoff between attempts: a random wait in [d/2, d] with d doubling
// from BackoffBase up to BackoffCap.
const (
	BackoffBase = 250 * time.Millisecond
	BackoffCap  = 8 * time.Second
)

// Backoff returns the wait after the given failed attempt (1-based).
func Backoff(attempt int) time.Duration {
	d := BackoffCap
	if attempt < 16 {
		d = min(BackoffBase<<(max(attempt, 1)-1), BackoffCap)
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx is done, then returning its error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Classifier is what an SDK's errors mean.
type Classifier struct {
	// Retryable reports whether err is transient: a later attempt may not
	// meet it.
	Retryable func(err error) bool
	// Status returns the HTTP status of the service's answer in err, 0
	// when no answer came.
	Status func(err error) int
}

// Policy retries the requests of one store. It is safe for concurrent use.
type Policy struct {
	retries int
	time    time.Duration
	class   Classifier
	slots   chan struct{}
	retried atomic.Int64
}

// New returns a policy of at most retries attempts (1: no retry) started
// within span of the first, with connections requests in flight at most.
func New(retries int, span time.Duration, connections int, c Classifier) *Policy {
	return &Policy{retries: max(retries, 1), time: span, class: c, slots: make(chan struct{}, max(connections, 1))}
}

// Mode says how the attempts of Attempts hold connection slots.
type Mode int

const (
	WithSlot Mode = iota // each attempt holds a connection slot
	KeepSlot             // like WithSlot, and a successful attempt keeps it for the caller to Release
	NoSlot               // the caller holds a slot already, or needs none
)

// Do runs fn, each attempt holding a connection slot, until it succeeds,
// fails permanently, or the attempts or the retry time are used up. The
// last attempt's error is returned, saying how many attempts failed, and
// marked store.ErrUnavailable when no answer came from the store.
func (p *Policy) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return p.Attempts(ctx, WithSlot, fn)
}

// Attempts is Do with a choice of how attempts hold connection slots.
func (p *Policy) Attempts(ctx context.Context, mode Mode, fn func(ctx context.Context) error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if mode != NoSlot {
			if err := p.Acquire(ctx); err != nil {
				return err
			}
		}
		err := fn(ctx)
		if mode == WithSlot || mode == KeepSlot && err != nil {
			p.Release()
		}
		if err == nil || ctx.Err() != nil || !p.class.Retryable(err) {
			return err
		}
		wait := Backoff(attempt)
		if attempt >= p.retries || time.Since(start)+wait > p.time {
			return p.GiveUp(fmt.Errorf("%d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err))
		}
		p.retried.Add(1)
		if serr := Sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w; last attempt: %w", serr, err)
		}
	}
}

// Resume decides, after a read of a body failed with err having brought
// n bytes and fails reopenings in a row without progress, whether to
// reopen the body: it backs off first when nothing came through, so a
// server that drops answers is not hammered. It returns the error that
// ends the read, or nil to reopen.
func (p *Policy) Resume(ctx context.Context, err error, n int, fails int) error {
	if !p.class.Retryable(err) || ctx.Err() != nil || fails >= p.retries {
		return err
	}
	if n > 0 {
		return nil
	}
	if serr := Sleep(ctx, Backoff(fails)); serr != nil {
		return fmt.Errorf("%w; last attempt: %w", serr, err)
	}
	return nil
}

// Retries is the attempts Attempts made beyond the first of each request,
// and those Counted (store.RetryCounter).
func (p *Policy) Retries() int64 { return p.retried.Load() }

// Counted counts a retry made outside Attempts.
func (p *Policy) Counted() { p.retried.Add(1) }

// Connections is how many requests may be in flight.
func (p *Policy) Connections() int { return cap(p.slots) }

// Acquire takes a connection slot; Release gives it back.
func (p *Policy) Acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release gives back a slot Acquire took.
func (p *Policy) Release() { <-p.slots }

// GiveUp returns err, the final error of a request, marked
// store.ErrUnavailable when it says the store could not be reached: no
// answer at all (refused, reset, stalled, timed out, name not resolved) to
// a transient failure, or a gateway's 502, 503 or 504. Any other answer
// came from the store and is returned as it is.
func (p *Policy) GiveUp(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return err // marked already, by an inner GiveUp
	}
	switch p.class.Status(err) {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &unavailableError{err}
	case 0:
		if p.class.Retryable(err) {
			return &unavailableError{err}
		}
	}
	return err
}

// unavailableError is a store that could not be reached.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }
