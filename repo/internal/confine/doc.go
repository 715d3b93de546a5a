// Package confine reads and writes files beneath one trusted directory
// and never outside it: how chunkvc writes in the work tree and in
// .git/chunkvc, and reads its own state there.
//
// Contract:
//   - A path is a clean, relative slash path ("a/b.tif"); anything else
//     ("../x", "/x", "a//b", `a\b`) is refused with ErrUnsafePath.
//   - Every directory on the way to a file must be a real directory. A
//     symbolic link, or a file, in the way is refused (ErrUnsafePath);
//     it is never followed, replaced or removed. A missing directory is
//     made when writing, and is fs.ErrNotExist when reading.
//   - The file itself is never followed. Writes go to a temp file beside
//     it, renamed over it, so readers see the old bytes or the new and a
//     link in the file's place is replaced. Reads and opens take regular
//     files only.
//   - Each directory is opened (os.Root) and checked to be the one that
//     was Lstat'ed; every operation goes through that handle, so a
//     directory swapped for a link after the check leads nowhere else.
//   - Every error names the operation and the path, as the tree's label
//     shows it ("write .git/chunkvc/statcache: ...").
//
// A Tree keeps the directories of the last path it used open, so that a
// batch of files in sorted order opens each directory once; Close
// releases them, and the Tree may be used again after it. A Tree is safe
// for concurrent use.
//
// Glossary:
//   - base: the trusted directory a Tree is confined to (the work tree's
//     root, or .git).
//   - label: how a Tree shows its paths in errors ("" for the work tree,
//     ".git").
//   - rel: a path relative to base, with slashes.
//   - temp file: ".<name>.chunkvc-tmp-<12 hex digits>", beside <name>,
//     until it is renamed (TempFile.Commit) or linked (TempFile.Link)
//     over <name>. A process killed meanwhile leaves it behind;
//     RemoveTemps clears it.
//   - refusal: an error that is ErrUnsafePath, naming the path and the
//     element of it at fault ("refusing to write a/b: a is a symbolic
//     link").
package confine
