// Package sstable reads and writes immutable sorted tables: one table is one
// object in a bucket, written once as a stream and read with ranged reads.
// Keys are ordered by bytes.Compare and values are opaque; the data model
// gives them their meaning.
//
// # Layout
//
// A table is a sequence of blocks followed by a fixed-size footer:
//
//	+--------------+-----+--------------+-------+--------+------------+--------+
//	| data block 0 | ... | data block n | index | filter | properties | footer |
//	+--------------+-----+--------------+-------+--------+------------+--------+
//	 offset 0                            '---- metadata, read at Open ---'
//
// The data blocks tile the table from offset 0 to the index; the metadata
// blocks follow one another, so a reader gets footer and metadata with one
// read of the table's tail.
//
// # Physical blocks
//
// Every block is stored as a payload and a 5-byte trailer. The CRC-32C
// (Castagnoli) covers the payload and the type byte:
//
//	+--------------------------+----------------+---------------------+
//	| payload                  | type (1 byte)  | CRC-32C (4 bytes LE) |
//	+--------------------------+----------------+---------------------+
//
// Types: 0 none, 1 s2, 2 lz4 (block format), 3 zstd. A compressed payload
// starts with the uvarint length of the decoded contents:
//
//	+--------------------------+------------------------------------+
//	| decoded length (uvarint) | compressed contents                |
//	+--------------------------+------------------------------------+
//
// A writer stores a block uncompressed when compression saves less than an
// eighth of it. Block handles (offset, length) cover payload and trailer.
//
// # Data and index blocks
//
// Data and index blocks share one layout: entries with prefix-compressed
// keys, then the offsets of the restart points (entries whose key is stored
// whole), then their count:
//
//	+---------+-----+---------+--------------+-----+----------------+---------------+
//	| entry 0 | ... | entry m | restart 0    | ... | restart r      | r+1           |
//	|         |     |         | (uint32 LE)  |     | (uint32 LE)    | (uint32 LE)   |
//	+---------+-----+---------+--------------+-----+----------------+---------------+
//
//	entry: +----------------+------------------+-----------------+--------------+-------+
//	       | shared uvarint | unshared uvarint | value len uvarint| key[shared:] | value |
//	       +----------------+------------------+-----------------+--------------+-------+
//
// shared is the length of the prefix shared with the previous key and is 0
// at restart points, which come every RestartInterval entries. A seek binary
// searches the restart points, then scans at most one interval; a reverse
// step decodes the interval once and walks it backwards.
//
// The index block holds one entry per data block: the key is a separator s
// with last(block i) <= s < first(block i+1) (the last block uses its last
// key), the value the block's handle as two uvarints, offset and length.
// Index blocks are compressed like data blocks.
//
// # Filter block
//
// A Bloom filter over partition prefixes (WriterOptions.Split): an m-byte
// bitmap and one byte with the number of probes k. A key's XXH64 hash h
// sets bits (h + i·d) mod 8m for i < k, with d = h>>33 | 1. An empty filter
// block means the table has no filter.
//
// # Properties block
//
// A sequence of fields, each a uvarint tag, a uvarint length and the value:
// a uvarint, a zigzag varint or raw bytes depending on the tag. Readers skip
// unknown tags, so new properties need no new format version.
//
// # Footer (64 bytes)
//
//	+-----+------------------------------------------------+
//	|   0 | index offset, length      (2 x uint64 LE)      |
//	|  16 | filter offset, length     (2 x uint64 LE)      |
//	|  32 | properties offset, length (2 x uint64 LE)      |
//	|  48 | format version            (uint32 LE), now 1   |
//	|  52 | CRC-32C of bytes 0..51    (uint32 LE)          |
//	|  56 | magic "sediment"          (8 bytes)            |
//	+-----+------------------------------------------------+
//
// Any inconsistency a reader finds returns an error matching ErrCorrupt.
package sstable
