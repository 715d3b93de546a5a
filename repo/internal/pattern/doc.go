// Package pattern is the grammar of the globs chunkvc tracks: checking
// one, matching a slash path against it, and the block of .gitignore that
// keeps the tracked files out of Git.
//
// Contract: Check accepts exactly the patterns Match can use; Match never
// fails (a malformed element matches nothing). GitignoreWith keeps the
// text outside its block byte for byte.
//
// Glossary:
//   - pattern: a slash-separated glob. Without a slash it matches a base
//     name at any depth; with one (or a leading "/") it is anchored at
//     the work tree's root, and a "**" element matches any number of
//     directories.
//   - block: the lines between BlockBegin and BlockEnd in .gitignore,
//     written by chunkvc only.
package pattern
