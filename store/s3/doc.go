// Package s3 is the content-addressed store in an S3 bucket (AWS S3, MinIO,
// or any S3-compatible service). It is the only package that imports
// minio-go.
//
// A store is named by a URL, s3://bucket/prefix (the prefix may be empty
// or have several segments). Objects are keyed with the same fan-out as the
// local store:
//
//	<prefix>/<first two hex digits>/<64 hex digits>   one object per chunk (Put)
//	<prefix>/packs/pack-<hex>.pack                    objects put through a Batch,
//	                                                  raw or zstd, back to back
//	<prefix>/packs/pack-<hex>.idx                     its index, stored after the pack;
//	                                                  <hex> is the index's checksum
//
// Packs and indexes have the byte layout of store/local's (see
// store/internal/packidx), with raw and zstd objects (zcodec decides, as
// locally) but no deltas: a delta would make a lazy read fetch its base
// chain. A zstd object is read with one ranged GET of all its stored bytes
// and decoded; chunkvc before zstd on S3 refuses such a pack's index
// loudly rather than misread it. A batch appends objects
// up to 4 MiB to temp files in os.TempDir() (unlinked as soon as created),
// and uploads each 64 MiB pack in the background with one PUT, then its
// index: a pack's objects are readable exactly when its index exists, and
// a batch killed midway leaves its finished packs as ordinary objects (a
// retry finds them; gc collects them once unreferenced and old) and at
// most a pack without an index, which Sweep removes once it is old. Readers keep every index in
// memory, loaded on first use; an object found neither there nor loose
// makes them list packs/ again before reporting it missing. A packed
// object, or part of one, is read with a ranged GET of its pack. A damaged
// index hides its pack's objects and makes List and DeleteMany fail naming
// it. DeleteMany rewrites a pack that keeps some objects (new pack, new
// index, then old index, old pack).
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
