package engine

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/tracing"
)

// Traced records each call of e in the trace of a traced request (package
// tracing); an untraced request goes straight through.
func Traced(e Engine) Engine { return traced{e} }

type traced struct{ Engine }

var _ Engine = traced{}

func (t traced) Apply(ctx context.Context, ms ...*Mutation) error {
	tr := tracing.From(ctx)
	if tr == nil {
		return t.Engine.Apply(ctx, ms...)
	}
	n := 0
	for _, m := range ms {
		n += len(m.Entries)
	}
	tr.Eventf("engine", "Applying %d mutations (%d entries) to the ingest nodes", len(ms), n)
	start := time.Now()
	err := t.Engine.Apply(ctx, ms...)
	tr.Eventf("engine", "Applied in %d µs: %s", time.Since(start).Microseconds(), outcome(err))
	return err
}

func (t traced) ApplyIf(ctx context.Context, m *Mutation, now int64, cond Condition) (bool, error) {
	tr := tracing.From(ctx)
	if tr == nil {
		return t.Engine.ApplyIf(ctx, m, now, cond)
	}
	tr.Eventf("engine", "Conditional write of %d entries: reading the partition and checking the conditions", len(m.Entries))
	ok, err := t.Engine.ApplyIf(ctx, m, now, cond)
	tr.Eventf("engine", "Conditional write applied: %t, %s", ok, outcome(err))
	return ok, err
}

func (t traced) Read(ctx context.Context, s Slice) (*Partition, error) {
	tr := tracing.From(ctx)
	if tr == nil {
		return t.Engine.Read(ctx, s)
	}
	tr.Eventf("engine", "Reading a partition of table %s (memtable slice and SSTables merged)", s.Table)
	start := time.Now()
	p, err := t.Engine.Read(ctx, s)
	rows := 0
	if p != nil {
		rows = len(p.Rows)
	}
	tr.Eventf("engine", "Read %d rows in %d µs: %s", rows, time.Since(start).Microseconds(), outcome(err))
	return p, err
}

func (t traced) Scan(ctx context.Context, s Scan) (*Page, error) {
	tr := tracing.From(ctx)
	if tr == nil {
		return t.Engine.Scan(ctx, s)
	}
	tr.Eventf("engine", "Scanning tokens %d to %d of table %s", s.First, s.Last, s.Table)
	start := time.Now()
	p, err := t.Engine.Scan(ctx, s)
	parts := 0
	if p != nil {
		parts = len(p.Partitions)
	}
	tr.Eventf("engine", "Scanned %d partitions in %d µs: %s", parts, time.Since(start).Microseconds(), outcome(err))
	return p, err
}

func (t traced) Truncate(ctx context.Context, table uuid.UUID) error {
	tr := tracing.From(ctx)
	if tr == nil {
		return t.Engine.Truncate(ctx, table)
	}
	tr.Eventf("engine", "Truncating table %s", table)
	err := t.Engine.Truncate(ctx, table)
	tr.Eventf("engine", "Truncated: %s", outcome(err))
	return err
}

func outcome(err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return "done"
}
