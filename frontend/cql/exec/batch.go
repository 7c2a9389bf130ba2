package exec

import (
	"bytes"
	"context"
	"encoding/binary"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// BATCH. Every statement of a batch gets the batch's timestamp (USING
// TIMESTAMP on the batch, or the request's, or one server clock reading)
// unless it gives its own. The entries of all statements are merged by key
// (model.Merge), so the writes of one partition become one engine mutation,
// applied atomically, and the batch is one Engine.Apply.
//
// A LOGGED batch is atomic per partition only: Sediment has no batchlog yet,
// so when a batch spans partitions and the write fails part way, some
// partitions may have it and others not, exactly as with UNLOGGED. A batch
// with conditions must stay in one partition of one table; its conditions
// are checked together and its writes applied together by ApplyIf.

// batchPlan is a planned BATCH statement.
type batchPlan struct {
	typ       ast.BatchType
	ts        ast.Term
	stmts     []*modPlan
	receivers []ColumnSpec
}

var _ plan = (*batchPlan)(nil)

// planBatch plans BEGIN ... BATCH ... APPLY BATCH.
func (e *Executor) planBatch(s *Session, st *ast.Batch) (*batchPlan, error) {
	if st.Using.TTL != nil {
		return nil, invalidf("Global TTL on the BATCH statement is not supported.")
	}
	n := len(st.Binds)
	bp := &batchPlan{typ: st.Type, ts: st.Using.Timestamp, receivers: make([]ColumnSpec, n)}
	for _, inner := range st.Statements {
		p, err := e.planModification(s, inner, n)
		if err != nil {
			return nil, err
		}
		for i, r := range p.specs {
			if r.Type != nil {
				bp.receivers[i] = r
			}
		}
		bp.stmts = append(bp.stmts, p)
	}
	if bp.ts != nil {
		if b, ok := bp.ts.(*ast.Bind); ok && b.Index < n {
			name := "[timestamp]"
			if b.Name != "" {
				name = b.Name
			}
			bp.receivers[b.Index] = ColumnSpec{Name: name, Type: cqltype.BigintType}
			if len(bp.stmts) > 0 {
				bp.receivers[b.Index].Keyspace = bp.stmts[0].layout.keyspace
				bp.receivers[b.Index].Table = bp.stmts[0].layout.name()
			}
		}
	}
	if err := checkBatch(bp.typ, bp.ts != nil, bp.stmts); err != nil {
		return nil, err
	}
	if err := checkReceivers(bp.receivers); err != nil {
		return nil, err
	}
	return bp, nil
}

// checkBatch enforces Cassandra's rules on the statements of a batch.
func checkBatch(typ ast.BatchType, customTS bool, stmts []*modPlan) error {
	conditional := false
	for _, p := range stmts {
		conditional = conditional || p.conditional()
	}
	if customTS && conditional {
		return invalidf("Cannot provide custom timestamp for conditional BATCH")
	}
	if customTS && typ == ast.BatchCounter {
		return invalidf("Cannot provide custom timestamp for counter BATCH")
	}
	counters, others := false, false
	for _, p := range stmts {
		if customTS && p.counter {
			return invalidf("Cannot provide custom timestamp for a BATCH containing counters")
		}
		if customTS && p.ts != nil {
			return invalidf("Timestamp must be set either on BATCH or individual statements")
		}
		if typ == ast.BatchCounter && !p.counter {
			return invalidf("Cannot include non-counter statement in a counter batch")
		}
		if typ == ast.BatchLogged && p.counter {
			return invalidf("Cannot include a counter statement in a logged batch")
		}
		counters = counters || p.counter
		others = others || !p.counter
	}
	if counters && others {
		return invalidf("Counter and non-counter mutations cannot exist in the same batch")
	}
	if conditional {
		for _, p := range stmts {
			if p.layout.id != stmts[0].layout.id {
				return invalidf("Batch with conditions cannot span multiple tables")
			}
		}
	}
	return nil
}

func (bp *batchPlan) binds() []ColumnSpec { return bp.receivers }

func (bp *batchPlan) result() []ColumnSpec { return nil }

// execute runs a BATCH statement: its statements share the bound values.
func (bp *batchPlan) execute(ctx context.Context, x *execCtx) (*Result, error) {
	if bp.ts != nil {
		v, unset, err := x.writeEval()(bp.ts, cqltype.BigintType, "[timestamp]")
		if err != nil {
			return nil, err
		}
		switch {
		case unset:
		case v == nil:
			return nil, invalidf("Invalid null value of timestamp")
		case len(v) != 8:
			return nil, invalidf("Invalid timestamp value: expected 8 bytes, got %d", len(v))
		default:
			cx := *x
			cx.timestamp = int64(binary.BigEndian.Uint64(v))
			x = &cx
		}
	}
	items := make([]batchItem, len(bp.stmts))
	for i, p := range bp.stmts {
		items[i] = batchItem{p: p, x: x}
	}
	return runBatch(ctx, x, bp.typ, items)
}

// executeBatch runs a BATCH message: each child has its own values.
func (e *Executor) executeBatch(ctx context.Context, s *Session, typ ast.BatchType, children []batchChild, p *Params) (*Result, error) {
	x := e.newExecCtx(s, p, nil, nil)
	items := make([]batchItem, len(children))
	stmts := make([]*modPlan, len(children))
	for i, c := range children {
		mp, ok := c.plan.(*modPlan)
		if !ok {
			return nil, invalidf("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
		}
		cx := *x
		cx.values, cx.unset = c.values, c.unset
		items[i], stmts[i] = batchItem{p: mp, x: &cx}, mp
	}
	if err := checkBatch(typ, false, stmts); err != nil {
		return nil, err
	}
	return runBatch(ctx, x, typ, items)
}

// batchItem is one statement of a batch with its execution context.
type batchItem struct {
	p *modPlan
	x *execCtx
}

// runBatch runs the statements of a batch together.
func runBatch(ctx context.Context, x *execCtx, typ ast.BatchType, items []batchItem) (*Result, error) {
	for _, it := range items {
		if it.p.conditional() {
			return runConditionalBatch(ctx, x, items)
		}
	}
	ws := newWriteSet()
	cs := newCounterSet()
	stats := newBatchStats()
	for _, it := range items {
		eval, err := it.p.eval(it.x)
		if err != nil {
			return nil, err
		}
		if it.p.counter && it.p.kind == writeUpdate {
			if err := it.p.addCounters(eval, cs); err != nil {
				return nil, err
			}
			continue
		}
		parts, err := it.p.build(ctx, eval, writeTimes{ts: it.x.timestamp, now: it.x.nowSec}, it.x.readRow)
		if err != nil {
			return nil, err
		}
		for _, part := range parts {
			stats.addPartition(part)
			if err := ws.addPartition(part); err != nil {
				return nil, serverError(err)
			}
		}
	}
	stats.addCounters(cs)
	if err := x.e.verifyBatch(ctx, typ, stats); err != nil {
		return nil, err
	}
	if !ws.empty() {
		wt := wire.WriteBatch
		switch typ {
		case ast.BatchUnlogged:
			wt = wire.WriteUnloggedBatch
		case ast.BatchCounter:
			wt = wire.WriteCounter
		}
		if err := x.e.eng.Apply(ctx, ws.mutations()...); err != nil {
			return nil, writeError(err, wt)
		}
	}
	if err := x.applyCounters(ctx, cs); err != nil {
		return nil, err
	}
	return voidResult, nil
}

// runConditionalBatch runs a batch with conditions: every statement on one
// partition, all conditions checked and all writes applied in one ApplyIf.
func runConditionalBatch(ctx context.Context, x *execCtx, items []batchItem) (*Result, error) {
	var req *casRequest
	ws := newWriteSet()
	for _, it := range items {
		for _, kr := range it.p.pk {
			if kr.isIn() {
				return nil, invalidf("Batch with conditions cannot span multiple partitions (you cannot use IN on the partition key)")
			}
		}
		for _, kr := range it.p.ck {
			if kr.isIn() {
				what := "updates"
				if it.p.kind == writeDelete {
					what = "deletions"
				}
				return nil, invalidf("IN on the clustering key columns is not supported with conditional %s", what)
			}
		}
		eval, err := it.p.eval(it.x)
		if err != nil {
			return nil, err
		}
		parts, err := it.p.build(ctx, eval, writeTimes{ts: it.x.timestamp, now: it.x.nowSec}, it.x.readRow)
		if err != nil {
			return nil, err
		}
		part := parts[0]
		if req == nil {
			req = &casRequest{layout: it.p.layout, pk: part.pk, batch: true}
		} else if !bytes.Equal(part.pk, req.pk) {
			return nil, invalidf("Batch with conditions cannot span multiple partitions")
		}
		if it.p.conditional() {
			if err := it.p.casRows(eval, req, part); err != nil {
				return nil, err
			}
		}
		if err := ws.addPartition(part); err != nil {
			return nil, serverError(err)
		}
	}
	return x.applyIf(ctx, req, ws)
}
