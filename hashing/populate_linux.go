package hashing

import "syscall"

// mapPopulate maps a block's pages in one call instead of a fault per 64
// KiB as the hash walks it.
const mapPopulate = syscall.MAP_POPULATE
