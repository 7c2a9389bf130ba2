package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/model"
)

// Conditional writes (IF NOT EXISTS, IF EXISTS, IF c op v ...) run through
// engine.Engine.ApplyIf: the owning shard reads the partition, the
// conditions are evaluated on its live view, and the mutation is applied
// only if they hold, with no other write of the partition in between. That
// is what Cassandra's Paxos gives a single partition, in one step.
//
// The answer is Cassandra's: a row with [applied]; when not applied, the
// current values of the columns the conditions name (every column for IF
// [NOT] EXISTS) of the rows the conditions read, if those rows exist.

// condition is one planned IF condition.
type condition struct {
	col *column
	// elem is the list index or map key of c[elem], typed elemType.
	elem     ast.Term
	elemType *cqltype.Type
	// field is the user-type field of c.field; -1 for none.
	field int
	op    ast.Operator
	// values are the compared terms: one, or IN's alternatives; in is the
	// marker of IN ?.
	values    []ast.Term
	in        ast.Term
	valueType *cqltype.Type
}

// planConditions plans IF EXISTS and IF conditions of UPDATE and DELETE;
// checkConditional checks them once the clustering is checked.
func (p *modPlan) planConditions(ifExists bool, conds []ast.Condition) error {
	p.ifExists = ifExists
	for i := range conds {
		c, err := p.condition(&conds[i])
		if err != nil {
			return err
		}
		p.conds = append(p.conds, c)
	}
	return nil
}

// checkConditional enforces Cassandra's limits on conditional statements.
func (p *modPlan) checkConditional() error {
	if !p.conditional() {
		return nil
	}
	what := "updates"
	if p.kind == writeDelete {
		what = "deletions"
	}
	if p.counter {
		return invalidf("Conditional updates are not supported on counter tables")
	}
	if p.ts != nil {
		return invalidf("Cannot provide custom timestamp for conditional updates")
	}
	for _, kr := range p.pk {
		if kr.isIn() {
			return invalidf("IN on the partition key is not supported with conditional %s", what)
		}
	}
	for _, kr := range p.ck {
		if kr.isIn() {
			return invalidf("IN on the clustering key columns is not supported with conditional %s", what)
		}
	}
	if p.kind == writeDelete && (p.hasRange() || len(p.ck) < len(p.layout.clustering)) {
		// As DeleteStatement.prepareInternal: without a full primary key
		// only static columns may be deleted (a DELETE without columns
		// deletes rows) and only static columns may be conditions.
		regularOps := len(p.ops) == 0
		for _, o := range p.ops {
			regularOps = regularOps || o.col.kind == kindRegular
		}
		if regularOps {
			return invalidf("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns")
		}
		for _, c := range p.conds {
			if c.col.kind == kindRegular {
				return invalidf("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns")
			}
		}
	}
	return nil
}

// isIn reports whether the restriction came from IN.
func (kr *keyRestriction) isIn() bool { return kr.in != nil || kr.inRel }

// condition plans one IF condition.
func (p *modPlan) condition(ac *ast.Condition) (*condition, error) {
	col, err := p.column(ac.Column)
	if err != nil {
		return nil, err
	}
	if col.kind == kindPartition || col.kind == kindClustering {
		return nil, invalidf("PRIMARY KEY column '%s' cannot have IF conditions", col.name)
	}
	c := &condition{col: col, field: -1, op: ac.Op, valueType: col.typ}
	name := col.name
	t := col.typ
	switch {
	case ac.Elem != nil:
		switch t.Kind {
		case cqltype.List:
			c.elemType, c.valueType = cqltype.IntType, t.Elems[0]
			p.recv(ac.Elem, "idx("+col.name+")", cqltype.IntType)
		case cqltype.Map:
			c.elemType, c.valueType = t.Elems[0], t.Elems[1]
			p.recv(ac.Elem, "key("+col.name+")", t.Elems[0])
		default:
			return nil, invalidf("Invalid element access syntax for non-list, non-map column %s", col.name)
		}
		c.elem = ac.Elem
		name = "value(" + col.name + ")"
	case ac.Field != "":
		i, err := p.field(col, ac.Field)
		if err != nil {
			return nil, err
		}
		c.field, c.valueType = i, t.Elems[i]
		name = col.name + "." + ac.Field
	}
	switch ac.Op {
	case ast.OpEq, ast.OpNe, ast.OpLt, ast.OpLte, ast.OpGt, ast.OpGte:
		c.values = []ast.Term{ac.Value}
		p.recv(ac.Value, name, c.valueType)
	case ast.OpContains:
		if !t.IsCollection() {
			return nil, invalidf("Cannot use CONTAINS on non-collection column %s", col.name)
		}
		c.valueType = t.Elems[len(t.Elems)-1]
		c.values = []ast.Term{ac.Value}
		p.recv(ac.Value, "value("+col.name+")", c.valueType)
	case ast.OpContainsKey:
		if t.Kind != cqltype.Map {
			return nil, invalidf("Cannot use CONTAINS KEY on non-map column %s", col.name)
		}
		c.valueType = t.Elems[0]
		c.values = []ast.Term{ac.Value}
		p.recv(ac.Value, "key("+col.name+")", c.valueType)
	case ast.OpIn:
		if tup, ok := ac.Value.(*ast.Tuple); ok {
			c.values = tup.Elems
			for _, v := range tup.Elems {
				p.recv(v, name, c.valueType)
			}
		} else {
			c.in = ac.Value
			p.recv(ac.Value, "in("+name+")", cqltype.ListOf(c.valueType, false))
		}
	default:
		return nil, invalidf("Unsupported operator %s in the condition on %s", ac.Op, col.name)
	}
	return c, nil
}

// boundCondition is a condition with its terms evaluated.
type boundCondition struct {
	*condition
	elem   []byte
	values [][]byte
}

// bind evaluates the condition's terms.
func (c *condition) bind(eval termEval) (*boundCondition, error) {
	b := &boundCondition{condition: c}
	if c.elem != nil {
		recv := "key(" + c.col.name + ")"
		if c.col.typ.Kind == cqltype.List {
			recv = "idx(" + c.col.name + ")"
		}
		v, unset, err := eval(c.elem, c.elemType, recv)
		if err != nil {
			return nil, err
		}
		if unset {
			return nil, invalidf("Invalid 'unset' value in condition")
		}
		if v == nil {
			return nil, invalidf("Invalid null value for %s element access", c.col.name)
		}
		if c.col.typ.Kind == cqltype.List && len(v) != 4 {
			return nil, invalidf("Invalid list index for %s: expected 4 bytes, got %d", c.col.name, len(v))
		}
		b.elem = v
	}
	if c.in != nil {
		v, unset, err := eval(c.in, cqltype.ListOf(c.valueType, false), "in("+c.col.name+")")
		if err != nil {
			return nil, err
		}
		if unset {
			return nil, invalidf("Invalid 'unset' value in condition")
		}
		if v == nil {
			return nil, invalidf("Invalid null list in IN condition")
		}
		elems, err := splitCollection(v, false)
		if err != nil {
			return nil, err
		}
		b.values = elems
		return b, nil
	}
	for _, t := range c.values {
		v, unset, err := eval(t, c.valueType, c.col.name)
		if err != nil {
			return nil, err
		}
		if unset {
			if c.op == ast.OpIn {
				// IN's unset alternatives are left out, as Cassandra's
				// ColumnCondition filters them.
				continue
			}
			return nil, invalidf("Invalid 'unset' value in condition")
		}
		if v == nil && c.op != ast.OpEq && c.op != ast.OpNe && c.op != ast.OpIn {
			return nil, invalidf("Invalid comparison with null for operator \"%s\"", c.op)
		}
		b.values = append(b.values, v)
	}
	return b, nil
}

// current returns the value the condition compares: the column's, its
// element's or its field's in the live row r (nil: null).
func (b *boundCondition) current(r *model.Row) ([]byte, error) {
	col, t := b.col, b.col.typ
	switch {
	case b.elem != nil && t.MultiCell():
		cells := columnCells(r, col.id)
		if t.Kind == cqltype.List {
			i := int64(int32(binary.BigEndian.Uint32(b.elem)))
			if i < 0 || i >= int64(len(cells)) {
				return nil, nil
			}
			return cells[i].Value, nil
		}
		path, err := elementPath(t.Elems[0], b.elem)
		if err != nil {
			return nil, invalidf("Invalid map key for column %s: %v", col.name, err)
		}
		for _, c := range cells {
			if bytes.Equal(c.Path, path) {
				return c.Value, nil
			}
		}
		return nil, nil
	case b.elem != nil:
		v := liveValue(col, r)
		if v == nil {
			return nil, nil
		}
		elems, err := splitCollection(v, t.Kind == cqltype.Map)
		if err != nil {
			return nil, err
		}
		if t.Kind == cqltype.List {
			i := int64(int32(binary.BigEndian.Uint32(b.elem)))
			if i < 0 || i >= int64(len(elems)) {
				return nil, nil
			}
			return elems[i], nil
		}
		for i := 0; i < len(elems); i += 2 {
			if cqltype.Compare(t.Elems[0], elems[i], b.elem) == 0 {
				return elems[i+1], nil
			}
		}
		return nil, nil
	case b.field >= 0 && t.MultiCell():
		path := fieldPath(b.field)
		for _, c := range columnCells(r, col.id) {
			if bytes.Equal(c.Path, path) {
				return c.Value, nil
			}
		}
		return nil, nil
	case b.field >= 0:
		v := liveValue(col, r)
		if v == nil {
			return nil, nil
		}
		fields, err := splitUDT(t, v)
		if err != nil {
			return nil, err
		}
		return fields[b.field], nil
	}
	return liveValue(col, r), nil
}

// holds evaluates the condition on the live row r (nil if it does not
// exist), as Cassandra's ColumnCondition does: null equals only null, and
// an ordering comparison with a null current value is false.
func (b *boundCondition) holds(r *model.Row) (bool, error) {
	cur, err := b.current(r)
	if err != nil {
		return false, err
	}
	t := b.valueType
	// An empty non-frozen collection does not exist: it is null.
	isEmpty := func(v []byte) bool {
		return b.elem == nil && b.field < 0 && t.MultiCell() && t.IsCollection() && len(v) == 4 && binary.BigEndian.Uint32(v) == 0
	}
	eq := func(v []byte) bool {
		if isEmpty(v) {
			v = nil
		}
		if v == nil || cur == nil {
			return v == nil && cur == nil
		}
		return cqltype.Compare(t, cur, v) == 0
	}
	switch b.op {
	case ast.OpEq:
		return eq(b.values[0]), nil
	case ast.OpNe:
		return !eq(b.values[0]), nil
	case ast.OpIn:
		return slices.ContainsFunc(b.values, eq), nil
	}
	if cur == nil {
		return false, nil
	}
	if b.op == ast.OpContains || b.op == ast.OpContainsKey {
		return b.contains(cur)
	}
	c := cqltype.Compare(t, cur, b.values[0])
	switch b.op {
	case ast.OpLt:
		return c < 0, nil
	case ast.OpLte:
		return c <= 0, nil
	case ast.OpGt:
		return c > 0, nil
	}
	return c >= 0, nil
}

// contains evaluates CONTAINS (an element of a list or set, a value of a
// map) and CONTAINS KEY on the column's current collection.
func (b *boundCondition) contains(cur []byte) (bool, error) {
	isMap := b.col.typ.Kind == cqltype.Map
	elems, err := splitCollection(cur, isMap)
	if err != nil {
		return false, err
	}
	for i, e := range elems {
		switch {
		case !isMap:
		case b.op == ast.OpContainsKey && i%2 != 0, b.op == ast.OpContains && i%2 == 0:
			continue
		}
		if cqltype.Compare(b.valueType, e, b.values[0]) == 0 {
			return true, nil
		}
	}
	return false, nil
}

// liveValue returns the value of column col in the live row r, nil for
// null: a cell's value, or a non-frozen collection or user type joined
// from its cells.
func liveValue(col *column, r *model.Row) []byte {
	cells := columnCells(r, col.id)
	if len(cells) == 0 {
		return nil
	}
	t := col.typ
	if !t.MultiCell() {
		return cells[0].Value
	}
	switch t.Kind {
	case cqltype.UDT:
		fields := make([][]byte, len(t.Elems))
		for _, c := range cells {
			i, err := elementFromPath(cqltype.SmallintType, c.Path)
			if err != nil || len(i) != 2 {
				continue
			}
			if n := int(binary.BigEndian.Uint16(i)); n < len(fields) {
				fields[n] = c.Value
			}
		}
		return joinUDT(fields)
	case cqltype.List:
		elems := make([][]byte, len(cells))
		for i, c := range cells {
			elems[i] = c.Value
		}
		return joinCollection(elems, false)
	case cqltype.Set:
		elems := make([][]byte, 0, len(cells))
		for _, c := range cells {
			if e, err := elementFromPath(t.Elems[0], c.Path); err == nil {
				elems = append(elems, e)
			}
		}
		return joinCollection(elems, false)
	case cqltype.Map:
		elems := make([][]byte, 0, 2*len(cells))
		for _, c := range cells {
			if k, err := elementFromPath(t.Elems[0], c.Path); err == nil {
				elems = append(elems, k, c.Value)
			}
		}
		return joinCollection(elems, true)
	}
	return nil
}

// casRow is one row a conditional statement checks: its key (nil for the
// static row only) and its conditions.
type casRow struct {
	key    []byte // row key; nil for the static row only
	exists int8   // 1: IF EXISTS, -1: IF NOT EXISTS, 0: neither
	static bool   // the statement names no row, only the partition's static row
	conds  []*boundCondition
}

// casRequest is the conditions of one conditional statement or batch on
// one partition, and the columns its answer shows.
type casRequest struct {
	layout *tableLayout
	pk     []byte
	rows   []*casRow
	// wildcard: the answer shows every column (IF [NOT] EXISTS).
	wildcard bool
	// columns the answer shows after [applied] when not wildcard.
	columns []*column
	batch   bool
	// readsStatic: the request's read returns the static row, because a
	// statement is on it alone, writes a static column or has a static
	// condition (Cassandra's CQL3CasRequest.columnsToRead).
	readsStatic bool
}

// addColumns records the columns of one statement's conds for the answer,
// once each: those of regular columns in IF order, then those of static
// columns, as Cassandra's ColumnConditions.getColumns lists them.
func (r *casRequest) addColumns(conds []*condition) {
	for _, static := range []bool{false, true} {
		for _, c := range conds {
			if (c.col.kind == kindStatic) == static && !slices.Contains(r.columns, c.col) {
				r.columns = append(r.columns, c.col)
			}
		}
	}
}

// answerColumns returns the columns of a not-applied answer.
func (r *casRequest) answerColumns() []*column {
	l := r.layout
	if r.wildcard {
		return selectOrder(l)
	}
	var cols []*column
	if r.batch {
		cols = append(append(cols, l.partition...), l.clustering...)
	}
	for _, c := range r.columns {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	return cols
}

// selectOrder returns the columns of SELECT *: the partition key and
// clustering columns in key order, then static and regular columns, each
// by name, as Cassandra orders them.
func selectOrder(l *tableLayout) []*column {
	cols := append(append([]*column(nil), l.partition...), l.clustering...)
	byName := func(a, b *column) int { return strings.Compare(a.name, b.name) }
	st := slices.SortedFunc(slices.Values(l.static), byName)
	rg := slices.SortedFunc(slices.Values(l.regular), byName)
	return append(append(cols, st...), rg...)
}

// casOutcome is what evaluating a casRequest found.
type casOutcome struct {
	applied bool
	rows    [][][]byte // the answer's rows when not applied
}

// evaluate decides the request on the partition's live view and, when it
// does not apply, builds the answer's rows. Values are copied: the
// partition may alias buffers of the engine's read.
func (r *casRequest) evaluate(p *engine.Partition) (casOutcome, error) {
	applied := true
	for _, cr := range r.rows {
		row, exists := cr.find(p)
		ok := true
		switch {
		case cr.exists > 0:
			ok = exists
		case cr.exists < 0:
			ok = !exists
		}
		for _, c := range cr.conds {
			if !ok {
				break
			}
			target := row
			if c.col.kind == kindStatic {
				target = staticOf(p)
			}
			h, err := c.holds(target)
			if err != nil {
				return casOutcome{}, err
			}
			ok = h
		}
		applied = applied && ok
	}
	if applied {
		return casOutcome{applied: true}, nil
	}
	cols := r.answerColumns()
	var out casOutcome
	for _, i := range r.answerRows(p) {
		vals, err := r.answerRow(cols, p, i)
		if err != nil {
			return casOutcome{}, err
		}
		out.rows = append(out.rows, vals)
	}
	return out, nil
}

// answerRows returns the rows of p a not-applied answer shows, as indexes
// in p.Rows, -1 for the static row alone. As Cassandra's CAS read and
// SelectStatement.processPartition: the rows the conditions name that
// exist, each once, in the partition's order; with conditions on the
// static row only, the partition's first row; without rows, the static row
// alone when the request reads it and the answer shows static columns.
func (r *casRequest) answerRows(p *engine.Partition) []int {
	if p == nil {
		return nil
	}
	var idx []int
	for _, cr := range r.rows {
		if cr.static {
			continue
		}
		i, ok := slices.BinarySearchFunc(p.Rows, cr.key, func(r engine.Row, k []byte) int { return bytes.Compare(r.Key, k) })
		if ok && !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	if r.onlyStatic() && len(p.Rows) > 0 {
		idx = []int{0}
	}
	if len(idx) == 0 && p.StaticLive && r.readsStatic && slices.ContainsFunc(r.answerColumns(), func(c *column) bool { return c.kind == kindStatic }) {
		return []int{-1}
	}
	slices.Sort(idx)
	return idx
}

// onlyStatic reports whether every statement of r is on the static row
// alone.
func (r *casRequest) onlyStatic() bool {
	return !slices.ContainsFunc(r.rows, func(cr *casRow) bool { return !cr.static })
}

// answerRow builds one row of a not-applied answer from p.Rows[i], or
// from the static row alone for -1. Requests on the static row alone do
// not read regular columns (Cassandra's CQL3CasRequest.columnsToRead): the
// row they show has its clustering and null regular columns.
func (r *casRequest) answerRow(cols []*column, p *engine.Partition, i int) ([][]byte, error) {
	pkVals, err := r.layout.partitionValues(r.pk)
	if err != nil {
		return nil, serverError(err)
	}
	var (
		row        *model.Row
		clustering [][]byte
	)
	if i >= 0 {
		if !r.onlyStatic() {
			row = &p.Rows[i].Row
		}
		if clustering, err = r.layout.clusteringValues(p.Rows[i].Key); err != nil {
			return nil, serverError(err)
		}
	}
	vals := make([][]byte, len(cols))
	for j, c := range cols {
		var v []byte
		switch c.kind {
		case kindPartition:
			if c.pos < len(pkVals) {
				v = pkVals[c.pos]
			}
		case kindClustering:
			if c.pos < len(clustering) {
				v = clustering[c.pos]
			}
		case kindStatic:
			v = liveValue(c, staticOf(p))
		default:
			v = liveValue(c, row)
		}
		if v != nil {
			v = bytes.Clone(v)
		}
		vals[j] = v
	}
	return vals, nil
}

// find returns the live row cr names in p and whether it exists; for a
// statement on the static row only, whether the static row lives.
func (cr *casRow) find(p *engine.Partition) (*model.Row, bool) {
	if p == nil {
		return nil, false
	}
	if cr.static {
		return nil, p.StaticLive
	}
	i, ok := slices.BinarySearchFunc(p.Rows, cr.key, func(r engine.Row, k []byte) int { return bytes.Compare(r.Key, k) })
	if !ok {
		return nil, false
	}
	return &p.Rows[i].Row, true
}

// staticOf returns the live static row of p, nil if none.
func staticOf(p *engine.Partition) *model.Row {
	if p == nil || !p.StaticLive {
		return nil
	}
	return &p.Header.Static
}

// result turns an outcome into the statement's Rows result.
func (r *casRequest) result(o casOutcome) *Result {
	ks, table := r.layout.keyspace, r.layout.name()
	applied := ColumnSpec{Keyspace: ks, Table: table, Name: "[applied]", Type: cqltype.BooleanType}
	if o.applied {
		return &Result{Kind: ResultRows, Columns: []ColumnSpec{applied}, Rows: [][][]byte{{{1}}}}
	}
	if len(o.rows) == 0 {
		return &Result{Kind: ResultRows, Columns: []ColumnSpec{applied}, Rows: [][][]byte{{{0}}}}
	}
	cols := r.answerColumns()
	specs := make([]ColumnSpec, 0, 1+len(cols))
	specs = append(specs, applied)
	for _, c := range cols {
		specs = append(specs, ColumnSpec{Keyspace: ks, Table: table, Name: c.name, Type: c.typ})
	}
	rows := make([][][]byte, len(o.rows))
	for i, vals := range o.rows {
		rows[i] = append([][]byte{{0}}, vals...)
	}
	return &Result{Kind: ResultRows, Columns: specs, Rows: rows}
}

// casRows evaluates a conditional statement's conditions and adds its rows
// to req; part is what the statement writes to req's partition.
func (p *modPlan) casRows(eval termEval, req *casRequest, part *partitionWrite) error {
	cks, err := p.clusteringsFor(eval)
	if err != nil {
		return err
	}
	cr := &casRow{static: p.static || len(cks[0]) < len(p.layout.clustering)}
	isStatic := func(c *column) bool { return c.kind == kindStatic }
	req.readsStatic = req.readsStatic || cr.static ||
		slices.ContainsFunc(p.ops, func(o *operation) bool { return isStatic(o.col) }) ||
		slices.ContainsFunc(p.conds, func(c *condition) bool { return isStatic(c.col) })
	if !cr.static {
		if cr.key, err = p.layout.rowKey(part.tok, part.pk, cks[0]); err != nil {
			return toError(err)
		}
	}
	switch {
	case p.ifExists:
		cr.exists = 1
		req.wildcard = true
	case p.ifNotExists:
		cr.exists = -1
		req.wildcard = true
	default:
		req.addColumns(p.conds)
	}
	for _, c := range p.conds {
		b, err := c.bind(eval)
		if err != nil {
			return err
		}
		cr.conds = append(cr.conds, b)
	}
	req.rows = append(req.rows, cr)
	return nil
}

// clusteringsFor evaluates the statement's clustering, nil for none.
func (p *modPlan) clusteringsFor(eval termEval) ([][][]byte, error) {
	if p.static {
		return [][][]byte{nil}, nil
	}
	return p.clusterings(eval)
}

// executeConditional runs a conditional INSERT, UPDATE or DELETE.
func (p *modPlan) executeConditional(ctx context.Context, x *execCtx, eval termEval, w writeTimes) (*Result, error) {
	parts, err := p.build(ctx, eval, w, x.readRow)
	if err != nil {
		return nil, err
	}
	part := parts[0]
	req := &casRequest{layout: p.layout, pk: part.pk}
	if err := p.casRows(eval, req, part); err != nil {
		return nil, err
	}
	ws := newWriteSet()
	if err := ws.addPartition(part); err != nil {
		return nil, serverError(err)
	}
	return x.applyIf(ctx, req, ws)
}

// applyIf applies ws, the writes of req's partition, if req's conditions
// hold, and returns the answer.
func (x *execCtx) applyIf(ctx context.Context, req *casRequest, ws *writeSet) (*Result, error) {
	var out casOutcome
	cond := func(p *engine.Partition) (bool, error) {
		o, err := req.evaluate(p)
		out = o
		return o.applied, err
	}
	ms := ws.mutations()
	if len(ms) == 0 {
		// Nothing to write (every value unset): the answer is the
		// conditions' alone.
		p, err := x.e.eng.Read(ctx, engine.Slice{Table: req.layout.id, Key: req.pk, Now: x.nowSec})
		if err != nil {
			return nil, toError(err)
		}
		if _, err := cond(p); err != nil {
			return nil, err
		}
		return req.result(out), nil
	}
	if _, err := x.e.eng.ApplyIf(ctx, ms[0], x.nowSec, cond); err != nil {
		return nil, writeError(err, wire.WriteCAS)
	}
	return req.result(out), nil
}
