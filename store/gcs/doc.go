// Package gcs is the content-addressed store in a Google Cloud Storage
// bucket. It is the only package that imports cloud.google.com/go/storage.
//
// A store is named by a URL, gs://bucket/prefix (the prefix may be empty
// or have several segments). Objects are keyed with the same fan-out as the
// local and S3 stores:
//
//	<prefix>/<first two hex digits>/<64 hex digits>   one object per chunk
//	<prefix>/named/<name>                             named objects (store.Registry)
//	<prefix>/packs/pack-<hex>.pack and .idx           objects put through a Batch,
//	                                                  and their index (store/internal/packstore)
//
// Packs, batch existence checks, DeleteMany and Sweep are
// store/internal/packstore's, over this package's object operations;
// resumable uploads never finished expire on the service, so Sweep has
// only packs without an index to remove. Listing skips every other key
// under the prefix. Credentials are Google's
// Application Default Credentials: the service-account key file named by
// GOOGLE_APPLICATION_CREDENTIALS, else gcloud's application-default login,
// else the metadata server of a Google Cloud machine. When
// STORAGE_EMULATOR_HOST is set (host:port or a URL) the store talks to that
// emulator over plain HTTP and needs no credentials. No credential is ever
// written anywhere or shown in a message.
//
// Objects are written with one request up to Options.ChunkSize and as a
// resumable upload in chunks of that size above it, so a failed chunk is
// sent again rather than the whole object. A write carries a precondition
// (the object must not exist, or must be the generation seen), which makes
// it idempotent and so safe to retry; what the server reports it stored
// (size, CRC32C) is checked, and a mismatch written again. Reads are
// ranged GETs reopened where they broke off, with backoff, failing after
// Options.Retries requests in a row brought no bytes.
//
// Every request holds one of Connections() slots (a reader holds its slot
// until closed or read to the end). Failed requests are retried by the SDK
// with exponential backoff and full jitter when the failure is transient
// (408, 429, 5xx, connection errors, stalls), up to Options.Retries
// attempts within Options.RetryTime; other answers are final. A connection
// that makes no progress for Options.Timeout fails, so an unreachable
// server makes every call fail within a bounded time.
package gcs
