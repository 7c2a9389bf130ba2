package ingest

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// valueOldest returns the smallest write timestamp of an encoded value
// (math.MaxInt64 if it has none). A value it cannot read, which validation
// should have refused, answers math.MinInt64: the purge bound then allows
// no purge at all, which is never wrong.
func valueOldest(value []byte) int64 {
	st, err := model.ValueStats(value)
	if err != nil {
		return math.MinInt64
	}
	if st.Values == 0 {
		return math.MaxInt64
	}
	return st.MinTimestamp
}

// Unflushed adds to into, for each table with entries in the shard's
// memtables (the active one and those being flushed), the smallest write
// timestamp among them, keeping the smaller of into's value and the
// shard's. Entries of tables truncated since count too: the bound only
// needs to be low enough.
//
// A memtable leaves the set only once its flush is committed, and its
// SSTables then carry the same timestamps in the manifest, so that data is
// always in one place or the other for compaction's purge rule.
func (s *Shard) Unflushed(into map[storage.TableID]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mems {
		for t, ts := range m.oldest {
			if old, ok := into[t]; !ok || ts < old {
				into[t] = ts
			}
		}
	}
}

// Unflushed returns, for each table with entries in any shard's memtables,
// the smallest write timestamp among them: what compaction's purge rule
// calls the oldest write not yet flushed.
func (n *Node) Unflushed() map[storage.TableID]int64 {
	out := map[storage.TableID]int64{}
	for _, s := range n.shards {
		s.Unflushed(out)
	}
	return out
}

// UnflushedKey names table in manifest.Member.Unflushed: by TableID, which
// the memtables know, rather than by the schema's ID, which a node whose
// schema lags a new table could not name. Tables sharing a TableID share
// its bound, which only makes it lower.
func UnflushedKey(table storage.TableID) string { return fmt.Sprintf("%08x", uint32(table)) }

// UnflushedMember returns the memtables' oldest write timestamps keyed for
// manifest.Member.Unflushed: never nil, so that an empty map says the node
// holds nothing.
func (n *Node) UnflushedMember() map[string]int64 {
	out := map[string]int64{}
	for t, ts := range n.Unflushed() {
		out[UnflushedKey(t)] = ts
	}
	return out
}

// IngestRole is the role of members running an ingest node.
const IngestRole = "ingest"

// OldestUnflushed returns the smallest write timestamp of table that any
// ingest member of members (manifest.Member.Unflushed) held unflushed at its
// last heartbeat, math.MaxInt64 if none held any.
//
// A heartbeat misses the writes acknowledged after it, so the answer covers
// every write acknowledged before since only if each ingest member beat
// after since; known is false otherwise, and also if an ingest member does
// not report the map (an older node). Compaction must then not purge. A
// dead member thus keeps purging off until it comes back or leaves: its
// commitlog will be replayed, with writes it may never have reported.
//
// The bound holds for the SSTables listed after members were read: a
// memtable leaves a member's report only once its flush is committed.
func OldestUnflushed(members []manifest.Member, table uuid.UUID, since time.Time) (ts int64, known bool) {
	ts, known = math.MaxInt64, true
	key := UnflushedKey(storage.TableIDOf(table))
	for _, m := range members {
		if !slices.Contains(m.Roles, IngestRole) {
			continue
		}
		if m.Unflushed == nil || !m.Heartbeat.After(since) {
			known = false
		}
		if t, ok := m.Unflushed[key]; ok {
			ts = min(ts, t)
		}
	}
	if !known {
		return math.MinInt64, false
	}
	return ts, true
}
