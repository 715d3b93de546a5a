package azure

import (
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/chunkvc/chunkvc/store/internal/retry"
)

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
	if c := statusOf(err); c != 0 {
		return retry.TransientStatus(c)
	}
	return retry.Transient(err)
}

// Retries is store.RetryCounter: the attempts retry made beyond the
// first of each request.
func (s *Store) Retries() int64 { return s.pol.Retries() }
