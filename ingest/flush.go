package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
)

// flushLoop flushes the immutable memtables, oldest first, one at a time:
// commits must follow log order, since each records that everything up to
// its position is in SSTables.
func (s *Shard) flushLoop() {
	defer close(s.flushDone)
	backoff := s.cfg.FlushMinBackoff
	// recheck is set after a failed attempt: its commit may have been
	// recorded even though it reported an error.
	recheck := false
	// held is set after an attempt that had its upload held back by L0
	// pressure past the max commit delay: the next attempt does not wait
	// again, or a hold longer than the delay would never end.
	held := false
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
		f, err := s.flush(s.flushCtx, m, recheck, held)
		held = errors.Is(err, errStaleUpload)
		if errors.Is(err, errTruncated) {
			continue // flush again without the truncated table
		}
		if errors.Is(err, errStaleUpload) {
			// Nothing was committed: upload again, as the same attempt
			// would have (recheck unchanged).
			s.logger.Warn("flush not committed within the max commit delay; uploading it again", "through", m.through.String(), "max_commit_delay", s.cfg.MaxCommitDelay)
			continue
		}
		if errors.Is(err, storage.ErrFenced) {
			// Another node owns a range of the memtable: its records can
			// never be committed here, so nothing more may be acknowledged.
			// They stay in the commitlog.
			s.logger.Error("flush fenced; the shard refuses writes until reopened", "err", err)
			s.mu.Lock()
			s.fenced = fmt.Errorf("ingest: shard %d: %w", s.id, err)
			s.mu.Unlock()
			select {
			case s.flushed <- struct{}{}: // wake a write waiting for memory
			default:
			}
			return
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
		s.committed = f.Through
		close(s.committedCh)
		s.committedCh = make(chan struct{})
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

// errStaleUpload means a flush's uploads are older than the max commit
// delay: committing them could make an object the orphan sweep already
// judged unreferenced live, so they are uploaded again first.
var errStaleUpload = errors.New("ingest: flush uploaded too long before its commit")

// flush writes m as one SSTable per table and token range, and commits
// them, holding them back first while their L0 is full unless held says an
// earlier attempt did. Tables truncated in m are left out. If recheck is
// set, a previous attempt failed, perhaps after its commit was recorded in
// whole or in part, or m was replayed after a crash that may have left it
// so: then flush first asks the committer, and uploads neither a recorded
// flush nor a recorded SSTable, since that would overwrite committed
// objects.
func (s *Shard) flush(ctx context.Context, m *memState, recheck, held bool) (Flush, error) {
	s.mu.Lock()
	f := Flush{Shard: s.id, From: m.from, Through: m.through}
	truncated := maps.Clone(m.truncated)
	s.mu.Unlock()
	recheck = recheck || m.replayed
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
	ranges := max(s.deps.Ranges, 1)
	// Before the first upload: the oldest object this attempt may commit
	// (the recorded ones are committed already).
	uploaded := time.Now()
	it := m.mt.Snapshot().NewIter(nil, nil)
	defer it.Close()
	for valid := it.First(); valid; {
		table := storage.TableID(binary.BigEndian.Uint32(it.Key()))
		if truncated[table] {
			_, hi := tableBounds(table, nil, nil)
			valid = hi != nil && it.SeekGE(hi)
			continue
		}
		tok, err := keys.Token(it.Key()[tablePrefixLen:])
		if err != nil {
			return Flush{}, fmt.Errorf("flush: %w", err) // the shard validated every key
		}
		r := manifest.RangeOf(tok, ranges)
		end := rangeEnd(table, r, ranges)
		t := SSTable{Table: table, Range: r, Key: s.objectKey(table, f.From, f.Through, r)}
		if recheck {
			rec, ok, err := s.deps.Committer.Recorded(ctx, t)
			if err != nil {
				return Flush{}, fmt.Errorf("check %s: %w", t.Key, err)
			}
			if ok {
				f.Tables = append(f.Tables, rec)
				valid = end != nil && it.SeekGE(end)
				continue
			}
		}
		t, next, err := s.writeTable(ctx, t, m.created, it, end)
		if err != nil {
			return Flush{}, err
		}
		f.Tables = append(f.Tables, t)
		valid = next
	}
	if err := it.Error(); err != nil {
		return Flush{}, err
	}
	// Before the commit, so that the memtable, still held, pushes back on
	// writes while L0 is too deep.
	if !held {
		if err := s.throttle(ctx, f.Tables); err != nil {
			return Flush{}, err
		}
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
	// Checked last, as the commit itself is one round of quick manifest
	// updates: an object's age at its commit stays far below -gc.orphan-age.
	if time.Since(uploaded) > s.cfg.MaxCommitDelay {
		return Flush{}, errStaleUpload
	}
	if err := s.deps.Committer.Commit(ctx, f); err != nil {
		return Flush{}, fmt.Errorf("commit flush through %v: %w", f.Through, err)
	}
	return f, nil
}

// rangeEnd returns the memtable key just past the entries of table in
// token range r of n, or nil if none is.
func rangeEnd(table storage.TableID, r, n int) []byte {
	_, last := manifest.RangeBounds(r, n)
	if last == math.MaxInt64 {
		_, hi := tableBounds(table, nil, nil)
		return hi
	}
	return keys.AppendToken(appendTableKey(nil, table, nil), last+1)
}

// objectKey names the SSTable of table and range r from the memtable
// holding the records in (from, through]. The name is fixed by what the
// SSTable holds, so a retried flush overwrites an upload abandoned before
// its commit, with the same entries, and reuses rather than overwrites a
// committed one: a flush whose commit may be recorded, wholly or in part,
// first asks the committer.
func (s *Shard) objectKey(table storage.TableID, from, through commitlog.Position, r int) string {
	return fmt.Sprintf("%s/%08x/%05d-%016x-%016x-%016x-%016x-%05d.sst", s.cfg.ObjectPrefix, uint32(table), s.id,
		from.Segment, from.Offset, through.Segment, through.Offset, r)
}

// writeTable streams t's entries, starting at it and ending before end
// (nil: the end of the memtable) or at another table's entry, into a new
// object. It returns whether it stopped at an entry.
//
// The object is closed, which sends an object smaller than the store's part
// size whole, before the next SSTable is encoded. Closing it in the
// background instead, to encode the next one meanwhile, was measured to cost
// more than it saves (BenchmarkFlushMinIO): each writer in flight holds a
// part buffer of its own, allocated and zeroed in full, so the process spent
// about 40% more CPU per flush, and on a busy machine the flush took longer.
func (s *Shard) writeTable(ctx context.Context, t SSTable, created time.Time, it kv.Iterator, end []byte) (SSTable, bool, error) {
	// The store aborts the upload if ctx ends (Close abandons flushes).
	w, err := tablestore.Create(ctx, s.deps.Store, t.Key, sstable.WriterOptions{
		WriterID:  fmt.Sprintf("ingest/shard-%d", s.id),
		CreatedAt: created,
	})
	if err != nil {
		return SSTable{}, false, err
	}
	valid := true
	for valid {
		k := it.Key()
		if storage.TableID(binary.BigEndian.Uint32(k)) != t.Table || (end != nil && bytes.Compare(k, end) >= 0) {
			break
		}
		if err := w.Add(k[tablePrefixLen:], it.Value()); err != nil {
			w.Abort()
			return SSTable{}, false, err
		}
		valid = it.Next()
	}
	if err := it.Error(); err != nil {
		w.Abort()
		return SSTable{}, false, err
	}
	// The iterator stood at an entry of t, so t is not empty.
	tbl, err := w.Close()
	if err != nil {
		return SSTable{}, false, err
	}
	props := tbl.Props
	t.Size, t.MinToken, t.MaxToken = tbl.Size, tbl.MinToken, tbl.MaxToken
	t.FirstKey, t.LastKey, t.Entries = props.FirstKey, props.LastKey, props.Entries
	t.MinTimestamp, t.MaxTimestamp = props.MinTimestamp, props.MaxTimestamp
	t.Created = created.UTC()
	s.m.flushedBytes.Add(float64(tbl.Size))
	return t, valid, nil
}
