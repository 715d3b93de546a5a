package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// Defaults for Options.
const (
	DefaultConnections = 16
	DefaultPartSize    = 16 << 20
	DefaultRetries     = 5
	DefaultRetryTime   = 60 * time.Second
	DefaultTimeout     = 30 * time.Second
)

// minPartSize is S3's smallest multipart part.
const minPartSize = 5 << 20

// Options tune a Store. The zero value gives the defaults.
type Options struct {
	// CreateBucket creates the bucket when it does not exist (and the
	// credentials permit it). Without it a missing bucket fails Open.
	CreateBucket bool
	// Connections bounds the requests in flight (default 16).
	Connections int
	// PartSize is the multipart part size; objects up to this size go in a
	// single PUT (default 16 MiB, at least 5 MiB).
	PartSize int64
	// Retries bounds the attempts of one operation (default 5); 1 means
	// no retry.
	Retries int
	// RetryTime bounds the time over which an operation is retried: no
	// attempt starts after it has passed (default 60 s).
	RetryTime time.Duration
	// Timeout is how long a connection may make no progress — connecting,
	// waiting for an answer, sending or receiving a body — before the
	// request fails (default 30 s).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Connections <= 0 {
		o.Connections = DefaultConnections
	}
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < minPartSize {
		o.PartSize = minPartSize
	}
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

// Store is a content-addressed store in an S3 bucket. It is safe for
// concurrent use.
type Store struct {
	url      string // s3://bucket/prefix, as String returns it
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // scheme://host[:port], for messages
	client   *minio.Client
	opt      Options
	pol      *retry.Policy // retries, connection slots, and their count

	*packstore.Packs
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.BatchStater  = (*Store)(nil)
	_ store.Connectioner = (*Store)(nil)
)

// ParseURL splits s3://bucket/prefix into the bucket and the key prefix
// (without leading or trailing slashes; empty for the bucket's root).
func ParseURL(raw string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(raw, "s3://")
	if !ok {
		return "", "", fmt.Errorf("store url %q: want s3://bucket/prefix", raw)
	}
	if strings.ContainsAny(rest, "?#\\") {
		return "", "", fmt.Errorf("store url %q: query, fragment or backslash not allowed", raw)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if err := s3utils.CheckValidBucketNameStrict(bucket); err != nil {
		return "", "", fmt.Errorf("store url %q: bucket %q: %w", raw, bucket, err)
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

// endpointFromEnv returns the host[:port] to talk to and whether to use
// TLS, from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL.
func endpointFromEnv() (host string, secure bool, err error) {
	raw, name := os.Getenv("AWS_ENDPOINT_URL_S3"), "AWS_ENDPOINT_URL_S3"
	if raw == "" {
		raw, name = os.Getenv("AWS_ENDPOINT_URL"), "AWS_ENDPOINT_URL"
	}
	if raw == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("%s=%s: scheme must be http or https", name, raw)
	case u.Host == "":
		return "", false, fmt.Errorf("%s=%s: no host", name, raw)
	case u.User != nil:
		return "", false, fmt.Errorf("%s: credentials in the endpoint URL are not supported", name)
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "":
		return "", false, fmt.Errorf("%s=%s: path or query not supported", name, raw)
	}
	return u.Host, u.Scheme == "https", nil
}

// credentialChain is minio-go's chain of the usual credential sources.
// The instance-metadata lookup is bounded by timeout (at most 5 s), so a
// machine without any credentials soon falls back to anonymous access.
func credentialChain(timeout time.Duration) *credentials.Credentials {
	timeout = min(timeout, 5*time.Second)
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.EnvMinio{},
		&credentials.FileAWSCredentials{},
		&credentials.FileMinioClient{},
		&credentials.IAM{Client: &http.Client{Timeout: timeout}},
	})
}

// Open opens the store at url (s3://bucket/prefix). It checks that the
// bucket exists, creating it when opt.CreateBucket is set.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	bucket, prefix, err := ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("open s3 store: %w", err)
	}
	opt = opt.withDefaults()
	host, secure, err := endpointFromEnv()
	if err != nil {
		return nil, fmt.Errorf("open s3 store %s: %w", url, err)
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	creds := credentialChain(opt.Timeout)
	// Without credentials the chain would ask every source again before
	// each request (IAM included); settle on anonymous access once.
	if v, err := creds.GetWithContext(&credentials.CredContext{Client: &http.Client{Timeout: min(opt.Timeout, 5*time.Second)}}); err == nil && v.SignerType.IsAnonymous() {
		creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
	}
	var transport http.RoundTripper = newTransport(opt)
	if testHookTransport != nil {
		transport = testHookTransport(transport)
	}
	client, err := minio.New(host, &minio.Options{
		Creds:           creds,
		Secure:          secure,
		Region:          region,
		Transport:       transport,
		TrailingHeaders: true,
		MaxRetries:      1, // Store retries, classifying errors itself
	})
	if err != nil {
		return nil, fmt.Errorf("open s3 store %s at %s://%s: %w", url, scheme, host, err)
	}
	client.SetAppInfo("chunkvc", "1")
	s := &Store{
		url:      "s3://" + bucket,
		bucket:   bucket,
		endpoint: scheme + "://" + host,
		client:   client,
		opt:      opt,
		pol: retry.New(opt.Retries, opt.RetryTime, opt.Connections,
			retry.Classifier{Retryable: retryable, Status: status}),
	}
	if prefix != "" {
		s.url += "/" + prefix
		s.prefix = prefix + "/"
	}
	s.Packs = s.newPacks()
	if err := s.checkBucket(ctx, region); err != nil {
		return nil, err
	}
	return s, nil
}

// checkBucket makes sure the bucket exists, creating it if allowed.
func (s *Store) checkBucket(ctx context.Context, region string) error {
	var exists bool
	err := s.pol.Do(ctx, func(ctx context.Context) (err error) {
		exists, err = s.client.BucketExists(ctx, s.bucket)
		return err
	})
	if err != nil {
		return fmt.Errorf("open s3 store %s at %s: %w", s.url, s.endpoint, err)
	}
	if exists {
		return nil
	}
	if !s.opt.CreateBucket {
		return fmt.Errorf("open s3 store %s at %s: bucket %s does not exist", s.url, s.endpoint, s.bucket)
	}
	err = s.pol.Do(ctx, func(ctx context.Context) error {
		err := s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
		if code := errorCode(err); code == minio.BucketAlreadyOwnedByYou {
			return nil // created concurrently, or by an earlier attempt
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("open s3 store %s at %s: create bucket %s: %w", s.url, s.endpoint, s.bucket, err)
	}
	return nil
}

// String returns the store's URL, s3://bucket/prefix.
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
		return fmt.Errorf("%s object %s: %w: no %s/%s", op, id.Short(), store.ErrNotFound, s.bucket, key)
	}
	return fmt.Errorf("%s object %s (%s/%s at %s): %w", op, id.Short(), s.bucket, key, s.endpoint, err)
}

// testHookTransport, when set by a test, wraps every new store's transport.
var testHookTransport func(http.RoundTripper) http.RoundTripper

// newTransport is an HTTP transport whose connections fail after
// opt.Timeout without progress.
func newTransport(opt Options) *http.Transport {
	d := &retry.StallDialer{
		Dialer:  net.Dialer{Timeout: opt.Timeout, KeepAlive: 30 * time.Second},
		Timeout: opt.Timeout,
	}
	idle := 2*opt.Connections + 8 // multipart uploads use a few connections each
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       opt.Timeout / 2, // before the stall deadline closes them
		TLSHandshakeTimeout:   opt.Timeout,
		ResponseHeaderTimeout: opt.Timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       128 << 10,
		ReadBufferSize:        128 << 10,
	}
}

// errorCode returns the S3 error code in err, if any.
func errorCode(err error) string {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.Code
	}
	return ""
}
