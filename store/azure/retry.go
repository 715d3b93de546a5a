package azure

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
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/chunkvc/chunkvc/store"
)

// Backoff between attempts: a random wait in [d/2, d] with d doubling
// from backoffBase up to backoffCap.
var (
	backoffBase = 250 * time.Millisecond
	backoffCap  = 8 * time.Second
)

// retry runs fn, holding a connection slot for each attempt, until it
// succeeds, fails permanently, or the attempts or the retry time are used
// up. The last attempt's error is returned, saying how many failed.
func (s *Store) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.attempts(ctx, true, fn)
}

// attempts is retry; with slot false the attempts take no slot (the
// caller holds one, or a listing lets its callback use the store).
func (s *Store) attempts(ctx context.Context, slot bool, fn func(ctx context.Context) error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		if slot {
			if err := s.acquire(ctx); err != nil {
				return err
			}
		}
		err := fn(ctx)
		if slot {
			s.release()
		}
		if err == nil || ctx.Err() != nil || !retryable(err) {
			return err
		}
		wait := backoff(attempt)
		if attempt >= s.opt.Retries || time.Since(start)+wait > s.opt.RetryTime {
			err = fmt.Errorf("%d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err)
			if unreachable(err) {
				err = &unavailableError{err}
			}
			return err
		}
		s.retried.Add(1)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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

// statusOf returns the HTTP status of the service's answer in err, 0 when
// there was none.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// isNotFound reports whether err is the service's answer for a missing
// blob (not a missing container, which is a configuration error).
func isNotFound(err error) bool {
	return statusOf(err) == http.StatusNotFound && !bloberror.HasCode(err, bloberror.ContainerNotFound)
}

// retryable reports whether err is a transient failure: throttling, a
// server error, or a connection that failed, dropped or stalled. Other
// answers of the service (denied, not found, bad request, bad range) and
// TLS failures are permanent.
func retryable(err error) bool {
	switch statusOf(err) {
	case 0:
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	default:
		return false
	}
	var (
		certErr     *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		recordErr   tls.RecordHeaderError
		ne          net.Error
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostnameErr),
		errors.As(err, &recordErr), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, errStalled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.As(err, &ne):
		return true
	}
	return false
}

// unreachable reports whether err, retryable, means that no answer came
// from the store, or only a gateway's (502, 503, 504).
func unreachable(err error) bool {
	switch statusOf(err) {
	case 0:
		return true
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// unavailableError is a store that could not be reached.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// errStalled is the error of a body that made no progress in time.
var errStalled = errors.New("no progress")

// Retries is store.RetryCounter: the attempts retry made beyond the
// first of each request.
func (s *Store) Retries() int64 { return s.retried.Load() }
