// Package cache holds the read caches of SSTable blocks: a memory tier in
// front of a local disk tier in front of the object store.
//
// Objects in the bucket are immutable, so a cached range never needs
// invalidation. A range is named by a Key (object, offset, length) and every
// tier is read through: Get(ctx, key, load) returns the cached bytes or calls
// load on a miss, and concurrent misses on one key share one call of load.
// Stack composes tiers, and NewReaderAt turns a tier into the ReadAt that the
// SSTable reader uses for one object.
//
// # Bounds
//
// Each tier is bounded in bytes and evicts entries before an insert that
// would exceed the bound, so the bytes held never exceed it. Eviction is CLOCK
// (second chance): a hit sets a bit, and the sweeping hand evicts the first
// entry whose bit is clear, clearing bits as it passes.
//
// The memory tier weighs an entry by its value's capacity, its object name
// and a fixed overhead, and splits the bound evenly over up to 16 shards; a
// value heavier than one shard's share is returned but not kept. The disk
// tier weighs an entry by the size of its file (file-system blocks round it
// up on disk). A miss on the disk tier writes the file before returning: a
// few tens of microseconds against a ranged GET's milliseconds.
//
// # Disk layout
//
// The disk tier keeps one file per entry, named by the first 16 bytes of the
// SHA-256 of the key in hex, in one of 256 subdirectories named by the first
// two hex digits:
//
//	<dir>/3f/3fa9c0…e1          an entry
//	<dir>/3f/3fa9c0…e1.17.tmp   a write in progress, renamed into place when complete
//
// On open, temporary files (left by a crash) are removed and the remaining
// files are indexed by size, oldest write first; nothing is read until a hit.
//
// # Entry format
//
// All integers are little-endian. The key is repeated in the file, so a file
// is only served for the key it was written for.
//
//	+--------+---------+-----------+--------+--------+--------+---------+--------+
//	| magic  | key len | value len | offset | length | object |  value  | CRC32C |
//	| "sdc1" | uint32  | uint64    | int64  | int64  | bytes  |  bytes  | uint32 |
//	+--------+---------+-----------+--------+--------+--------+---------+--------+
//	 0        4         8           16       24       32
//	                                \______ key (key len bytes) ______/
//
// The CRC32C (Castagnoli) covers every byte before it. A file whose lengths
// disagree with its size or whose checksum fails is removed, counted as
// corrupt, and its range loaded again; it is never served.
package cache
