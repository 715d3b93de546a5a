package repo

import "github.com/chunkvc/chunkvc/repo/internal/trust"

// ErrUntrustedStore means .chunkvc/config names a local store outside the
// repository that this clone has not been told to trust (package trust
// says why).
var ErrUntrustedStore = trust.ErrUntrustedStore

// Where the store location comes from (StoreInfo.Source).
const (
	StoreDefault   = trust.StoreDefault   // no store line: the embedded .git/chunkvc/store
	StoreConfig    = trust.StoreConfig    // store = in .chunkvc/config, which is committed
	StoreGitConfig = trust.StoreGitConfig // chunkvc.store in .git/config: this clone's own choice
)

// StoreInfo says which store a repository uses, where that came from and
// whether it may be used.
type StoreInfo = trust.Info

// StoreInfo reports the store the repository uses.
func (r *Repo) StoreInfo() StoreInfo { return r.storeInfo }

// resolveStore decides which store to use (trust.Resolve) given the
// committed store line.
func (r *Repo) resolveStore(committed string) (StoreInfo, error) {
	return trust.Resolve(r.Root, committed)
}

// untrustedError says which store is not used and how to trust it.
func (r *Repo) untrustedError(info StoreInfo) error { return trust.Refusal(info, r.Root) }

// TrustStore records in .git/config that this clone may use the local
// store outside the repository that .chunkvc/config names, and opens it
// (trust.Record). A store that needs no trust is left as it is.
func (r *Repo) TrustStore() (StoreInfo, error) {
	if r.storeInfo.Trusted {
		return r.storeInfo, nil
	}
	info, err := trust.Record(r.Root, r.storeInfo)
	if err != nil {
		return info, err
	}
	return info, r.useStore(info, false)
}

// useStore opens the store info describes, or, when it is not trusted,
// stands in a store that refuses every operation without touching its
// directory (not even creating it).
func (r *Repo) useStore(info StoreInfo, create bool) error {
	r.storeInfo = info
	if !info.Trusted {
		r.Store = trust.UntrustedStore{URL: info.URL, Err: r.untrustedError(info)}
	} else {
		st, err := r.openStore(info.URL, create)
		if err != nil {
			return err
		}
		r.Store = st
	}
	return r.setupReadPath()
}
