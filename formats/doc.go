// Package formats turns a file into a Layout: an ordered list of segments
// that covers every byte of the file exactly once. A segment is either inline
// (skeleton bytes: headers, directories, footers, small gaps) or a chunk with
// a logical key that says where in the file's data model the bytes belong.
//
//	file:    |hdr|  tile r0c0  | tile r0c1 |ifd|   tile r1c0   |
//	layout:  [inl][chunk key-a][chunk key-b][inl][chunk key-c ]
//
// Adapters (one subpackage per format: tiff, parquet, flatgeobuf, generic)
// never fail a file: Enumerate runs the matching adapter under recover() and
// falls back to the generic content-defined chunker, recording why.
//
// A segment may instead be derived: regenerated from the rest of the file
// by the adapter's Deriver (a FlatGeobuf index) and stored nowhere. The
// pipeline keeps it derived only after regenerating it and comparing; a
// StreamDeriver lets that comparison run as the bytes are made, in
// constant memory.
//
// Keys: printable ASCII without spaces, at most MaxKeyLen bytes. A key that
// ends in "@" is content-keyed: the manifest completes it with the chunk's
// hash, so chunks found by content (CDC) keep stable keys under inserts.
package formats
