// Package tablestore is the only code that writes and opens Sediment's
// SSTables: the generic format of package sstable, set up for storage keys
// and model values, in the object store. Flushes (ingest), compaction
// merges (compactor), the frontend's read path and the node's conditional
// writes (through ReaderCache) and `sediment admin verify` all go through
// it, so every SSTable is written and read with the same settings:
//
//	setting     what
//	----------  -----------------------------------------------------------
//	Split       the partition prefix of a storage key (keys): the bloom
//	            filter holds prefixes, and a point read skips an SSTable
//	            whose filter excludes its partition
//	statistics  each value's model.ValueStats, summed into the properties
//	            (timestamps, deletion times, rows, cells, tombstones)
//	writer      the caller's block size, buffer and compression; WriterID
//	            and CreatedAt name the writer in the properties
//	size        the bytes sent to the store, counted as they are written
//	tokens      the first and last keys' tokens, for the manifest entry
//	readers     opened with one ranged read of the object's tail; a
//	            ReaderCache keeps a bounded number open, least recently
//	            used out, with an optional block cache under them
//
// Objects are immutable, so a reader kept open is never stale.
package tablestore
