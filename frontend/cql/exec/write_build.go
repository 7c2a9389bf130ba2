package exec

import (
	"bytes"
	"slices"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/internal/model"
)

// writeTimes are the times of one statement's writes.
type writeTimes struct {
	ts  int64 // write timestamp, µs
	ttl int32 // seconds; 0 writes cells that never expire
	now int64 // server clock, seconds: tombstones' local deletion time, the base of expiry
}

// cell returns a live cell of column col (path for collection elements).
func (w writeTimes) cell(col uint32, path, v []byte) model.Cell {
	c := model.Cell{Column: col, Path: path, Timestamp: w.ts, Value: v}
	if w.ttl > 0 {
		c.TTL, c.LocalDeletionTime = w.ttl, w.now+int64(w.ttl)
	}
	return c
}

// tombstone returns a tombstone of column col (path for an element).
func (w writeTimes) tombstone(col uint32, path []byte) model.Cell {
	return model.Cell{Column: col, Path: path, Timestamp: w.ts, LocalDeletionTime: w.now, Tombstone: true}
}

// deletion is a deletion at the statement's timestamp.
func (w writeTimes) deletion() model.Deletion {
	return model.Deletion{MarkedForDeleteAt: w.ts, LocalDeletionTime: w.now}
}

// overwrite is the deletion that precedes a whole non-frozen collection or
// user type written at w.ts: one µs earlier, so the new elements survive it
// (Cassandra's setComplexDeletionTimeForOverwrite).
func (w writeTimes) overwrite() model.Deletion {
	return model.Deletion{MarkedForDeleteAt: w.ts - 1, LocalDeletionTime: w.now}
}

// liveness is the row marker an INSERT writes.
func (w writeTimes) liveness() model.Liveness {
	l := model.Liveness{Present: true, Timestamp: w.ts}
	if w.ttl > 0 {
		l.TTL, l.Expires = w.ttl, w.now+int64(w.ttl)
	}
	return l
}

// partitionWrite is what one statement writes to one partition: its header
// (partition deletion, range tombstones, static row) and its rows.
type partitionWrite struct {
	layout *tableLayout
	tok    int64
	pk     []byte
	header model.Header
	rows   []*rowWrite
}

// rowWrite is what a statement writes to one row.
type rowWrite struct {
	clustering [][]byte
	key        []byte
	row        model.Row
}

// row returns the write of the row with the given clustering, adding it.
func (p *partitionWrite) row(clustering [][]byte) (*rowWrite, error) {
	key, err := p.layout.rowKey(p.tok, p.pk, clustering)
	if err != nil {
		return nil, err
	}
	for _, r := range p.rows {
		if bytes.Equal(r.key, key) {
			return r, nil
		}
	}
	r := &rowWrite{clustering: clustering, key: key}
	p.rows = append(p.rows, r)
	return r, nil
}

// writeSet gathers the entries of a statement or a batch, merging the values
// written to one key with model.Merge, so that writes to one row in a batch
// reconcile as Cassandra reconciles them (the newest wins; on a tie, a
// tombstone, then the greater value) and each partition's entries end up in
// one engine mutation, applied atomically.
type writeSet struct {
	tables map[uuid.UUID]map[string][]byte
	order  []uuid.UUID
}

func newWriteSet() *writeSet { return &writeSet{tables: map[uuid.UUID]map[string][]byte{}} }

// add merges value into the entry at key of table.
func (s *writeSet) add(table uuid.UUID, key, value []byte) error {
	t := s.tables[table]
	if t == nil {
		t = map[string][]byte{}
		s.tables[table] = t
		s.order = append(s.order, table)
	}
	if old, ok := t[string(key)]; ok {
		merged, err := model.Merge(nil, old, value)
		if err != nil {
			return err
		}
		value = merged
	}
	t[string(key)] = value
	return nil
}

// addPartition adds what p writes.
func (s *writeSet) addPartition(p *partitionWrite) error {
	if !p.header.IsEmpty() {
		if err := s.add(p.layout.id, p.layout.headerKey(p.tok, p.pk), model.AppendHeader(nil, &p.header)); err != nil {
			return err
		}
	}
	for _, r := range p.rows {
		if r.row.IsEmpty() {
			continue
		}
		if err := s.add(p.layout.id, r.key, model.AppendRow(nil, &r.row)); err != nil {
			return err
		}
	}
	return nil
}

// empty reports whether the set writes nothing.
func (s *writeSet) empty() bool { return len(s.order) == 0 }

// mutations returns one mutation per table, its entries in key order.
func (s *writeSet) mutations() []*engine.Mutation {
	ms := make([]*engine.Mutation, 0, len(s.order))
	for _, id := range s.order {
		t := s.tables[id]
		m := &engine.Mutation{Table: id, Entries: make([]engine.Entry, 0, len(t))}
		for k, v := range t {
			m.Entries = append(m.Entries, engine.Entry{Key: []byte(k), Value: v})
		}
		slices.SortFunc(m.Entries, func(a, b engine.Entry) int { return bytes.Compare(a.Key, b.Key) })
		ms = append(ms, m)
	}
	return ms
}
