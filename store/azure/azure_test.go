package azure_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/azuritetest"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
	"github.com/chunkvc/chunkvc/store/storetest"
)

// startAzurite starts a service and points this process's Azure
// environment at it, with the account key.
func startAzurite(t testing.TB) *azuritetest.Server {
	t.Helper()
	srv := azuritetest.Start(t)
	srv.Setenv(t)
	return srv
}

func open(t testing.TB, url string, opt azure.Options) *azure.Store {
	t.Helper()
	s, err := azure.Open(t.Context(), url, opt)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return s
}

func object(seed int64, n int) ([]byte, hashing.ID) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b, hashing.Sum(b)
}

func TestConformance(t *testing.T) {
	startAzurite(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		// A fresh prefix per store; every other one at a container's root.
		i := n.Add(1)
		url := fmt.Sprintf("az://conformance/run/%d", i)
		if i%2 == 0 {
			url = fmt.Sprintf("azblob://conformance-root-%d", i)
		}
		return open(t, url, azure.Options{CreateContainer: true})
	})
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url, container, prefix string
		ok                     bool
	}{
		{"az://data", "data", "", true},
		{"az://data/", "data", "", true},
		{"azblob://data/team/a/", "data", "team/a", true},
		{"az://my-data-1/x", "my-data-1", "x", true},
		{"az://", "", "", false},
		{"az:///x", "", "", false},
		{"az://ab/x", "", "", false},       // too short
		{"az://Data/x", "", "", false},     // upper case
		{"az://my--data/x", "", "", false}, // double hyphen
		{"az://-data/x", "", "", false},
		{"az://data-/x", "", "", false},
		{"az://my.data/x", "", "", false},
		{"az://data//x", "", "", false},
		{"az://data/a/../b", "", "", false},
		{"az://data/x?sv=1", "", "", false},
		{"s3://data/x", "", "", false},
		{"https://acct.blob.core.windows.net/data", "", "", false},
	} {
		cont, prefix, err := azure.ParseURL(c.url)
		if (err == nil) != c.ok || cont != c.container || prefix != c.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q, ok %v", c.url, cont, prefix, err, c.container, c.prefix, c.ok)
		}
	}
}

// Each way of giving credentials reaches the service; a missing or wrong
// one fails naming the store and what to set, never showing the key.
func TestCredentials(t *testing.T) {
	srv := startAzurite(t)
	data, id := object(1, 1000)
	use := func(t *testing.T, env map[string]string) (*azure.Store, error) {
		for _, k := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "CHUNKVC_AZURE_ENDPOINT"} {
			t.Setenv(k, env[k])
		}
		return azure.Open(t.Context(), "az://creds/"+t.Name(), azure.Options{CreateContainer: true, Retries: 1})
	}
	sasToken, err := azure.AccountSAS(srv.Account, srv.Key)
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"connection string": {"AZURE_STORAGE_CONNECTION_STRING": srv.ConnectionString()},
		"account key":       {"AZURE_STORAGE_ACCOUNT": srv.Account, "AZURE_STORAGE_KEY": srv.Key, "CHUNKVC_AZURE_ENDPOINT": srv.Endpoint},
		"sas token":         {"AZURE_STORAGE_ACCOUNT": srv.Account, "AZURE_STORAGE_SAS_TOKEN": "?" + sasToken, "CHUNKVC_AZURE_ENDPOINT": srv.Endpoint},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := use(t, env)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if err := store.Put(t.Context(), s, id, data); err != nil {
				t.Fatalf("put: %v", err)
			}
			if got, err := store.ReadAll(t.Context(), s, id); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back: %v", err)
			}
			if strings.Contains(s.Endpoint(), "sig=") {
				t.Errorf("endpoint %q shows the SAS", s.Endpoint())
			}
		})
	}
	wrongKey := strings.Repeat("A", len(srv.Key)-2) + "=="
	for name, c := range map[string]struct {
		env  map[string]string
		want []string
	}{
		"none":            {map[string]string{}, []string{"az://creds/", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY"}},
		"key, no account": {map[string]string{"AZURE_STORAGE_KEY": srv.Key}, []string{"AZURE_STORAGE_ACCOUNT"}},
		"bad conn string": {map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "AccountKey=" + srv.Key}, []string{"AZURE_STORAGE_CONNECTION_STRING"}},
		"wrong key": {map[string]string{"AZURE_STORAGE_ACCOUNT": srv.Account, "AZURE_STORAGE_KEY": wrongKey, "CHUNKVC_AZURE_ENDPOINT": srv.Endpoint},
			[]string{"az://creds/", srv.Endpoint, "check the credentials"}},
		"bad endpoint": {map[string]string{"AZURE_STORAGE_ACCOUNT": srv.Account, "AZURE_STORAGE_KEY": srv.Key, "CHUNKVC_AZURE_ENDPOINT": "ftp://x"},
			[]string{"CHUNKVC_AZURE_ENDPOINT"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := use(t, c.env)
			if err == nil {
				t.Fatal("open succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, secret := range []string{srv.Key, wrongKey} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a key", err)
				}
			}
		})
	}
}

// An object larger than a block is staged in blocks and reads back whole
// and by ranges; one of a block or less is put whole. A missing container
// fails Open unless it may be created.
func TestBlocks(t *testing.T) {
	startAzurite(t)
	if _, err := azure.Open(t.Context(), "az://not-there/x", azure.Options{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("open of a missing container without CreateContainer: %v", err)
	}
	s := open(t, "az://blocks/x", azure.Options{CreateContainer: true, BlockSize: 1 << 20})
	for _, c := range []struct {
		size   int
		blocks int
	}{{1 << 20, 0}, {3<<20 + 12345, 4}, {0, 0}} {
		data, id := object(int64(c.size), c.size)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatalf("put %d bytes: %v", c.size, err)
		}
		if n, err := s.CommittedBlocks(t.Context(), id); err != nil || n != c.blocks {
			t.Errorf("%d bytes: %d committed blocks, %v; want %d", c.size, n, err, c.blocks)
		}
		if got, err := store.ReadAll(t.Context(), s, id); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes: %d, %v", c.size, len(got), err)
		}
		if c.size < 2<<20 {
			continue
		}
		rc, err := s.Get(t.Context(), id, 1<<20-7, 1<<20+14) // across three blocks
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data[1<<20-7:2<<20+7]) {
			t.Errorf("range across blocks: %d bytes, %v", len(got), err)
		}
	}
	_, missing := object(9, 10)
	if _, err := s.Get(t.Context(), missing, 0, -1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get of a missing object: %v", err)
	}
}

// The batch, DeleteMany and Sweep cases, on packs of the shared pack
// layer (store/internal/packstore).
func TestBatchConformance(t *testing.T) {
	startAzurite(t)
	var n atomic.Int64
	// Packed objects are stored raw or zstd: no footprint, whose checks
	// expect deltas.
	storetest.RunBatch(t, func(t *testing.T) store.Store {
		return open(t, fmt.Sprintf("az://batch/run/%d", n.Add(1)), azure.Options{CreateContainer: true})
	}, nil)
}
