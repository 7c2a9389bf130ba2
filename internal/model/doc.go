// Package model is the data model of a table's values: cells, rows, their
// tombstones, how two versions of a value reconcile, and the bytes they are
// stored as. It follows Cassandra 4's model (Cells, LivenessInfo,
// DeletionTime, Rows.merge).
//
// # Entries
//
// Storage engines order entries by key bytes (package kv). Each partition has
// one header entry, whose key sorts before its rows, and one entry per row,
// keyed by clustering. A header value holds the partition deletion, the
// static row and the range tombstones; a row value holds the row's liveness,
// row deletion, collection column deletions and cells. Range tombstone
// bounds are byte strings that compare with bytes.Compare like the rows'
// clustering parts: a tombstone deletes the rows whose clustering c has
// Start <= c < End, with an empty End meaning no upper bound.
//
// # Reconciliation
//
// Two versions of a cell (same column and path) reconcile as in Cassandra:
//
//  1. The greater write timestamp wins.
//  2. On a tie, a tombstone beats an expiring cell, which beats a regular
//     cell. (An expiring cell wins over a regular one even before it
//     expires, CASSANDRA-14592: reconciliation must not depend on when it
//     runs. Once expired, an expiring cell reads as a tombstone.)
//  3. Two tombstones, or two expiring cells: the greater local deletion time
//     (expiry) wins.
//  4. The greater value in unsigned byte order wins.
//  5. Ours: the greater TTL wins, so that the order is total and a merge
//     gives the same bytes whatever the order of its inputs.
//
// Liveness reconciles by timestamp, then expiring over non-expiring, then the
// later expiry (then the greater TTL). Deletions reconcile by timestamp, then
// local deletion time. A deletion at timestamp T shadows cells and liveness
// written at or before T: a row deletion shadows its row, a column deletion
// the cells of its collection column, a range tombstone the rows in its
// range, a partition deletion everything in the partition. A row deletion is
// kept only while it supersedes the partition or range deletion covering it,
// a column deletion only while it supersedes the row's, and a range
// tombstone only while it supersedes the partition deletion. Where range
// tombstones overlap, the superseding one deletes.
//
// Merging two values takes the winner of every part and then drops what the
// merged deletions shadow. Each part is a maximum in a total order, and
// shadowing removes exactly what is below a deletion, so merging is
// associative and commutative and the result is one normal form (see Row and
// Header). Merge never looks at the clock; Resolve (reads) and the
// compactor's purge do.
//
// # Encoding
//
// A value starts with a tag byte: the kind in the high nibble (1 header, 2
// row) and the format version (1) in the low nibble. Integers are varints:
// uvarint as in encoding/binary, varint zigzag-encoded, both in their
// shortest form. Timestamps (µs) are stored as uvarint deltas from a base,
// the smallest timestamp of the body, and local times (s: deletion times,
// expiries) as deltas from their own base, so that a row written at one
// instant spends one byte per time. Each value has exactly one encoding;
// decoders reject any other, and any value not in normal form.
//
// Row value:
//
//	+-----+-------+---------+---------+-----------+-----------+------------------+--------------+
//	| tag | flags | tsBase  | ltBase  | liveness  | deletion  | column deletions | cells        |
//	| 1B  | 1B    | varint? | varint? | optional  | optional  | optional         | optional     |
//	+-----+-------+---------+---------+-----------+-----------+------------------+--------------+
//
//	flags             bit 0 liveness, bit 1 liveness expires, bit 2 row
//	                  deletion, bit 3 column deletions, bit 4 cells, bit 5
//	                  ltBase present. tsBase is present iff any of bits 0,
//	                  2, 3, 4 is set.
//	liveness          uvarint ts-tsBase [uvarint ttl, uvarint expiry-ltBase]
//	deletion          uvarint ts-tsBase, uvarint localDeletionTime-ltBase
//	column deletions  uvarint n (>0), then n times: uvarint column delta and
//	                  a deletion. The first column ID is absolute, later
//	                  ones are column - previous - 1 (IDs strictly increase).
//	cells             uvarint n (>0), then n cells sorted by (column, path):
//
//	+-------+------------------+------------------+--------------+--------------------------+-----------------+
//	| flags | column delta     | path             | ts-tsBase    | ttl, expiry-ltBase       | value           |
//	| 1B    | uvarint if bit 3 | uvarint len+bytes| uvarint      | expiring: 2 uvarints     | uvarint len     |
//	|       |                  | if bit 2         |              | tombstone: ldt-ltBase    | +bytes, not for |
//	|       |                  |                  |              |                          | tombstones      |
//	+-------+------------------+------------------+--------------+--------------------------+-----------------+
//
//	cell flags  bit 0 tombstone, bit 1 expiring, bit 2 path, bit 3 new
//	            column (the column differs from the previous cell's; set
//	            on the first cell, whose column is absolute).
//
// Header value:
//
//	+-----+-------+---------------------+-----------+------------------+-------------------+
//	| tag | flags | tsBase, ltBase      | deletion  | range tombstones | static row        |
//	| 1B  | 1B    | 2 varints, optional | optional  | optional         | row body, no tag  |
//	+-----+-------+---------------------+-----------+------------------+-------------------+
//
//	flags             bit 0 partition deletion, bit 1 range tombstones,
//	                  bit 2 static row. The bases are present iff bit 0
//	                  or bit 1 is set.
//	range tombstones  uvarint n (>0), then n times: uvarint len + start,
//	                  uvarint len+1 + end (0: unbounded), deletion.
//	static row        a row value without its tag, with its own bases.
package model
