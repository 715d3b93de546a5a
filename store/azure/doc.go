// Package azure is the content-addressed store in an Azure Blob Storage
// container (or Azurite, Microsoft's emulator). It is the only package that
// imports the Azure SDK (azblob, and azcore with it).
//
// A store is named by a URL, az://container/prefix or azblob://container/prefix
// (the prefix may be empty or have several segments). Blobs are named with
// the same fan-out as the local store and store/s3:
//
//	<prefix>/<first two hex digits>/<64 hex digits>   one block blob per object
//	<prefix>/named/<name>                              named objects (store.Registry)
//	<prefix>/packs/pack-<hex>.pack and .idx            objects put through a Batch,
//	                                                   and their index (store/internal/packstore)
//
// Objects up to Options.BlockSize go in one Put Blob request; larger ones
// are staged as blocks of that size and committed with one Put Block List,
// so a blob is visible only once whole and a failed block is retried alone.
// Every upload carries the MD5 of its bytes, which the service checks.
// Reads are ranged GETs that resume where a dropped connection stopped.
// Blocks staged by an upload that never committed are not blobs: List does
// not see them and the service discards them after a week, so Sweep has
// only packs without an index to remove. Packs, batch existence checks,
// DeleteMany and Sweep are store/internal/packstore's, over this package's
// blob operations. Blobs are deleted up to 256 per blob batch request where
// the service takes batches (Azure does, and Azurite since 3.20), one
// request each where it answers that it does not.
//
// Credentials come from the environment, never from the repository, in
// this order: AZURE_STORAGE_CONNECTION_STRING (its BlobEndpoint, when
// present, names the service, as for Azurite); AZURE_STORAGE_ACCOUNT with
// AZURE_STORAGE_KEY (shared key); AZURE_STORAGE_ACCOUNT with
// AZURE_STORAGE_SAS_TOKEN. CHUNKVC_AZURE_ENDPOINT overrides the blob
// service URL of the latter two (default https://<account>.blob.core.windows.net;
// for Azurite http://127.0.0.1:10000/devstoreaccount1). The azidentity
// credential chain (managed identity, az login) is not included: it is a
// separate module with its own dependency tree.
//
// Every request holds one of Connections() slots; a reader holds one until
// it is closed or has reached its end. Failed requests are retried with
// exponential backoff and jitter when the failure is transient (408, 429,
// 5xx, connection errors, stalls), never on other answers. A request or
// body that makes no progress for Options.Timeout fails.
package azure
