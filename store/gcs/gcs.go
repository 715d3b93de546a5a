package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	gax "github.com/googleapis/gax-go/v2"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// Defaults for Options.
const (
	DefaultConnections = 16
	DefaultChunkSize   = 16 << 20
	DefaultRetries     = 5
	DefaultRetryTime   = 60 * time.Second
	DefaultTimeout     = 30 * time.Second
)

// minChunk is the granularity of resumable upload chunks (256 KiB).
const minChunk = 256 << 10

// Options tune a Store. The zero value gives the defaults.
type Options struct {
	// CreateBucket creates the bucket when it does not exist (and the
	// credentials permit it), in the project GOOGLE_CLOUD_PROJECT names or
	// else the credentials' own. Without it a missing bucket fails Open.
	CreateBucket bool
	// Connections bounds the requests in flight (default 16).
	Connections int
	// ChunkSize is the chunk of a resumable upload; objects up to this
	// size go in a single request (default 16 MiB, rounded up to 256 KiB).
	ChunkSize int
	// Retries bounds the attempts of one request (default 5); 1 means no
	// retry.
	Retries int
	// RetryTime bounds the time over which a request (an upload: a chunk)
	// is retried: no attempt starts after it has passed (default 60 s).
	RetryTime time.Duration
	// Timeout is how long a connection may make no progress before the
	// request fails (default 30 s).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Connections <= 0 {
		o.Connections = DefaultConnections
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	o.ChunkSize = roundChunk(o.ChunkSize)
	if o.Retries <= 0 {
		o.Retries = DefaultRetries
	}
	if o.RetryTime <= 0 {
		o.RetryTime = DefaultRetryTime
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// roundChunk rounds n up to a multiple of 256 KiB, as uploads need.
func roundChunk(n int) int { return (max(n, 1) + minChunk - 1) / minChunk * minChunk }

// Store is a content-addressed store in a GCS bucket. It is safe for
// concurrent use.
type Store struct {
	url      string // gs://bucket/prefix, as String returns it
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // scheme://host[:port], for messages
	client   *storage.Client
	bkt      *storage.BucketHandle
	opt      Options
	pol      *retry.Policy // connection slots, the retries of reads and their count (the SDK retries its other requests itself)
	*packstore.Packs
}

// Retries is store.RetryCounter: the reads this store resumed (the SDK's
// own retries of other requests are not seen).
func (s *Store) Retries() int64 { return s.pol.Retries() }

var (
	_ store.Store        = (*Store)(nil)
	_ store.BatchStater  = (*Store)(nil)
	_ store.Connectioner = (*Store)(nil)
	_ store.Batcher      = (*Store)(nil)
	_ store.BulkRemover  = (*Store)(nil)
	_ store.Sweeper      = (*Store)(nil)
	_ store.Toucher      = (*Store)(nil)
)

// validBucket applies GCS's naming rules: 3-63 bytes (222 with dots, for
// domain-named buckets) of lower-case letters, digits, '-', '_' and '.',
// starting and ending with a letter or digit, no "..", no "goog" prefix.
func validBucket(b string) bool {
	limit := 63
	if strings.Contains(b, ".") {
		limit = 222
	}
	if len(b) < 3 || len(b) > limit || strings.Contains(b, "..") || strings.HasPrefix(b, "goog") {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for i := 0; i < len(b); i++ {
		if c := b[i]; !alnum(c) && (i == 0 || i == len(b)-1 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// ParseURL splits gs://bucket/prefix into the bucket and the key prefix
// (without leading or trailing slashes; empty for the bucket's root).
func ParseURL(raw string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(raw, "gs://")
	if !ok {
		return "", "", fmt.Errorf("store url %q: want gs://bucket/prefix", raw)
	}
	if strings.ContainsAny(rest, "?#\\") {
		return "", "", fmt.Errorf("store url %q: query, fragment or backslash not allowed", raw)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if !validBucket(bucket) {
		return "", "", fmt.Errorf("store url %q: bad bucket name %q (3-63 lower-case letters, digits, '-', '_' and '.')", raw, bucket)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		for seg := range strings.SplitSeq(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "", "", fmt.Errorf("store url %q: bad prefix segment %q", raw, seg)
			}
		}
	}
	return bucket, prefix, nil
}

// emulatorEndpoint returns the scheme://host of STORAGE_EMULATOR_HOST, or
// "" when it is not set.
func emulatorEndpoint() (string, error) {
	raw := os.Getenv("STORAGE_EMULATOR_HOST")
	if raw == "" {
		return "", nil
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("STORAGE_EMULATOR_HOST=%s: want host:port or http://host:port", os.Getenv("STORAGE_EMULATOR_HOST"))
	}
	return u.Scheme + "://" + u.Host, nil
}

// OpenEnv opens the store at url with the timeouts of the environment:
// CHUNKVC_GCS_TIMEOUT and CHUNKVC_GCS_RETRY_TIME (Go durations) set
// Options.Timeout and RetryTime. It gives up after 2 minutes.
func OpenEnv(url string, create bool) (*Store, error) {
	opt := Options{CreateBucket: create}
	if d, err := time.ParseDuration(os.Getenv("CHUNKVC_GCS_TIMEOUT")); err == nil {
		opt.Timeout = d
	}
	if d, err := time.ParseDuration(os.Getenv("CHUNKVC_GCS_RETRY_TIME")); err == nil {
		opt.RetryTime = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Open(ctx, url, opt)
}

// credHelp says how to give the store credentials.
const credHelp = "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, " +
	"run `gcloud auth application-default login`, or set STORAGE_EMULATOR_HOST for an emulator"

// Open opens the store at url (gs://bucket/prefix). It checks that the
// bucket exists, creating it when opt.CreateBucket is set.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	bucket, prefix, err := ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("open gcs store: %w", err)
	}
	opt = opt.withDefaults()
	url = "gs://" + bucket
	if prefix != "" {
		url += "/" + prefix
	}
	emu, err := emulatorEndpoint()
	if err != nil {
		return nil, fmt.Errorf("open gcs store %s: %w", url, err)
	}
	var hc *http.Client
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	endpoint := emu
	if emu != "" {
		hc = &http.Client{Transport: newTransport(opt)}
		if project == "" {
			project = "chunkvc"
		}
	} else {
		endpoint = "https://storage.googleapis.com"
		creds, err := google.FindDefaultCredentials(ctx, storage.ScopeFullControl)
		if err != nil {
			return nil, fmt.Errorf("open gcs store %s: no usable Google credentials (%s): %w", url, credHelp, err)
		}
		if project == "" {
			project = creds.ProjectID
		}
		hc = &http.Client{Transport: &oauth2.Transport{Source: creds.TokenSource, Base: newTransport(opt)}}
	}
	if testHookTransport != nil {
		hc.Transport = testHookTransport(hc.Transport)
	}
	hc.Transport = budgetTransport{hc.Transport}
	client, err := storage.NewClient(ctx, option.WithHTTPClient(hc), storage.WithJSONReads(),
		storage.WithDisabledClientMetrics(), option.WithUserAgent("chunkvc/1"))
	if err != nil {
		return nil, fmt.Errorf("open gcs store %s at %s: %w", url, endpoint, err)
	}
	client.SetRetry(
		storage.WithPolicy(storage.RetryAlways), // every write carries a precondition or rewrites the same bytes
		storage.WithBackoff(gax.Backoff{Initial: 250 * time.Millisecond, Max: 8 * time.Second, Multiplier: 2}),
		storage.WithMaxAttempts(opt.Retries),
		storage.WithMaxRetryDuration(opt.RetryTime),
		storage.WithErrorFunc(retryable),
	)
	s := &Store{
		url:      url,
		bucket:   bucket,
		endpoint: endpoint,
		client:   client,
		bkt:      client.Bucket(bucket),
		opt:      opt,
		pol: retry.New(opt.Retries, opt.RetryTime, opt.Connections,
			retry.Classifier{Retryable: retryable, Status: code}),
	}
	if prefix != "" {
		s.prefix = prefix + "/"
	}
	s.Packs = packstore.New(packstore.Config{
		Backend: backend{s}, Loose: packstore.Loose{Put: s.putLoose, Stat: s.statLoose, Get: s.getLoose, List: s.listLoose, Key: s.key}, Prefix: s.prefix,
		Name: "gcs store " + url + " at " + endpoint, Connections: opt.Connections, RetryTime: opt.RetryTime,
		Touch: s.touchKey,
	})
	if err := s.checkBucket(ctx, project); err != nil {
		_ = client.Close()
		return nil, err
	}
	return s, nil
}

// checkBucket makes sure the bucket exists, creating it if allowed.
func (s *Store) checkBucket(ctx context.Context, project string) error {
	if err := s.pol.Acquire(ctx); err != nil {
		return err
	}
	defer s.pol.Release()
	_, err := s.bkt.Attrs(ctx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("open gcs store %s at %s: %w", s.url, s.endpoint, s.pol.GiveUp(err))
	}
	if !s.opt.CreateBucket {
		return fmt.Errorf("open gcs store %s at %s: bucket %s does not exist", s.url, s.endpoint, s.bucket)
	}
	if project == "" {
		return fmt.Errorf("open gcs store %s at %s: create bucket %s: no project: set GOOGLE_CLOUD_PROJECT", s.url, s.endpoint, s.bucket)
	}
	err = s.bkt.Create(ctx, project, nil)
	if code(err) == http.StatusConflict {
		return nil // created concurrently, or by an earlier attempt
	}
	if err != nil {
		return fmt.Errorf("open gcs store %s at %s: create bucket %s: %w", s.url, s.endpoint, s.bucket, s.pol.GiveUp(err))
	}
	return nil
}

// Close releases the client's resources.
func (s *Store) Close() error { return s.client.Close() }

// String returns the store's URL, gs://bucket/prefix.
func (s *Store) String() string { return s.url }

// Endpoint returns the endpoint the store talks to, scheme://host[:port].
func (s *Store) Endpoint() string { return s.endpoint }

// Connections returns how many requests the store runs at once; callers
// size their worker pools by it.
func (s *Store) Connections() int { return s.opt.Connections }

// key returns the object key of id.
func (s *Store) key(id hashing.ID) string {
	h := id.String()
	return s.prefix + h[:2] + "/" + h
}

// failed wraps err from op on object id, naming the key and the endpoint;
// a missing object also wraps store.ErrNotFound.
func (s *Store) failed(op string, id hashing.ID, err error) error {
	return s.failedAt(op, id, s.key(id), err)
}

// failedAt is failed for an object read from key (its pack's).
func (s *Store) failedAt(op string, id hashing.ID, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%s object %s: %w: no gs://%s/%s", op, id.Short(), store.ErrNotFound, s.bucket, key)
	}
	return fmt.Errorf("%s object %s (gs://%s/%s at %s): %w", op, id.Short(), s.bucket, key, s.endpoint, s.pol.GiveUp(err))
}

// testHookTransport, when set by a test, wraps every new store's transport.
var testHookTransport func(http.RoundTripper) http.RoundTripper
