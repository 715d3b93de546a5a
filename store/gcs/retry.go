package gcs

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/chunkvc/chunkvc/store/internal/retry"
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
// failed, bad range), a read that made no progress however often reopened
// or an upload whose every attempt failed (writeBudget),
// and TLS/certificate failures are final.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, errNoProgress) || errors.Is(err, errWriteFailed) {
		return false
	}
	if c := code(err); c != 0 {
		return c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500 && c < 600
	}
	return retry.Transient(err) || !retry.TLSFailure(err) && storage.ShouldRetry(err)
}

// newTransport is an HTTP transport whose connections fail after
// opt.Timeout without progress.
func newTransport(opt Options) *http.Transport {
	d := &retry.StallDialer{
		Dialer:  net.Dialer{Timeout: opt.Timeout, KeepAlive: 30 * time.Second},
		Timeout: opt.Timeout,
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
