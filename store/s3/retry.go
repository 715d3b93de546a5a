package s3

import (
	"errors"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// status returns the HTTP status of S3's answer in err, 0 when none came.
func status(err error) int {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.StatusCode
	}
	return 0
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
		if retry.TransientStatus(er.StatusCode) || er.StatusCode == 499 {
			return true
		}
		if er.StatusCode != 0 {
			return false // any other HTTP answer is final
		}
	}
	return retry.Transient(err)
}

// Retries is store.RetryCounter: the attempts retry made beyond the
// first of each request.
func (s *Store) Retries() int64 { return s.pol.Retries() }
