package retry

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// ErrStalled is the error of a connection or body that made no progress
// in time.
var ErrStalled = errors.New("connection stalled")

// StallDialer dials connections that fail when a read or write makes no
// progress for Timeout, so a stalled request fails (and is retried) while
// a slow one that keeps moving does not.
type StallDialer struct {
	Dialer  net.Dialer
	Timeout time.Duration
}

// DialContext is net.Dialer's, on stall-checked connections.
func (d *StallDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	sc := &stallConn{Conn: c, timeout: d.Timeout}
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

// stalled adds ErrStalled to a deadline error.
func stalled(err error) error {
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return &stallError{err}
	}
	return err
}

type stallError struct{ err error }

func (e *stallError) Error() string   { return "no progress: " + e.err.Error() }
func (e *stallError) Unwrap() []error { return []error{ErrStalled, e.err} }
func (e *stallError) Timeout() bool   { return true }
func (e *stallError) Temporary() bool { return true }
