// Package registry is the registry of a shared store: the repositories
// that keep chunks in it, one named object per repository, so that gc in
// one of them deletes a chunk only when none of them references it.
//
// Contract: Put writes an entry atomically (store.Registry.PutNamed);
// Read returns every entry or an error wrapping ErrUnknownRepos naming the
// first that cannot be used, never a partial list gc could trust; an entry
// deleted while Read lists is skipped. The package decides nothing about
// Git: its caller fills an Entry's tips and judges whether it can read
// another repository's commits.
//
//	repos/<id>.json          the entry of repository <id> (Entry, indented JSON + LF)
//	.git/chunkvc/id          the repository's id and work tree (IDFile, JSON + LF)
//
// Glossary:
//   - id: 32 lower-case hex digits, random, made once per clone; a copy
//     made with cp -r takes a new one, a moved repository keeps its own.
//   - entry: where a repository's Git lives (host, work tree, remotes)
//     and the tips of its refs when it last committed, pushed or ran gc.
//   - tip: the commit a ref named when the entry was written.
//   - shared store: a store whose registry names more than one id.
//   - grace period: how old an unreferenced chunk must be before gc
//     deletes it; at least MinSharedGrace on a shared store unless forced.
package registry
