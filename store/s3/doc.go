// Package s3 is the content-addressed store in an S3 bucket (AWS S3, MinIO,
// or any S3-compatible service). It is the only package that imports
// minio-go.
//
// A store is named by a URL, s3://bucket/prefix (the prefix may be empty
// or have several segments). Objects are keyed with the same fan-out as the
// local store:
//
//	<prefix>/<first two hex digits>/<64 hex digits>   one object per chunk
//
// Listing skips every other key under the prefix. The endpoint comes from
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (http:// means no TLS; default
// https://s3.amazonaws.com), the region from AWS_REGION or
// AWS_DEFAULT_REGION, and credentials from minio-go's credential chain:
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN,
// MINIO_ROOT_USER/MINIO_ROOT_PASSWORD (and MINIO_ACCESS_KEY/MINIO_SECRET_KEY),
// the ~/.aws/credentials profile named by AWS_PROFILE, the ~/.mc/config.json
// alias named by MINIO_ALIAS, then IAM instance or container roles. No
// credential is ever written anywhere or shown in a message.
//
// Every request holds one of Connections() slots (a multipart upload holds
// one slot for all its parts). Failed requests are retried with exponential
// backoff and jitter when the failure is transient (throttling, 5xx,
// connection errors, timeouts), never on other 4xx answers. A connection
// that makes no progress for Options.Timeout fails, so an unreachable
// server makes every call fail within a bounded time.
package s3
