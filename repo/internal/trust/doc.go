// Package trust decides whether a repository may use the store its
// configuration names. .chunkvc/config arrives with every clone, pull and
// merge, so whoever can push to a remote could otherwise make the next
// commit write into any directory the user can write to (as git treats
// hooks and config of a remote). A local store outside the repository
// that the committed config names is therefore untrusted until this
// clone records its directory in .git/config, which is never committed
// or cloned.
//
// Contract: Resolve never creates or opens the store; it reads
// .git/config (without includes) and resolves symlinks only. Record
// writes .git/config through the git command (config.lock and a rename).
// An untrusted store is replaced by UntrustedStore, which fails every
// call with an error wrapping ErrUntrustedStore and touches nothing.
//
//	.git/config   [chunkvc]
//	                  store = URL            this clone's store; wins over .chunkvc/config
//	                  trustedStore = DIR     a trusted directory, symlinks resolved (may repeat)
//
// Glossary:
//   - store URL: a path (relative to the work tree), file://PATH or
//     s3://bucket/prefix; "" is the embedded store, .git/chunkvc/store.
//   - source: where the URL came from (StoreDefault, StoreConfig,
//     StoreGitConfig).
//   - inside: a directory in the work tree but not in .git, or the
//     embedded store; anything else local is outside.
//   - trusted: may be used. Only an outside store named by the committed
//     config can be untrusted.
package trust
