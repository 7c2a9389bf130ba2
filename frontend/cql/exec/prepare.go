package exec

import (
	"container/list"
	"context"
	"crypto/md5"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/parse"
	"github.com/sedimentdb/sediment/frontend/tracing"
	"github.com/sedimentdb/sediment/frontend/wire"
)

// Prepared is the answer to PREPARE: the statement's id and its metadata.
type Prepared struct {
	ID []byte
	// Binds are the bound variables' receivers, in marker order.
	Binds []ColumnSpec
	// PKIndexes are, for each partition key column in key order, the
	// index of the bind marker that sets it; nil unless every partition
	// key column has one (token-aware drivers route with them).
	PKIndexes []uint16
	// Columns are the result columns, nil for statements without rows.
	Columns []ColumnSpec
}

// prepared is a cached prepared statement and its current plan.
type prepared struct {
	id       []byte
	text     string
	keyspace string // the keyspace names resolve in, fixed at PREPARE
	stmt     ast.Statement

	mu      sync.Mutex
	plan    plan
	version uuid.UUID // the schema version plan was made against
}

// preparedCache holds prepared statements by id, least recently used
// first out.
type preparedCache struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*list.Element // of *prepared
	order *list.List
}

func newPreparedCache(max int) *preparedCache {
	return &preparedCache{max: max, byID: map[string]*list.Element{}, order: list.New()}
}

func (c *preparedCache) get(id []byte) *prepared {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byID[string(id)]
	if el == nil {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*prepared)
}

// put adds p unless its id is cached, and returns the cached one.
func (c *preparedCache) put(p *prepared) *prepared {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byID[string(p.id)]; el != nil {
		c.order.MoveToFront(el)
		return el.Value.(*prepared)
	}
	c.byID[string(p.id)] = c.order.PushFront(p)
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byID, string(old.Value.(*prepared).id))
	}
	return p
}

// remove forgets the statement with the given id.
func (c *preparedCache) remove(id []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byID[string(id)]; el != nil {
		c.order.Remove(el)
		delete(c.byID, string(id))
	}
}

func (c *preparedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// statementID is a prepared statement's id: the MD5 of the keyspace and the
// query text, as Cassandra computes it, so that every frontend gives one
// statement the same id and a driver can EXECUTE it on any of them.
func statementID(keyspace, text string) []byte {
	sum := md5.Sum([]byte(keyspace + text))
	return sum[:]
}

// parseStatement parses one statement, mapping syntax errors, and the
// parser's refusals that Cassandra's grammar actions throw as
// InvalidRequestException, to their codes.
func (e *Executor) parseStatement(text string) (ast.Statement, error) {
	if limit := e.cfg.Guardrails.MaxQueryTextSize; limit > 0 && len(text) > limit {
		// Refused before the parser allocates tokens for it.
		return nil, invalidf("Query text of %d bytes exceeds the maximum of %d bytes", len(text), limit)
	}
	st, err := parse.Statement(text)
	if err != nil {
		var pe *parse.Error
		var ie *parse.InvalidError
		switch {
		case errors.As(err, &pe):
			return nil, &Error{Code: wire.CodeSyntax, Message: pe.Error(), Cause: err}
		case errors.As(err, &ie):
			return nil, &Error{Code: wire.CodeInvalid, Message: ie.Error(), Cause: err}
		}
		return nil, syntaxf("%v", err)
	}
	return st, nil
}

// sessionFor returns the session a statement is planned in: s, or a copy
// using the request's keyspace.
func sessionFor(s *Session, keyspace string) *Session {
	if keyspace == "" {
		return s
	}
	return sessionIn(keyspace)
}

// Query parses, plans and runs one statement (the QUERY message).
func (e *Executor) Query(ctx context.Context, s *Session, text string, p *Params) (*Result, error) {
	res, err := e.query(ctx, s, text, p)
	return res, e.failed(err)
}

func (e *Executor) query(ctx context.Context, s *Session, text string, p *Params) (*Result, error) {
	tr := tracing.From(ctx)
	if tr != nil {
		tr.SetRequest("Execute CQL3 query", traceParams(text, p))
		tr.Eventf("parse", "Parsing %s", text)
	}
	st, err := e.parseStatement(text)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		tr.Eventf("plan", "Preparing statement")
	}
	ps := sessionFor(s, p.Keyspace)
	pl, err := e.plan(ps, st)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		tr.Eventf("execute", "Executing the statement")
	}
	return e.runAs(ctx, s, ps.Keyspace(), st, pl, p)
}

// traceParams are the parameters a traced request's session row shows, as
// Cassandra's names them.
func traceParams(query string, p *Params) map[string]string {
	m := map[string]string{"query": query}
	if p != nil {
		m["consistency_level"] = consistencyName(p.Consistency)
		if p.PageSize > 0 {
			m["page_size"] = strconv.Itoa(p.PageSize)
		}
	}
	return m
}

// consistencyName is a consistency level's name, as the protocol numbers
// them.
func consistencyName(c uint16) string {
	names := []string{"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "SERIAL", "LOCAL_SERIAL", "LOCAL_ONE"}
	if int(c) < len(names) {
		return names[c]
	}
	return strconv.Itoa(int(c))
}

// run binds a request's values to a plan and executes it.
func (e *Executor) run(ctx context.Context, s *Session, pl plan, p *Params) (*Result, error) {
	vals, unset, err := bindValues(pl.binds(), p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.cfg.Timeouts.withTimeout(ctx, pl)
	defer cancel()
	tp, timed := pl.(tablePlan)
	if !timed || e.tableLatency == nil {
		return pl.execute(ctx, e.newExecCtx(s, p, vals, unset))
	}
	start := time.Now()
	res, err := pl.execute(ctx, e.newExecCtx(s, p, vals, unset))
	ks, table, op := tp.tableOp()
	e.tableLatency.WithLabelValues(ks, table, op).Observe(time.Since(start).Seconds())
	return res, err
}

// failed maps an error for the client, logging internal failures (the
// server counts errors by code).
func (e *Executor) failed(err error) error {
	if err == nil {
		return nil
	}
	ce := toError(err)
	if ce.Code == wire.CodeServer {
		e.log.Error("statement failed", "err", err)
	}
	return ce
}

// Prepare parses and plans a statement and caches it (the PREPARE message).
// keyspace is the request's keyspace (protocol v5), empty for the
// session's.
func (e *Executor) Prepare(ctx context.Context, s *Session, text, keyspace string) (*Prepared, error) {
	if tr := tracing.From(ctx); tr != nil {
		tr.SetRequest("Preparing CQL3 query", map[string]string{"query": text})
		tr.Eventf("parse", "Preparing %s", text)
	}
	res, err := e.prepare(s, text, keyspace)
	return res, e.failed(err)
}

func (e *Executor) prepare(s *Session, text, keyspace string) (*Prepared, error) {
	if keyspace == "" {
		keyspace = s.Keyspace()
	}
	id := statementID(keyspace, text)
	var (
		p   *prepared
		pl  plan
		err error
	)
	// A cached statement whose columns changed is dropped (planOf): then
	// it is prepared afresh.
	for range 2 {
		if p = e.prepared.get(id); p == nil {
			st, err := e.parseStatement(text)
			if err != nil {
				return nil, err
			}
			p = e.prepared.put(&prepared{id: id, text: text, keyspace: keyspace, stmt: st})
		}
		if pl, err = e.planOf(p); err == nil || toError(err).Code != wire.CodeUnprepared {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	binds := pl.binds()
	return &Prepared{ID: id, Binds: binds, PKIndexes: e.pkIndexes(keyspace, p.stmt), Columns: pl.result()}, nil
}

// planOf returns p's plan for the current schema, planning it again when
// the schema changed since: the statement may now mean something else, or
// nothing (then its planning error is the answer).
func (e *Executor) planOf(p *prepared) (plan, error) {
	version := e.view.SchemaVersion()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plan != nil && p.version == version {
		return p.plan, nil
	}
	pl, err := e.plan(sessionIn(p.keyspace), p.stmt)
	if err != nil {
		return nil, err
	}
	if p.plan != nil && !sameShape(p.plan, pl) {
		// Drivers keep the columns PREPARE announced and skip result
		// metadata on EXECUTE: a statement whose columns changed must be
		// prepared again, as Cassandra drops prepared statements when a
		// table changes.
		e.prepared.remove(p.id)
		return nil, unprepared(p.id)
	}
	p.plan, p.version = pl, version
	return pl, nil
}

// sameShape reports whether two plans have the same bind and result
// columns.
func sameShape(a, b plan) bool {
	return sameColumns(a.binds(), b.binds()) && sameColumns(a.result(), b.result())
}

// sameColumns reports whether two column lists have the same names,
// tables and types: the same result metadata id, in Cassandra's terms.
func sameColumns(x, y []ColumnSpec) bool {
	return slices.EqualFunc(x, y, func(c, d ColumnSpec) bool {
		return c.Keyspace == d.Keyspace && c.Table == d.Table && c.Name == d.Name && c.Type.Equal(d.Type)
	})
}

// pkIndexes returns, for each partition key column of the statement's
// table, the marker that sets it, or nil if some column has none or a batch
// spans tables. As Cassandra's VariableSpecifications, a marker sets a
// column when the column itself is its receiver (an INSERT value, WHERE
// c = ?, c IN (?, ?), a slice bound), whatever its name; when several do,
// the last one counts.
func (e *Executor) pkIndexes(keyspace string, st ast.Statement) []uint16 {
	var (
		table   ast.TableName
		targets []markerTarget
	)
	if b, ok := st.(*ast.Batch); ok {
		for i, c := range b.Statements {
			tn, ts := markerTargets(c)
			if tn.Keyspace == "" {
				tn.Keyspace = keyspace
			}
			if i > 0 && tn != table {
				return nil
			}
			table, targets = tn, append(targets, ts...)
		}
	} else {
		table, targets = markerTargets(st)
		if table.Keyspace == "" {
			table.Keyspace = keyspace
		}
	}
	if len(targets) == 0 {
		return nil
	}
	ks := e.view.Keyspace(table.Keyspace)
	if ks == nil {
		return nil
	}
	t := ks.Tables[table.Name]
	if t == nil {
		return nil
	}
	l, err := e.layoutOf(ks, t)
	if err != nil {
		return nil
	}
	idx := make([]uint16, len(l.partition))
	set := make([]bool, len(l.partition))
	for _, m := range targets {
		if c := l.column(m.column); c != nil && c.kind == kindPartition {
			idx[c.pos], set[c.pos] = uint16(m.index), true
		}
	}
	if slices.Contains(set, false) {
		return nil
	}
	return idx
}

// markerTarget is a marker whose receiver is a column itself.
type markerTarget struct {
	index  int
	column string
}

// markerTargets returns the table of a DML or SELECT statement and its
// markers that stand for a whole column's value: INSERT values and the
// terms of single-column WHERE relations compared with the column (not
// IN ?, whose receiver is in(c), nor token(...) or map entries).
func markerTargets(st ast.Statement) (ast.TableName, []markerTarget) {
	var out []markerTarget
	add := func(col string, t ast.Term) {
		if b, ok := t.(*ast.Bind); ok {
			out = append(out, markerTarget{index: b.Index, column: col})
		}
	}
	where := func(rels []ast.Relation) {
		for _, r := range rels {
			if len(r.Columns) != 1 || r.Token || r.Multi || r.MapKey != nil {
				continue
			}
			switch r.Op {
			case ast.OpEq, ast.OpLt, ast.OpLte, ast.OpGt, ast.OpGte, ast.OpNe:
				add(r.Columns[0], r.Value)
			case ast.OpIn:
				if tup, ok := r.Value.(*ast.Tuple); ok {
					for _, v := range tup.Elems {
						add(r.Columns[0], v)
					}
				}
			}
		}
	}
	switch st := st.(type) {
	case *ast.Insert:
		for i, c := range st.Columns {
			if i < len(st.Values) {
				add(c, st.Values[i])
			}
		}
		return st.Table, out
	case *ast.Update:
		where(st.Where)
		return st.Table, out
	case *ast.Delete:
		where(st.Where)
		return st.Table, out
	case *ast.Select:
		where(st.Where)
		return st.Table, out
	}
	return ast.TableName{}, nil
}

// Execute runs a prepared statement (the EXECUTE message). An unknown id is
// an Unprepared error, on which drivers prepare the statement again.
func (e *Executor) Execute(ctx context.Context, s *Session, id []byte, p *Params) (*Result, error) {
	res, err := e.execute(ctx, s, id, p)
	return res, e.failed(err)
}

func (e *Executor) execute(ctx context.Context, s *Session, id []byte, p *Params) (*Result, error) {
	ps := e.prepared.get(id)
	if ps == nil {
		return nil, unprepared(id)
	}
	if tr := tracing.From(ctx); tr != nil {
		tr.SetRequest("Execute CQL3 prepared query", traceParams(ps.text, p))
		tr.Eventf("execute", "Executing the prepared statement %s", ps.text)
	}
	pl, err := e.planOf(ps)
	if err != nil {
		return nil, err
	}
	res, err := e.runAs(ctx, s, ps.keyspace, ps.stmt, pl, p)
	if err != nil || res.Kind != ResultRows || sameColumns(res.Columns, pl.result()) {
		return res, err
	}
	changed := *res
	changed.MetadataChanged = true
	return &changed, nil
}

// BatchRequest is a BATCH message: statements given as text or prepared
// ids, each with its own values, run as one batch.
type BatchRequest struct {
	Type     ast.BatchType
	Children []BatchChild
	// Timestamp is the client's default timestamp (µs); 0 for the
	// server's clock.
	Timestamp                      int64
	Consistency, SerialConsistency uint16
	// Keyspace is the keyspace the batch's statements given as text run
	// in (protocol v5); empty for the session's. Prepared statements
	// keep the keyspace they were prepared in.
	Keyspace string
	// NowInSeconds as in Params.
	NowInSeconds    int64
	HasNowInSeconds bool
}

// BatchChild is one statement of a BatchRequest: prepared when ID is set,
// else the text Query.
type BatchChild struct {
	Query  string
	ID     []byte
	Values [][]byte
	Unset  []bool
}

// batchChild is one planned and bound statement of a BATCH message.
type batchChild struct {
	plan   plan
	values [][]byte
	unset  []bool
}

// Batch runs a BATCH message: every child is planned (from the prepared
// cache or its text) and bound, then the batch plan runs them together
// (executeBatch, batch.go).
func (e *Executor) Batch(ctx context.Context, s *Session, b *BatchRequest) (*Result, error) {
	res, err := e.batch(ctx, s, b)
	return res, e.failed(err)
}

func (e *Executor) batch(ctx context.Context, s *Session, b *BatchRequest) (*Result, error) {
	if tr := tracing.From(ctx); tr != nil {
		tr.SetRequest("Execute batch of CQL3 queries", map[string]string{"consistency_level": consistencyName(b.Consistency)})
		tr.Eventf("execute", "Executing a batch of %d statements", len(b.Children))
	}
	children := make([]batchChild, 0, len(b.Children))
	for _, c := range b.Children {
		var pl plan
		if c.ID != nil {
			ps := e.prepared.get(c.ID)
			if ps == nil {
				return nil, unprepared(c.ID)
			}
			var err error
			if pl, err = e.planOf(ps); err != nil {
				return nil, err
			}
			if err := e.authorize(s, ps.keyspace, ps.stmt); err != nil {
				return nil, err
			}
		} else {
			st, err := e.parseStatement(c.Query)
			if err != nil {
				return nil, err
			}
			switch st.(type) {
			case *ast.Insert, *ast.Update, *ast.Delete:
			default:
				return nil, invalidf("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
			}
			ps := sessionFor(s, b.Keyspace)
			if pl, err = e.plan(ps, st); err != nil {
				return nil, err
			}
			if err := e.authorize(s, ps.Keyspace(), st); err != nil {
				return nil, err
			}
		}
		vals, unset, err := bindValues(pl.binds(), &Params{Values: c.Values, Unset: c.Unset})
		if err != nil {
			return nil, err
		}
		children = append(children, batchChild{plan: pl, values: vals, unset: unset})
	}
	p := &Params{Timestamp: b.Timestamp, Consistency: b.Consistency, SerialConsistency: b.SerialConsistency,
		NowInSeconds: b.NowInSeconds, HasNowInSeconds: b.HasNowInSeconds}
	ctx, cancel := e.cfg.Timeouts.withTimeout(ctx, &batchPlan{})
	defer cancel()
	return e.executeBatch(ctx, s, b.Type, children, p)
}
