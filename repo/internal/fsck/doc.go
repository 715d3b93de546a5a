// Package fsck checks a repository's data: every manifest reachable from
// any ref decodes, its layout is stored and agrees with it, and every
// chunk it names is in the store with the right size (and, with Full, the
// right hash and the file's digest).
//
// Contract: Run reports what is wrong with the data as Problems and
// returns an error only for what stops the check (a cancelled context, a
// store that cannot be reached: then nothing there was checked). Each
// manifest blob is checked once however many commits hold it, each chunk
// once, in id order, under its first user's name. Repair replaces a bad
// object of the configured store only with a copy verified in another
// store. The package reads Git through Git, which repo's Git implements,
// and a file's layout and bytes through the functions Env gives it; it
// never imports repo.
//
// Glossary:
//   - user: the commit, path and key under which a chunk was met first.
//   - configured store: the store a repository's config names (Env.Store).
//   - embedded store: the repository's own store (Env.Local), which holds
//     the chunks of offline commits not yet pushed.
package fsck
