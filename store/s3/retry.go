package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/store"
)

// Backoff between attempts: a random wait in [d/2, d] with d doubling
// from backoffBase up to backoffCap.
var (
	backoffBase = 250 * time.Millisecond
	backoffCap  = 8 * time.Second
)

// slot modes of attempts.
type slotMode int

const (
	withSlot slotMode = iota // each attempt holds a connection slot
	keepSlot                 // like withSlot, and a successful attempt keeps it
	noSlot                   // the caller holds a slot already, or needs none
)

// retry runs fn until it succeeds, fails permanently, or the attempts or
// the retry time are used up; each attempt holds a connection slot. The
// error of the last attempt is returned, saying how many attempts failed.
func (s *Store) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.attempts(ctx, withSlot, fn)
}

// attempts is retry with a choice of how attempts hold connection slots.
func (s *Store) attempts(ctx context.Context, mode slotMode, fn func(ctx context.Context) error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if mode != noSlot {
			if err := s.acquire(ctx); err != nil {
				return err
			}
		}
		err := fn(ctx)
		if mode == withSlot || mode == keepSlot && err != nil {
			s.release()
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) {
			return err
		}
		wait := backoff(attempt)
		if attempt >= s.opt.Retries || time.Since(start)+wait > s.opt.RetryTime {
			return giveUp(fmt.Errorf("%d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err))
		}
		s.retried.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// backoff returns the wait after the given failed attempt (1-based).
func backoff(attempt int) time.Duration {
	d := backoffCap
	if attempt < 16 {
		d = min(backoffBase<<(attempt-1), backoffCap)
	}
	return d/2 + rand.N(d/2+1)
}

// retryable reports whether err is a transient failure that a later
// attempt may not meet: throttling, a server-side error, or a connection
// that failed or stalled. Answers that will not change (access denied,
// not found, bad request, bad range) and TLS/certificate failures are
// permanent.
func retryable(err error) bool {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch er.Code {
		case "SlowDown", "SlowDownRead", "SlowDownWrite", "Throttling", "ThrottlingException",
			"RequestLimitExceeded", "RequestThrottled", "RequestTimeout", "InternalError",
			"ServiceUnavailable", "XMinioServerNotInitialized", "XMinioReadQuorum", "XMinioWriteQuorum",
			"IncompleteBody", "ExpiredToken", "ExpiredTokenException":
			return true
		}
		switch er.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, 499,
			http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		if er.StatusCode != 0 {
			return false // any other HTTP answer is final
		}
	}
	var (
		certErr      *tls.CertificateVerificationError
		unknownAuth  x509.UnknownAuthorityError
		hostnameErr  x509.HostnameError
		recordHeader tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostnameErr),
		errors.As(err, &recordHeader):
		return false
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, net.ErrClosed), errors.Is(err, errStalled):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true // timeouts, DNS failures, other network errors
	}
	return false
}

// giveUp is err, the last error of attempts that were all retryable,
// marked store.ErrUnavailable when it says the store could not be reached.
func giveUp(err error) error {
	if unreachable(err) {
		return &unavailableError{err}
	}
	return err
}

// unreachable reports whether err, a retryable failure, means no answer
// from the store: the connection failed, dropped or stalled, the name did
// not resolve, the request timed out; or a gateway answered that the store
// is not there (502, 503, 504). Any other answer came from the store.
func unreachable(err error) bool {
	var er minio.ErrorResponse
	if errors.As(err, &er) && er.StatusCode != 0 {
		switch er.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return retryable(err)
}

// unavailableError is a store that could not be reached.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// errStalled is the error of a connection that made no progress in time.
var errStalled = errors.New("connection stalled")

// stallDialer dials connections that fail when a read or write makes no
// progress for timeout.
type stallDialer struct {
	dialer  net.Dialer
	timeout time.Duration
}

func (d *stallDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	sc := &stallConn{Conn: c, timeout: d.timeout}
	sc.extend()
	return sc, nil
}

// stallConn pushes its deadline forward whenever bytes move (at most every
// timeout/8, to keep that cheap), so only a stalled connection times out.
type stallConn struct {
	net.Conn
	timeout time.Duration
	last    atomic.Int64 // unix nanoseconds of the last deadline set
}

func (c *stallConn) extend() {
	now := time.Now()
	if last := c.last.Load(); now.UnixNano()-last < int64(c.timeout/8) {
		return
	}
	c.last.Store(now.UnixNano())
	_ = c.Conn.SetDeadline(now.Add(c.timeout))
}

func (c *stallConn) Read(p []byte) (int, error) {
	c.extend()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.extend()
	}
	return n, stalled(err)
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.extend()
	n, err := c.Conn.Write(p)
	return n, stalled(err)
}

// stalled adds errStalled to a deadline error.
func stalled(err error) error {
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return &stallError{err}
	}
	return err
}

type stallError struct{ err error }

func (e *stallError) Error() string   { return "no progress: " + e.err.Error() }
func (e *stallError) Unwrap() []error { return []error{errStalled, e.err} }
func (e *stallError) Timeout() bool   { return true }
func (e *stallError) Temporary() bool { return true }

// Retries is store.RetryCounter: the attempts retry made beyond the
// first of each request.
func (s *Store) Retries() int64 { return s.retried.Load() }
