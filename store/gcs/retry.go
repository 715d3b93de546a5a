package gcs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/chunkvc/chunkvc/store"
)

// code returns the HTTP status of a GCS error answer, 0 for none.
func code(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// isNotFound reports whether err is GCS's answer for a missing object.
func isNotFound(err error) bool {
	return errors.Is(err, storage.ErrObjectNotExist) || code(err) == http.StatusNotFound && !errors.Is(err, storage.ErrBucketNotExist)
}

// retryable reports whether err is a transient failure that a later
// attempt may not meet: what the SDK retries by default (408, 429, 5xx,
// resets, short bodies), a connection that stalled or timed out, or one
// refused or dropped. Other answers (denied, not found, precondition
// failed, bad range) and TLS/certificate failures are final.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, errNoProgress) {
		return false
	}
	if c := code(err); c != 0 {
		return c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500 && c < 600
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
	case storage.ShouldRetry(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, net.ErrClosed), errors.Is(err, errStalled):
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// classify marks err, the final error of a request, store.ErrUnavailable
// when it says the store could not be reached: no answer at all (refused,
// reset, stalled, timed out, name not resolved) or a gateway's 502, 503 or
// 504. Any other answer came from the store and is returned as it is.
func (s *Store) classify(err error) error {
	switch c := code(err); {
	case c == http.StatusBadGateway || c == http.StatusServiceUnavailable || c == http.StatusGatewayTimeout:
		return &unavailableError{err}
	case c != 0, errors.Is(err, context.Canceled), !retryable(err):
		return err
	}
	return &unavailableError{err}
}

// unavailableError is a store that could not be reached.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// newTransport is an HTTP transport whose connections fail after
// opt.Timeout without progress.
func newTransport(opt Options) *http.Transport {
	d := &stallDialer{
		dialer:  net.Dialer{Timeout: opt.Timeout, KeepAlive: 30 * time.Second},
		timeout: opt.Timeout,
	}
	idle := opt.Connections + 8
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       opt.Timeout / 2, // before the stall deadline closes them
		TLSHandshakeTimeout:   opt.Timeout,
		ResponseHeaderTimeout: opt.Timeout,
		ExpectContinueTimeout: time.Second,
		WriteBufferSize:       128 << 10,
		ReadBufferSize:        128 << 10,
	}
}

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
