package repo

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chunkvc/chunkvc/repo/internal/trust"
)

// ErrNeedsGCS is what a build without the gcs tag returns for a gs://
// store. Linking the Google Cloud SDK would add ~45 ms of package
// initialisation and 40 MB to every command, so the everyday binary
// leaves gs:// stores to its companion chunkvc-gcs (the same program
// built with -tags gcs); cmd/chunkvc hands such commands over before they
// run and reports this error only when the companion is missing.
var ErrNeedsGCS = errors.New("gs:// stores need chunkvc-gcs (built by make; go build -tags gcs ./cmd/chunkvc)")

// IsGCSURL reports whether u names a Google Cloud Storage store.
func IsGCSURL(u string) bool { return strings.HasPrefix(u, "gs://") }

// StoreURL is the URL of the store the repository containing dir uses
// (chunkvc.store in .git/config, else the store line of .chunkvc/config;
// "" for the embedded store), read without opening the store: how
// cmd/chunkvc picks the binary that can run a command there. Outside a
// chunkvc repository it is "" and no error.
func StoreURL(dir string) (string, error) {
	g, err := openGit(dir)
	if err != nil {
		return "", nil //nolint:nilerr // not a repository: the command says so itself
	}
	data, err := readConfig(g.Root())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ConfigPath, err)
	}
	info, err := trust.Resolve(g.Root(), cfg.Store)
	return info.URL, err
}
