package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sedimentdb/sediment/commitlog"
	"github.com/sedimentdb/sediment/keys"
	"github.com/sedimentdb/sediment/kv"
	"github.com/sedimentdb/sediment/model"
	"github.com/sedimentdb/sediment/sstable"
)

// splitPartition is the SSTables' Split: the partition prefix of a storage
// key, which the partition filter holds.
func splitPartition(key []byte) int {
	n, err := keys.PartitionPrefixLen(key)
	if err != nil {
		return len(key) // not written by the shard, which validates keys
	}
	return n
}

// entryStats reports a value's statistics for the SSTable properties.
func entryStats(_, value []byte) sstable.EntryStats {
	st, err := model.ValueStats(value)
	if err != nil {
		return sstable.EntryStats{MinLocalDeletionTime: sstable.NoDeletionTime}
	}
	return sstable.EntryStats{
		MinTimestamp:         st.MinTimestamp,
		MaxTimestamp:         st.MaxTimestamp,
		MinLocalDeletionTime: st.MinLocalDeletionTime,
		Rows:                 uint64(st.Rows),
		Cells:                uint64(st.Cells),
		Tombstones:           uint64(st.Tombstones),
	}
}

// flushLoop flushes the immutable memtables, oldest first, one at a time:
// commits must follow log order, since each records that everything up to
// its position is in SSTables.
func (s *Shard) flushLoop() {
	defer close(s.flushDone)
	backoff := s.cfg.FlushMinBackoff
	// recheck is set after a failed attempt: its commit may have been
	// recorded even though it reported an error.
	recheck := false
	for {
		s.mu.Lock()
		var m *memState
		if len(s.mems) > 1 {
			m = s.mems[0]
		}
		s.mu.Unlock()
		if m == nil {
			select {
			case <-s.flushWake:
				continue
			case <-s.flushCtx.Done():
				return
			}
		}
		start := time.Now()
		f, err := s.flush(s.flushCtx, m, recheck)
		if errors.Is(err, errTruncated) {
			continue // flush again without the truncated table
		}
		if err != nil {
			if s.flushCtx.Err() != nil {
				return
			}
			s.m.flushFailures.Inc()
			s.logger.Warn("flush failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-s.flushCtx.Done():
				return
			}
			backoff = min(2*backoff, s.cfg.FlushMaxBackoff)
			recheck = true
			continue
		}
		backoff, recheck = s.cfg.FlushMinBackoff, false
		s.mu.Lock()
		s.mems = s.mems[1:]
		s.mu.Unlock()
		select {
		case s.flushed <- struct{}{}:
		default:
		}
		s.m.flushes.Inc()
		s.m.flushSeconds.Observe(time.Since(start).Seconds())
		s.logger.Debug("flushed memtable", "through", f.Through.String(), "tables", len(f.Tables), "seconds", time.Since(start).Seconds())
		s.releaseMu.Lock()
		s.releasable = f.Through
		s.releaseMu.Unlock()
		s.release()
	}
}

// release frees the commitlog segments that committed flushes cover, once
// replay no longer reads them.
func (s *Shard) release() {
	s.releaseMu.Lock()
	defer s.releaseMu.Unlock()
	if !s.replayed || s.releasable == (commitlog.Position{}) {
		return
	}
	// Release keeps any segment holding a record at or after upTo; the
	// record at releasable is flushed, so start just past it.
	upTo := commitlog.Position{Segment: s.releasable.Segment, Offset: s.releasable.Offset + 1}
	if err := s.log.Release(upTo); err != nil {
		s.logger.Warn("commitlog release failed; the next flush retries", "err", err)
	}
}

// errTruncated means a table was truncated while its SSTable was uploaded.
var errTruncated = errors.New("ingest: table truncated during flush")

// flush writes m as one SSTable per table and commits them. Tables
// truncated in m are left out. If recheck is set, a previous attempt
// failed, perhaps after its commit was recorded: then flush first asks the
// committer, and uploads nothing if the commit is there, since uploading
// would overwrite committed SSTables.
func (s *Shard) flush(ctx context.Context, m *memState, recheck bool) (Flush, error) {
	s.mu.Lock()
	f := Flush{Shard: s.id, Through: m.through}
	truncated := maps.Clone(m.truncated)
	s.mu.Unlock()
	if recheck {
		done, err := s.deps.Committer.Flushed(ctx, s.id)
		if err != nil {
			return Flush{}, fmt.Errorf("check flush through %v: %w", f.Through, err)
		}
		if f.Through.Compare(done) <= 0 {
			s.logger.Info("flush found committed by a failed attempt", "through", f.Through.String())
			return f, nil
		}
	}
	if m.created.IsZero() {
		// Fixed for the memtable, so a retry uploads the same bytes.
		m.created = time.Now()
	}
	it := m.mt.Snapshot().NewIter(nil, nil)
	defer it.Close()
	for valid := it.First(); valid; {
		table := TableID(binary.BigEndian.Uint32(it.Key()))
		if truncated[table] {
			_, hi := tableBounds(table, nil, nil)
			valid = hi != nil && it.SeekGE(hi)
			continue
		}
		t, next, err := s.writeTable(ctx, table, f.Through, m.created, it)
		if err != nil {
			return Flush{}, err
		}
		f.Tables = append(f.Tables, t)
		valid = next
	}
	if err := it.Error(); err != nil {
		return Flush{}, err
	}
	// A truncation marks memtables under truncMu: holding it, a table
	// unmarked now stays unmarked until the commit is recorded.
	s.truncMu.Lock()
	defer s.truncMu.Unlock()
	s.mu.Lock()
	n := len(m.truncated)
	s.mu.Unlock()
	if n != len(truncated) {
		return Flush{}, errTruncated
	}
	if err := s.deps.Committer.Commit(ctx, f); err != nil {
		return Flush{}, fmt.Errorf("commit flush through %v: %w", f.Through, err)
	}
	return f, nil
}

// objectKey names the SSTable of table from the flush through pos. The name
// is fixed by what the SSTable holds, so a retried flush overwrites an
// upload abandoned before its commit, with the same bytes, and never a
// committed table: records up to a committed position are never flushed
// again, and a flush retried after a commit error first checks that the
// commit was not recorded.
func (s *Shard) objectKey(table TableID, pos commitlog.Position) string {
	return fmt.Sprintf("%s/%08x/%05d-%016x-%016x.sst", s.cfg.ObjectPrefix, uint32(table), s.id, pos.Segment, pos.Offset)
}

// writeTable streams the entries of table, starting at it, into a new
// object. It returns whether it stopped at another table's entry.
func (s *Shard) writeTable(ctx context.Context, table TableID, through commitlog.Position, created time.Time, it kv.Iterator) (SSTable, bool, error) {
	t := SSTable{Table: table, Key: s.objectKey(table, through)}
	// The store aborts the upload if ctx ends (Close abandons flushes).
	w, err := s.deps.Store.NewWriter(ctx, t.Key)
	if err != nil {
		return SSTable{}, false, fmt.Errorf("upload %s: %w", t.Key, err)
	}
	cw := &countingWriter{w: w}
	sw := sstable.NewWriter(cw, sstable.WriterOptions{
		Split:     splitPartition,
		Stats:     entryStats,
		WriterID:  fmt.Sprintf("ingest/shard-%d", s.id),
		CreatedAt: created,
	})
	valid := true
	for valid {
		k := it.Key()
		if TableID(binary.BigEndian.Uint32(k)) != table {
			break
		}
		if err := sw.Add(k[tablePrefixLen:], it.Value()); err != nil {
			w.Abort()
			return SSTable{}, false, fmt.Errorf("write %s: %w", t.Key, err)
		}
		valid = it.Next()
	}
	if err := it.Error(); err != nil {
		w.Abort()
		return SSTable{}, false, err
	}
	props, err := sw.Close()
	if err != nil {
		w.Abort()
		return SSTable{}, false, fmt.Errorf("write %s: %w", t.Key, err)
	}
	if err := w.Close(); err != nil {
		return SSTable{}, false, fmt.Errorf("upload %s: %w", t.Key, err)
	}
	t.Size = cw.n
	t.FirstKey, t.LastKey, t.Entries = props.FirstKey, props.LastKey, props.Entries
	s.m.flushedBytes.Add(float64(cw.n))
	return t, valid, nil
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
