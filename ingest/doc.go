// Package ingest is the write side of a Sediment node: shards, each owning a
// slice of the token ring on one core, with its own commitlog and memtables,
// which make writes durable, serve the newest data to reads, and flush it as
// SSTables into the bucket.
//
// # Mutations and commitlog records
//
// A storage.Mutation is a table ID and entries: storage keys (package keys) and
// model-encoded values, merged into what the table holds. The shard writes
// the mutations of one group commit as one commitlog record (the commitlog
// frames and checksums it, so the record has no checksum of its own). The
// first byte of a record gives its type and format version:
//
//	+---------+------------+------------+-----+
//	| 01      | mutation 1 | mutation 2 | ... |   mutations
//	+---------+------------+------------+-----+
//	| 02      | uvarint table ID        |         truncation of a table
//	+---------+-------------------------+
//
//	mutation  uvarint table ID, uvarint entry count (> 0), then per entry
//	          uvarint key length, key, uvarint value length, value
//	          (keys and values are never empty)
//
// A Node holds a node's shards; shard i of n owns the i-th of n equal
// slices of the token ring and Node routes each partition to it.
//
// # The shard goroutine
//
// One goroutine applies all writes of a shard (the execution-stage idea):
// it takes every request that arrived while it was busy as one batch,
// appends the batch's mutations to the commitlog as one record, waits for
// the one fsync that makes it durable, applies the record to the active
// memtable (Set of each entry, merging with model.Merge, then one Commit
// that publishes the batch to readers at once) and acknowledges every write
// of the batch. Under load, each fsync thus serves all writes that queued
// during the previous one, with no timer to tune.
//
// A conditional write (ApplyIf) runs on the same goroutine: the writes before
// it in the batch are committed first, then the condition reads the
// partition (memtables merged with committed SSTables) and, if it holds, the
// mutation joins the next group. No other write of the shard can come
// between the read and the write.
//
// Reads (NewIter) take lock-free snapshots of the active memtable and of
// the memtables being flushed, and never wait for the shard goroutine.
//
// # Flushes and what a crash does at each step
//
// When the active memtable reaches Config.MemtableSize, or its oldest write
// Config.FlushAge, it becomes immutable and a new one takes writes. It
// records From, the previous memtable's Through, and Through, the position
// of its newest record: it holds exactly the records after From up to
// Through. One flush goroutine then handles immutable memtables oldest
// first:
//
//  1. For each table and token range (NodeDeps.Ranges, the manifest's split of
//     the ring, so that each SSTable lies in one range) that the memtable
//     holds entries of, stream an SSTable into the bucket
//     (tablestore.Create). The object's name is fixed by the table, the shard, From,
//     Through and the range, so equal names hold equal entries. A crash
//     here leaves no object or an orphan nobody refers to; the records are
//     in the commitlog and replay restores them.
//  2. Commit the flush (FlushCommitter): its SSTables and Through. A crash
//     before it acts as in step 1 (a retry rewrites the same object
//     names). Once all of it is recorded, restart replays only records
//     after Through, so no record is held both by a committed SSTable and
//     a replayed memtable, and no SSTable is counted twice.
//  3. Drop the memtable from the read set, then release the commitlog
//     segments whose records are all at or before Through. A crash before
//     the release leaves segments that replay skips record by record.
//
// In a cluster the committer is a ManifestCommitter, and step 2 is one
// manifest commit per SSTable (per table and range), each fenced by the
// node's ownership epoch of its range and naming the flush (node, shard,
// Through) and its SSTable count; its tables are the manifest's, named here
// by storage.TableIDOf (the first four bytes of the table's UUID). A crash
// between them leaves the flush recorded in part: Flushed does not count it,
// so restart replays all its records, and replay ends a memtable at its
// Through (Partial). That memtable then has the same From and Through, its
// flush the same object names, and the flush reuses the SSTables already
// recorded (Recorded) instead of overwriting them: every write is stored
// once. Only if memory forces replay to cut the memtable short do new
// SSTables repeat some recorded entries, which reads merge away (merging is
// idempotent).
//
// A node whose memtables are read together with a manifest View's SSTables
// (the engine's read path, in process or over rpc) commits through a
// ViewCommitter, which returns only once the View shows the flush, so that
// step 3 never drops what a read could not find in the View; its
// conditional writes read the committed SSTables through a ViewReader over
// the same View.
//
// A commit fenced because another node now owns a range (storage.ErrFenced) is
// final: the shard stops flushing and fails every later write with an
// error matching storage.ErrFenced (and manifest.ErrFenced), since it could never
// make them durable in the manifest. Its memtables still serve reads, its
// records stay in the commitlog, and a reopened shard that owns the ranges
// again replays and commits them.
//
// Commits follow log order, so the committed Throughs of a shard only grow and
// one position says what the SSTables hold. A failed step is retried with
// exponential backoff until it succeeds or the shard is closed. A commit may
// be recorded, in whole or in part, yet report an error, so a retry first
// asks the committer and uploads neither a recorded flush nor a recorded
// SSTable: it never rewrites a committed object. A retry before that point
// rewrites the same bytes, as the memtable's SSTables keep their first
// creation time.
//
// # Stopping
//
// Flush queues every non-empty active memtable and waits until the flushes
// queued so far are committed, so a node stopped after it has nothing to
// replay. A node that restarts keeps its ranges and so takes them back under
// a new epoch; only a node leaving for good releases them in the manifest,
// after its Flush, for other nodes to claim: a range released with records
// still in the commitlog would strand them.
//
// # Back-pressure
//
// The active and flushing memtables of a shard may use Config.MemoryLimit
// bytes (plus at most one batch). Past it, the shard goroutine stops taking
// batches until a flush frees memory; a write that waits longer than
// Config.WriteTimeout fails with storage.ErrOverloaded and is not applied.
// Nothing acknowledged is ever dropped: acknowledged writes are in the
// commitlog until a committed SSTable holds them. When the bucket recovers,
// the retried flushes succeed and writes resume by themselves.
//
// # Truncation
//
// Truncate logs a truncation record, then marks the table truncated in
// every memtable that holds entries and starts a new active memtable. Reads
// and flushes skip a table in the memtables that mark it. Replay, which
// flushes as it goes, first finds each table's last truncation and never
// applies the table's entries logged before it. A flush checks the marks again
// just before its commit, under a lock that Truncate takes to mark, and
// starts over if a table it uploaded was truncated meanwhile: once Truncate
// returns, no flush commits the table's older entries. Dropping the
// table's SSTables committed before is the manifest's part
// (manifest.DropSSTables), which engine.Truncate runs after this.
package ingest
