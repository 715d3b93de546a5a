package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

func TestBackoff(t *testing.T) {
	for attempt, lo := 1, retry.BackoffBase/2; attempt < 40; attempt++ {
		d := retry.Backoff(attempt)
		if d < lo || d > retry.BackoffCap {
			t.Errorf("Backoff(%d) = %v, want in [%v, %v]", attempt, d, lo, retry.BackoffCap)
		}
		lo = min(2*lo, retry.BackoffCap/2)
	}
}

// statusErr is an answer of a service with an HTTP status.
type statusErr int

func (e statusErr) Error() string { return fmt.Sprintf("status %d", int(e)) }

var class = retry.Classifier{
	Retryable: func(err error) bool {
		var se statusErr
		if errors.As(err, &se) {
			return retry.TransientStatus(int(se))
		}
		return retry.Transient(err)
	},
	Status: func(err error) int {
		var se statusErr
		if errors.As(err, &se) {
			return int(se)
		}
		return 0
	},
}

// Attempts retries transient failures up to the bound, counts the
// retries, stops at once on a final answer, and marks a store that gave
// no answer (or a gateway's) unavailable.
func TestAttempts(t *testing.T) {
	for _, c := range []struct {
		err         error
		calls       int
		unavailable bool
	}{
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, 3, true},
		{fmt.Errorf("read: %w", retry.ErrStalled), 3, true},
		{io.ErrUnexpectedEOF, 3, true},
		{statusErr(http.StatusServiceUnavailable), 3, true},
		{statusErr(http.StatusInternalServerError), 3, false},
		{statusErr(http.StatusTooManyRequests), 3, false},
		{statusErr(http.StatusForbidden), 1, false},
		{context.Canceled, 1, false},
		{errors.New("something else"), 1, false},
	} {
		p := retry.New(3, time.Minute, 1, class)
		calls := 0
		err := p.Attempts(t.Context(), retry.NoSlot, func(context.Context) error { calls++; return c.err })
		if calls != c.calls || p.Retries() != int64(c.calls-1) {
			t.Errorf("%v: %d calls, %d retries counted, want %d calls", c.err, calls, p.Retries(), c.calls)
		}
		if got := errors.Is(err, store.ErrUnavailable); got != c.unavailable {
			t.Errorf("%v: unavailable %v, want %v (%v)", c.err, got, c.unavailable, err)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("error %q does not wrap %q", err, c.err)
		}
	}
}

// A successful attempt after failures returns nil; with KeepSlot it keeps
// its slot, which the caller gives back.
func TestAttemptsKeepSlot(t *testing.T) {
	p := retry.New(5, time.Minute, 1, class)
	fails := 1
	err := p.Attempts(t.Context(), retry.KeepSlot, func(context.Context) error {
		if fails > 0 {
			fails--
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := p.Acquire(ctx); err == nil {
		t.Fatal("a second slot was free while the kept one was held")
	}
	p.Release()
	if err := p.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Resume ends a read on a final error or after too many fruitless
// reopenings, and lets it reopen otherwise.
func TestResume(t *testing.T) {
	p := retry.New(2, time.Minute, 1, class)
	if err := p.Resume(t.Context(), io.ErrUnexpectedEOF, 10, 0); err != nil {
		t.Errorf("progress then a cut: %v, want reopen", err)
	}
	if err := p.Resume(t.Context(), statusErr(http.StatusForbidden), 0, 1); err == nil {
		t.Error("403 reopened")
	}
	if err := p.Resume(t.Context(), io.ErrUnexpectedEOF, 0, 2); err == nil {
		t.Error("reopened beyond the bound")
	}
}
