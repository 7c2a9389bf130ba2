// Package engine is the storage API the CQL layer calls: apply batches of
// mutations, apply a mutation on a condition, read a slice of a partition and
// scan a token range page by page. Results are live views: package model's
// reconciliation has merged every version of each entry, and deletions and
// expiry are applied at the read's time (Now, in seconds).
//
// Local implements Engine in process, over an ingest node (the newest writes,
// in its shards' memtables), the manifest's View (the SSTables committed to
// the bucket) and the block caches in front of the bucket. Remote implements
// it in a frontend without a node: a write goes over RPC (package rpc) to the
// node the View names as the owner of its token range, and a read takes the
// memtable step below from the owners' pages instead, sharing the rest.
//
// # The read path
//
//	step       what
//	---------  ----------------------------------------------------------
//	memtables  a snapshot of the owning shard(s): ingest.Shard.NewIter
//	           (Remote: the owners' rpc Scan pages, a partition at once,
//	           a scan page by page as it moves on)
//	SSTables   one View list per token range (SSTablesInRange), kept if
//	           their token span holds the key, then if their partition
//	           bloom filter may hold it (MayContain of the prefix)
//	readers    opened once per object and kept (tablestore.ReaderCache:
//	           footer, index, filter and properties stay in memory); data
//	           blocks come through the cache tiers, then a ranged GET
//	merge      kv.Merging(model.Merge, memtables, SSTables...)
//	resolve    the partition header first (partition deletion, range
//	           tombstones, static row), then each row with
//	           model.(*Header).Resolve at Now
//
// # Consistency
//
// A read sees every write acknowledged before it started. A write is
// acknowledged once it is in a memtable; it leaves the memtables only after
// its flush was committed. Local takes the memtable snapshot before it asks
// the View for SSTables, so a write is in the snapshot unless its flush had
// already committed, and ingest.ViewCommitter, which the node's flushes must commit
// through, returns only once the View shows the flush's SSTables. Whichever
// side a write is on when the read starts, the read finds it.
//
// # Keys and bounds
//
// Slice bounds are storage keys built by keys.AppendBound for the slice's
// partition; nil means the partition's first or last row. Range tombstones
// in a header bound clustering parts: a row key or an AppendBound result with
// the partition prefix and the kind byte cut off (ClusteringOf), which is what
// Resolve is given for each row.
//
// A scan resumes from Page.Next, the storage key of the last row it returned
// (or the end of the last partition). The next page reads that partition's
// header again, so that its deletions still apply to the rows that remain.
package engine
