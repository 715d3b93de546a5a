package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// TransientStatus reports whether an HTTP status says try again later:
// timeout, throttling, a server error or a gateway's.
func TransientStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// TLSFailure reports whether err is a certificate or TLS failure: a
// configuration error that no retry mends.
func TLSFailure(err error) bool {
	var (
		certErr     *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		recordErr   tls.RecordHeaderError
	)
	return errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostnameErr) ||
		errors.As(err, &recordErr)
}

// Transient reports whether err, a failure that came with no answer from
// the service, may pass on a later attempt: a connection that was refused,
// dropped, cut short or stalled, a timeout, a name that did not resolve.
// TLS failures and a cancelled context are final.
func Transient(err error) bool {
	if TLSFailure(err) || errors.Is(err, context.Canceled) {
		return false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, net.ErrClosed), errors.Is(err, ErrStalled):
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) // timeouts, DNS failures, other network errors
}
