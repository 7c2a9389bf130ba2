package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
)

// Counters. A counter column holds a bigint in one regular cell. An increment
// is a read-modify-write made atomic by the owning shard: read the current
// cells, write current+delta with a timestamp newer than theirs, on the
// condition (engine.Engine.ApplyIf) that the cells are still the ones read;
// if another write came first, read again and retry, bounded by the
// statement's context.
//
// So counter updates are linearizable per partition, which Cassandra's are
// not (its counter shards merge concurrent increments but a read may see them
// in any order). Like Cassandra's, they are not idempotent: an increment whose
// answer was lost (a timeout) may or may not have been applied, and retrying
// it may count it twice.

// counterLocks serializes the increments of each partition within the
// process. It is shared by every Executor of the process, as the shards the
// increments contend on are.
var counterLocks = &keyedLocks{locks: map[string]*keyedLock{}}

// keyedLocks is a set of mutexes by key, created on first use and dropped
// when no one holds or waits for them.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	ch   chan struct{} // holds a token while locked
	refs int           // holders and waiters
}

// lock locks key, or returns ctx's error if it ends first.
func (k *keyedLocks) lock(ctx context.Context, key string) error {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{ch: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		k.release(key, l)
		return ctx.Err()
	}
}

// unlock unlocks key, which the caller locked.
func (k *keyedLocks) unlock(key string) {
	k.mu.Lock()
	l := k.locks[key]
	k.mu.Unlock()
	<-l.ch
	k.release(key, l)
}

func (k *keyedLocks) release(key string, l *keyedLock) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(k.locks, key)
	}
}

// counterKey names one counter cell of a partition: its row key (empty for
// the static row) and its column.
type counterKey struct {
	row string
	col uint32
}

// counterPartition is the increments of one partition.
type counterPartition struct {
	layout *tableLayout
	tok    int64
	pk     []byte
	deltas map[counterKey]int64
	order  []counterKey
	// first and last are the clusterings of the lowest and highest rows
	// incremented, which bound the read; nil if only static counters are.
	first, last       [][]byte
	firstKey, lastKey []byte
}

// counterSet gathers the increments of a statement or a COUNTER batch by
// partition, adding those of the same cell.
type counterSet struct {
	parts map[string]*counterPartition
	order []*counterPartition
}

func newCounterSet() *counterSet { return &counterSet{parts: map[string]*counterPartition{}} }

// add adds delta to the counter cell (rowKey, col) of partition (tok, pk):
// of the row with clustering ck, or the static row if rowKey is nil.
func (s *counterSet) add(l *tableLayout, tok int64, pk, rowKey []byte, ck [][]byte, col uint32, delta int64) {
	id := string(l.id[:]) + string(l.prefix(tok, pk))
	cp := s.parts[id]
	if cp == nil {
		cp = &counterPartition{layout: l, tok: tok, pk: pk, deltas: map[counterKey]int64{}}
		s.parts[id] = cp
		s.order = append(s.order, cp)
	}
	if rowKey != nil {
		if cp.firstKey == nil || bytes.Compare(rowKey, cp.firstKey) < 0 {
			cp.first, cp.firstKey = ck, rowKey
		}
		if cp.lastKey == nil || bytes.Compare(rowKey, cp.lastKey) > 0 {
			cp.last, cp.lastKey = ck, rowKey
		}
	}
	k := counterKey{row: string(rowKey), col: col}
	if _, ok := cp.deltas[k]; !ok {
		cp.order = append(cp.order, k)
	}
	cp.deltas[k] += delta
}

// addCounters evaluates a counter UPDATE's increments into s.
func (p *modPlan) addCounters(eval termEval, s *counterSet) error {
	parts, err := p.partitions(eval)
	if err != nil {
		return err
	}
	cks := [][][]byte{nil}
	if !p.static {
		if cks, err = p.clusterings(eval); err != nil {
			return err
		}
	}
	deltas := make([]int64, len(p.ops))
	set := make([]bool, len(p.ops))
	for i, o := range p.ops {
		v, unset, err := eval(o.value, cqltype.CounterType, o.col.name)
		if err != nil {
			return err
		}
		if unset {
			continue
		}
		if v == nil {
			return invalidf("Invalid null value for counter increment")
		}
		if len(v) != 8 {
			return invalidf("Expected 8 bytes for a counter increment, got %d", len(v))
		}
		d := int64(binary.BigEndian.Uint64(v))
		if o.negate {
			d = -d
		}
		deltas[i], set[i] = d, true
	}
	for _, part := range parts {
		for _, ck := range cks {
			var rowKey []byte
			if !p.static {
				if rowKey, err = p.layout.rowKey(part.tok, part.pk, ck); err != nil {
					return toError(err)
				}
			}
			for i, o := range p.ops {
				if !set[i] {
					continue
				}
				key := rowKey
				if o.col.kind == kindStatic {
					key = nil
				}
				s.add(p.layout, part.tok, part.pk, key, ck, o.col.id, deltas[i])
			}
		}
	}
	return nil
}

// executeCounter runs a counter UPDATE.
func (p *modPlan) executeCounter(ctx context.Context, x *execCtx, eval termEval, _ writeTimes) (*Result, error) {
	s := newCounterSet()
	if err := p.addCounters(eval, s); err != nil {
		return nil, err
	}
	if err := x.applyCounters(ctx, s); err != nil {
		return nil, err
	}
	return voidResult, nil
}

// applyCounters applies the increments of s, partition by partition.
func (x *execCtx) applyCounters(ctx context.Context, s *counterSet) error {
	for _, cp := range s.order {
		if err := x.applyCounterPartition(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// counterCell is a counter cell as read: absent, or its value and
// timestamp.
type counterCell struct {
	present bool
	value   int64
	ts      int64
}

// applyCounterPartition increments the counters of one partition with the
// read, then conditional write, loop. Increments of one partition from this
// process take turns (counterLocks), so that they do not make each other
// retry; the condition still guards against other processes.
func (x *execCtx) applyCounterPartition(ctx context.Context, cp *counterPartition) error {
	s, err := cp.slice(x.nowSec)
	if err != nil {
		return err
	}
	key := string(cp.layout.id[:]) + string(cp.pk)
	if err := counterLocks.lock(ctx, key); err != nil {
		return writeError(err, wire.WriteCounter)
	}
	defer counterLocks.unlock(key)
	for {
		p, err := x.e.eng.Read(ctx, s)
		if err != nil {
			return toError(err)
		}
		seen := make(map[counterKey]counterCell, len(cp.order))
		for _, k := range cp.order {
			seen[k] = readCounter(p, k)
		}
		ts := x.e.writeTimestamp(x.e.now())
		for _, c := range seen {
			ts = max(ts, c.ts+1)
		}
		m, err := cp.mutation(seen, writeTimes{ts: ts, now: x.nowSec})
		if err != nil {
			return serverError(err)
		}
		ok, err := x.e.eng.ApplyIf(ctx, m, x.nowSec, func(cur *engine.Partition) (bool, error) {
			for _, k := range cp.order {
				if readCounter(cur, k) != seen[k] {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return writeError(err, wire.WriteCounter)
		}
		if ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return writeError(err, wire.WriteCounter)
		}
	}
}

// slice is the read of the rows cp increments, and of the partition's
// header (with the static row), which every read returns.
func (cp *counterPartition) slice(now int64) (engine.Slice, error) {
	l := cp.layout
	s := engine.Slice{Table: l.id, Key: cp.pk, Now: now}
	if cp.firstKey == nil {
		s.Limit = 1
		return s, nil
	}
	prefix := l.prefix(cp.tok, cp.pk)
	var err error
	if s.Start, err = l.bound(prefix, cp.first, keys.Before); err != nil {
		return s, toError(err)
	}
	if s.End, err = l.bound(prefix, cp.last, keys.After); err != nil {
		return s, toError(err)
	}
	return s, nil
}

// readCounter returns counter cell k in the partition's live view.
func readCounter(p *engine.Partition, k counterKey) counterCell {
	var row *model.Row
	if k.row == "" {
		row = staticOf(p)
	} else if p != nil {
		i, ok := slices.BinarySearchFunc(p.Rows, []byte(k.row), func(r engine.Row, key []byte) int { return bytes.Compare(r.Key, key) })
		if ok {
			row = &p.Rows[i].Row
		}
	}
	for _, c := range columnCells(row, k.col) {
		if len(c.Value) == 8 {
			return counterCell{present: true, value: int64(binary.BigEndian.Uint64(c.Value)), ts: c.Timestamp}
		}
	}
	return counterCell{}
}

// mutation writes every counter of cp as its value in seen plus its delta.
func (cp *counterPartition) mutation(seen map[counterKey]counterCell, w writeTimes) (*engine.Mutation, error) {
	part := &partitionWrite{layout: cp.layout, tok: cp.tok, pk: cp.pk}
	rows := map[string]*model.Row{}
	for _, k := range cp.order {
		v := binary.BigEndian.AppendUint64(nil, uint64(seen[k].value+cp.deltas[k]))
		if k.row == "" {
			part.header.Static.Cells = append(part.header.Static.Cells, w.cell(k.col, nil, v))
			continue
		}
		r := rows[k.row]
		if r == nil {
			rw := &rowWrite{key: []byte(k.row)}
			part.rows = append(part.rows, rw)
			r = &rw.row
			rows[k.row] = r
		}
		r.Cells = append(r.Cells, w.cell(k.col, nil, v))
	}
	ws := newWriteSet()
	if err := ws.addPartition(part); err != nil {
		return nil, err
	}
	return ws.mutations()[0], nil
}
