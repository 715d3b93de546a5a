package azure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// Defaults for Options.
const (
	DefaultConnections = 16
	DefaultBlockSize   = 8 << 20
	DefaultRetries     = 5
	DefaultRetryTime   = 60 * time.Second
	DefaultTimeout     = 30 * time.Second
)

// Options tune a Store. The zero value gives the defaults.
type Options struct {
	// CreateContainer creates the container when it does not exist (and
	// the credentials permit it). Without it a missing container fails Open.
	CreateContainer bool
	// Connections bounds the requests in flight (default 16).
	Connections int
	// BlockSize is the size of a staged block; objects up to it go in one
	// Put Blob (default 8 MiB).
	BlockSize int64
	// Retries bounds the attempts of one operation (default 5); 1 means
	// no retry.
	Retries int
	// RetryTime bounds the time over which an operation is retried: no
	// attempt starts after it has passed (default 60 s).
	RetryTime time.Duration
	// Timeout is how long a request may wait for an answer, or a body
	// make no progress, before it fails (default 30 s).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Connections <= 0 {
		o.Connections = DefaultConnections
	}
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
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

// Store is a content-addressed store in an Azure Blob Storage container.
// It is safe for concurrent use.
type Store struct {
	url       string // az://container/prefix, as String returns it
	container string
	prefix    string // "" or ending in "/"
	endpoint  string // the blob service URL, for messages (no SAS)
	client    *container.Client
	opt       Options
	pol       *retry.Policy // retries, connection slots, and their count
	noBatch   atomic.Bool   // the service answered that it takes no blob batches
	*packstore.Packs
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.BatchStater  = (*Store)(nil)
	_ store.Connectioner = (*Store)(nil)
	_ store.Toucher      = (*Store)(nil)
	_ store.RetryCounter = (*Store)(nil)
	_ store.Registry     = (*Store)(nil)
	_ store.Batcher      = (*Store)(nil)
	_ store.BulkRemover  = (*Store)(nil)
	_ store.Sweeper      = (*Store)(nil)
)

// Schemes are the URL schemes of the store.
var Schemes = []string{"az://", "azblob://"}

// IsURL reports whether raw names an Azure store (az:// or azblob://).
func IsURL(raw string) bool {
	for _, s := range Schemes {
		if strings.HasPrefix(raw, s) {
			return true
		}
	}
	return false
}

// ParseURL splits az://container/prefix (or azblob://) into the container
// and the blob name prefix (without leading or trailing slashes; empty for
// the container's root).
func ParseURL(raw string) (cont, prefix string, err error) {
	rest, ok := "", false
	for _, s := range Schemes {
		if rest, ok = strings.CutPrefix(raw, s); ok {
			break
		}
	}
	if !ok {
		return "", "", fmt.Errorf("store url %q: want az://container/prefix", raw)
	}
	if strings.ContainsAny(rest, "?#\\") {
		return "", "", fmt.Errorf("store url %q: query, fragment or backslash not allowed", raw)
	}
	cont, prefix, _ = strings.Cut(rest, "/")
	if err := checkContainer(cont); err != nil {
		return "", "", fmt.Errorf("store url %q: %w", raw, err)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		for seg := range strings.SplitSeq(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "", "", fmt.Errorf("store url %q: bad prefix segment %q", raw, seg)
			}
		}
	}
	return cont, prefix, nil
}

// checkContainer applies Azure's container naming rules: 3 to 63
// lower-case letters, digits and single hyphens, starting and ending with
// a letter or digit.
func checkContainer(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("container %q: want 3 to 63 characters", name)
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(name)-1 && name[i-1] != '-':
		default:
			return fmt.Errorf("container %q: only lower-case letters, digits and single inner hyphens", name)
		}
	}
	return nil
}

// Open opens the store at url (az://container/prefix). It checks that the
// container exists, creating it when opt.CreateContainer is set.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	cont, prefix, err := ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("open azure store: %w", err)
	}
	opt = opt.withDefaults()
	s := &Store{
		url:       "az://" + cont,
		container: cont,
		opt:       opt,
		pol: retry.New(opt.Retries, opt.RetryTime, opt.Connections,
			retry.Classifier{Retryable: retryable, Status: statusOf}),
	}
	if prefix != "" {
		s.url += "/" + prefix
		s.prefix = prefix + "/"
	}
	copt := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: newHTTPClient(opt),
		// The Store retries, classifying errors itself.
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Telemetry: policy.TelemetryOptions{ApplicationID: "chunkvc"},
	}}
	client, endpoint, err := newClient(cont, copt)
	if err != nil {
		return nil, fmt.Errorf("open azure store %s: %w", s.url, err)
	}
	s.client, s.endpoint = client, endpoint
	s.Packs = packstore.New(packstore.Config{
		Backend: backend{s}, Loose: packstore.Loose{Put: s.putLoose, Stat: s.statLoose, Get: s.getLoose, List: s.listLoose, Key: s.key}, Prefix: s.prefix,
		Name: "azure store " + s.url + " at " + endpoint, Connections: opt.Connections, RetryTime: opt.RetryTime,
		Touch: s.touchKey,
	})
	if err := s.checkContainer(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// checkContainer makes sure the container exists, creating it if allowed.
func (s *Store) checkContainer(ctx context.Context) error {
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := s.client.GetProperties(ctx, nil)
		return err
	})
	if err == nil {
		return nil
	}
	if !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return fmt.Errorf("open azure store %s at %s: %w", s.url, s.endpoint, explain(err))
	}
	if !s.opt.CreateContainer {
		return fmt.Errorf("open azure store %s at %s: container %s does not exist", s.url, s.endpoint, s.container)
	}
	err = s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := s.client.Create(ctx, nil)
		if bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return nil // created concurrently, or by an earlier attempt
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("open azure store %s at %s: create container %s: %w", s.url, s.endpoint, s.container, explain(err))
	}
	return nil
}

// explain adds what to check to an authentication failure.
func explain(err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized) {
		return fmt.Errorf("%w (check the credentials in AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN and their permissions)", err)
	}
	return err
}

// Endpoint variables.
const (
	envConnString = "AZURE_STORAGE_CONNECTION_STRING"
	envAccount    = "AZURE_STORAGE_ACCOUNT"
	envKey        = "AZURE_STORAGE_KEY"
	envSAS        = "AZURE_STORAGE_SAS_TOKEN"
	envEndpoint   = "CHUNKVC_AZURE_ENDPOINT"
)

// newClient returns a client of container cont from the credentials in
// the environment, and the service URL for messages.
func newClient(cont string, copt *azblob.ClientOptions) (*container.Client, string, error) {
	if cs := os.Getenv(envConnString); cs != "" {
		c, err := container.NewClientFromConnectionString(cs, cont, &container.ClientOptions{ClientOptions: copt.ClientOptions})
		if err != nil {
			// The SDK's message may quote the string, key included.
			return nil, "", fmt.Errorf("%s is not a valid connection string", envConnString)
		}
		return c, serviceOf(c.URL()), nil
	}
	account, key, sas := os.Getenv(envAccount), os.Getenv(envKey), strings.TrimPrefix(os.Getenv(envSAS), "?")
	service := os.Getenv(envEndpoint)
	if service == "" && account != "" {
		service = "https://" + account + ".blob.core.windows.net"
	}
	if service != "" {
		u, err := url.Parse(service)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
			return nil, "", fmt.Errorf("%s=%s: want http(s)://host[:port][/account], no query", envEndpoint, service)
		}
		service = strings.TrimSuffix(service, "/")
	}
	contURL := service + "/" + cont
	switch {
	case key != "" && account != "":
		cred, err := azblob.NewSharedKeyCredential(account, key)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", envKey, err)
		}
		c, err := container.NewClientWithSharedKeyCredential(contURL, cred, &container.ClientOptions{ClientOptions: copt.ClientOptions})
		return c, service, err
	case sas != "" && service != "":
		c, err := container.NewClientWithNoCredential(contURL+"?"+sas, &container.ClientOptions{ClientOptions: copt.ClientOptions})
		return c, service, err
	case key != "":
		return nil, "", fmt.Errorf("%s is set but %s is not", envKey, envAccount)
	case sas != "":
		return nil, "", fmt.Errorf("%s is set but neither %s nor %s is", envSAS, envAccount, envEndpoint)
	}
	return nil, "", fmt.Errorf("no credentials: set %s, or %s with %s or %s", envConnString, envAccount, envKey, envSAS)
}

// serviceOf is the service part of a container URL, without query.
func serviceOf(contURL string) string {
	contURL, _, _ = strings.Cut(contURL, "?")
	if i := strings.LastIndexByte(strings.TrimSuffix(contURL, "/"), '/'); i > 0 {
		return contURL[:i]
	}
	return contURL
}

// String returns the store's URL, az://container/prefix.
func (s *Store) String() string { return s.url }

// Endpoint returns the blob service URL the store talks to.
func (s *Store) Endpoint() string { return s.endpoint }

// Connections returns how many requests the store runs at once.
func (s *Store) Connections() int { return s.opt.Connections }

// key returns the blob name of id.
func (s *Store) key(id hashing.ID) string {
	h := id.String()
	return s.prefix + h[:2] + "/" + h
}

// failed wraps err from op on object id, naming the blob and the endpoint;
// a missing object also wraps store.ErrNotFound.
func (s *Store) failed(op string, id hashing.ID, err error) error {
	return s.failedAt(op, id, s.key(id), err)
}

// failedAt is failed for an object read from blob key (its pack's).
func (s *Store) failedAt(op string, id hashing.ID, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%s object %s: %w: no blob %s/%s", op, id.Short(), store.ErrNotFound, s.container, key)
	}
	return fmt.Errorf("%s object %s (%s/%s at %s): %w", op, id.Short(), s.container, key, s.endpoint, explain(err))
}

// newHTTPClient is the HTTP client of a store: connections and answers
// that take longer than opt.Timeout fail, and so do connections that make
// no progress for opt.Timeout, so that a body stalled midway (a whole-blob
// read of a pack index, an upload) fails and is retried rather than
// hanging; reader watches its bodies too, to resume where they stopped.
func newHTTPClient(opt Options) *http.Client {
	idle := 2*opt.Connections + 8
	d := &retry.StallDialer{
		Dialer:  net.Dialer{Timeout: opt.Timeout, KeepAlive: 30 * time.Second},
		Timeout: opt.Timeout,
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       opt.Timeout / 2, // before the stall deadline closes them
		TLSHandshakeTimeout:   opt.Timeout,
		ResponseHeaderTimeout: opt.Timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}}
}

// OpenURL opens the store at url as the commands do: creating the
// container when create is set, with CHUNKVC_AZURE_TIMEOUT and
// CHUNKVC_AZURE_RETRY_TIME (Go durations) for Options.Timeout and
// RetryTime when set, and at most two minutes to reach the service.
func OpenURL(url string, create bool) (*Store, error) {
	opt := Options{CreateContainer: create}
	if d, err := time.ParseDuration(os.Getenv("CHUNKVC_AZURE_TIMEOUT")); err == nil {
		opt.Timeout = d
	}
	if d, err := time.ParseDuration(os.Getenv("CHUNKVC_AZURE_RETRY_TIME")); err == nil {
		opt.RetryTime = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Open(ctx, url, opt)
}
