package exec

import (
	"context"
	"fmt"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
)

var _ plan = (*modPlan)(nil)

// planInsert plans INSERT ... VALUES and INSERT JSON.
func (e *Executor) planInsert(s *Session, st *ast.Insert, nbinds int) (*modPlan, error) {
	l, err := e.table(s, st.Table)
	if err != nil {
		return nil, err
	}
	p := e.newModPlan(writeInsert, l, nbinds)
	if p.counter {
		return nil, invalidf("INSERT statements are not allowed on counter tables, use UPDATE instead")
	}
	if err := p.using(st.Using); err != nil {
		return nil, err
	}
	if st.JSON != nil {
		if err := p.planJSON(st); err != nil {
			return nil, err
		}
	} else {
		if len(st.Columns) != len(st.Values) {
			return nil, invalidf("Unmatched column names/values")
		}
		seen := map[*column]bool{}
		var rels []ast.Relation
		for i, name := range st.Columns {
			c, err := p.column(name)
			if err != nil {
				return nil, err
			}
			if seen[c] {
				return nil, invalidf("The column names contains duplicates")
			}
			seen[c] = true
			if c.kind == kindPartition || c.kind == kindClustering {
				rels = append(rels, ast.Relation{Columns: []string{name}, Op: ast.OpEq, Value: st.Values[i]})
				continue
			}
			p.ops = append(p.ops, &operation{col: c, kind: opSet, value: st.Values[i], valueType: c.typ})
			p.recv(st.Values[i], c.name, c.typ)
		}
		if err := p.where(rels); err != nil {
			return nil, err
		}
	}
	if err := p.checkClustering(); err != nil {
		return nil, err
	}
	if st.IfNotExists {
		p.ifNotExists = true
		if err := p.checkConditional(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// planUpdate plans UPDATE.
func (e *Executor) planUpdate(s *Session, st *ast.Update, nbinds int) (*modPlan, error) {
	l, err := e.table(s, st.Table)
	if err != nil {
		return nil, err
	}
	p := e.newModPlan(writeUpdate, l, nbinds)
	if err := p.using(st.Using); err != nil {
		return nil, err
	}
	for i := range st.Set {
		if err := p.assignment(&st.Set[i]); err != nil {
			return nil, err
		}
	}
	if err := p.whereAndIf(st.Where, st.IfExists, st.If); err != nil {
		return nil, err
	}
	return p, nil
}

// planDelete plans DELETE.
func (e *Executor) planDelete(s *Session, st *ast.Delete, nbinds int) (*modPlan, error) {
	l, err := e.table(s, st.Table)
	if err != nil {
		return nil, err
	}
	p := e.newModPlan(writeDelete, l, nbinds)
	if err := p.using(st.Using); err != nil {
		return nil, err
	}
	for _, t := range st.Columns {
		if err := p.deletion(t); err != nil {
			return nil, err
		}
	}
	if err := p.whereAndIf(st.Where, st.IfExists, st.If); err != nil {
		return nil, err
	}
	return p, nil
}

// whereAndIf plans what UPDATE and DELETE share after their columns: the
// WHERE clause and the IF conditions, and checks the rows they name.
func (p *modPlan) whereAndIf(where []ast.Relation, ifExists bool, conds []ast.Condition) error {
	if err := p.where(where); err != nil {
		return err
	}
	if err := p.planConditions(ifExists, conds); err != nil {
		return err
	}
	if err := p.checkClustering(); err != nil {
		return err
	}
	return p.checkConditional()
}

// assignment plans one SET item of an UPDATE.
func (p *modPlan) assignment(a *ast.Assignment) error {
	c, err := p.column(a.Column)
	if err != nil {
		return err
	}
	if c.kind == kindPartition || c.kind == kindClustering {
		return invalidf("PRIMARY KEY part %s found in SET part", c.name)
	}
	t := c.typ
	op := &operation{col: c, value: a.Value, valueType: t}
	isCounter := t.Kind == cqltype.Counter
	switch a.Kind {
	case ast.AssignSet:
		if isCounter {
			return invalidf("Cannot set the value of counter column %s (counters can only be incremented/decremented, not set)", c.name)
		}
		op.kind = opSet
	case ast.AssignAdd, ast.AssignRemove:
		switch {
		case isCounter:
			op.kind, op.negate = opCounter, a.Kind == ast.AssignRemove
		case !t.IsCollection():
			sign := "+"
			if a.Kind == ast.AssignRemove {
				sign = "-"
			}
			return invalidf("Invalid operation (%s = %s %s %s) for non counter column %s", c.name, c.name, sign, values.TermText(a.Value), c.name)
		case !t.MultiCell():
			return invalidf("Invalid operation (%s) for frozen collection column %s", assignText(a), c.name)
		case a.Kind == ast.AssignAdd:
			op.kind = opAppend
			if t.Kind == cqltype.Map && !isBind(a.Value) {
				op.literalErr = fmt.Sprintf("Value for a map addition has to be a map, but was: '%s'", values.TermText(a.Value))
			}
		default:
			op.kind = opDiscard
			if t.Kind == cqltype.Map {
				op.valueType = cqltype.SetOf(t.Elems[0], false)
				if !isBind(a.Value) {
					op.literalErr = fmt.Sprintf("Value for a map substraction has to be a set, but was: '%s'", values.TermText(a.Value))
				}
			}
		}
	case ast.AssignPrepend:
		if t.Kind != cqltype.List {
			return invalidf("Invalid operation (%s) for non list column %s", assignText(a), c.name)
		}
		if !t.MultiCell() {
			return invalidf("Invalid operation (%s) for frozen list column %s", assignText(a), c.name)
		}
		op.kind = opPrepend
	case ast.AssignElem:
		switch {
		case !t.IsCollection():
			return invalidf("Invalid operation (%s) for non collection column %s", assignText(a), c.name)
		case !t.MultiCell():
			return invalidf("Invalid operation (%s) for frozen collection column %s", assignText(a), c.name)
		case t.Kind == cqltype.Set:
			return invalidf("Invalid operation (%s) for set column %s", assignText(a), c.name)
		case t.Kind == cqltype.List:
			op.kind, op.key, op.keyType, op.valueType = opSetElem, a.Key, cqltype.IntType, t.Elems[0]
			p.recv(a.Key, "idx("+c.name+")", cqltype.IntType)
		default:
			op.kind, op.key, op.keyType, op.valueType = opSetElem, a.Key, t.Elems[0], t.Elems[1]
			p.recv(a.Key, "key("+c.name+")", t.Elems[0])
		}
		p.recv(a.Value, "value("+c.name+")", op.valueType)
		p.ops = append(p.ops, op)
		return nil
	case ast.AssignField:
		i, err := p.field(c, a.Field)
		if err != nil {
			return err
		}
		if !t.MultiCell() {
			return invalidf("Invalid operation (%s) for frozen UDT column %s", assignText(a), c.name)
		}
		op.kind, op.field, op.valueType = opSetField, i, t.Elems[i]
		p.recv(a.Value, c.name+"."+a.Field, op.valueType)
		p.ops = append(p.ops, op)
		return nil
	default:
		return invalidf("Unsupported assignment to %s", c.name)
	}
	if op.kind != opCounter && p.counter {
		return invalidf("Cannot set the value of counter column %s (counters can only be incremented/decremented, not set)", c.name)
	}
	if op.kind == opCounter {
		op.valueType = cqltype.CounterType
	}
	p.recv(a.Value, c.name, op.valueType)
	p.ops = append(p.ops, op)
	return nil
}

// isBind reports whether t is a bind marker, whose value Cassandra checks
// when it is bound rather than when the statement is prepared.
func isBind(t ast.Term) bool {
	_, ok := t.(*ast.Bind)
	return ok
}

// field returns the index of a field of the user-type column c.
func (p *modPlan) field(c *column, name string) (int, error) {
	if c.typ.Kind != cqltype.UDT {
		return 0, invalidf("Invalid field selection: %s of type %s is not a user type", c.name, c.typ)
	}
	for i, f := range c.typ.Fields {
		if f == name {
			return i, nil
		}
	}
	return 0, invalidf("UDT column %s does not have a field named %s", c.name, name)
}

// deletion plans one item of DELETE's column list.
func (p *modPlan) deletion(d ast.DeleteTarget) error {
	c, err := p.column(d.Column)
	if err != nil {
		return err
	}
	if c.kind == kindPartition || c.kind == kindClustering {
		return invalidf("Invalid identifier %s for deletion (should not be a PRIMARY KEY part)", c.name)
	}
	t := c.typ
	op := &operation{col: c, kind: opDelete}
	switch {
	case d.Elem != nil:
		switch {
		case !t.IsCollection():
			return invalidf("Invalid deletion operation for non collection column %s", c.name)
		case !t.MultiCell():
			return invalidf("Invalid deletion operation for frozen collection column %s", c.name)
		case t.Kind == cqltype.List:
			op.kind, op.key, op.keyType = opDeleteElem, d.Elem, cqltype.IntType
			p.recv(d.Elem, "idx("+c.name+")", cqltype.IntType)
		default:
			op.kind, op.key, op.keyType = opDeleteElem, d.Elem, t.Elems[0]
			p.recv(d.Elem, "key("+c.name+")", t.Elems[0])
		}
	case d.Field != "":
		i, err := p.field(c, d.Field)
		if err != nil {
			return err
		}
		if !t.MultiCell() {
			return invalidf("Frozen UDT column %s does not support field deletions", c.name)
		}
		op.kind, op.field = opDeleteField, i
	}
	p.ops = append(p.ops, op)
	return nil
}

func (p *modPlan) binds() []ColumnSpec { return p.specs }

// result is nil even for a conditional statement, whose answer's columns
// depend on whether it applied: PREPARED metadata without columns keeps
// drivers from skipping the metadata of its results, as with Cassandra.
func (p *modPlan) result() []ColumnSpec { return nil }

// conditional reports whether the statement has IF conditions.
func (p *modPlan) conditional() bool { return p.ifExists || p.ifNotExists || len(p.conds) > 0 }

// execute runs the statement.
func (p *modPlan) execute(ctx context.Context, x *execCtx) (*Result, error) {
	eval, err := p.eval(x)
	if err != nil {
		return nil, err
	}
	w := writeTimes{ts: x.timestamp, now: x.nowSec}
	switch {
	case p.counter && p.kind == writeUpdate:
		return p.executeCounter(ctx, x, eval, w)
	case p.conditional():
		return p.executeConditional(ctx, x, eval, w)
	}
	parts, err := p.build(ctx, eval, w, x.readRow)
	if err != nil {
		return nil, err
	}
	ws := newWriteSet()
	for _, part := range parts {
		if err := ws.addPartition(part); err != nil {
			return nil, serverError(err)
		}
	}
	if ws.empty() {
		return voidResult, nil
	}
	if err := x.e.eng.Apply(ctx, ws.mutations()...); err != nil {
		return nil, writeError(err, wire.WriteSimple)
	}
	return voidResult, nil
}

// eval returns the evaluation of the statement's terms in x: with the
// columns of INSERT JSON resolved from its decoded object.
func (p *modPlan) eval(x *execCtx) (termEval, error) {
	if p.json != nil {
		return p.jsonEval(x.writeEval())
	}
	return x.writeEval(), nil
}

// writeEval evaluates a write's terms: bound values as they came (null and
// unset told apart), everything else through the executor's term evaluation.
func (x *execCtx) writeEval() termEval {
	return func(t ast.Term, typ *cqltype.Type, recv string) ([]byte, bool, error) {
		v, unset, err := x.eval(typ, t, recv)
		if err != nil || unset || v == nil {
			return v, unset, err
		}
		// Drivers send sets and maps in any order; stored values and keys
		// are normalized, so that equal values are equal bytes.
		n, err := cqltype.Normalize(typ, v)
		if err != nil {
			return nil, false, toError(err)
		}
		return n, false, nil
	}
}

// readRow reads the live view of one row of a partition, or of its static
// row, for a read-before-write; nil if it does not exist.
func (x *execCtx) readRow(ctx context.Context, part *partitionWrite, clustering [][]byte, static bool) (*model.Row, error) {
	l := part.layout
	prefix := l.prefix(part.tok, part.pk)
	s := engine.Slice{Table: l.id, Key: part.pk, Now: x.nowSec, Limit: 1}
	if !static {
		var err error
		if s.Start, err = l.bound(prefix, clustering, keys.Before); err != nil {
			return nil, toError(err)
		}
		if s.End, err = l.bound(prefix, clustering, keys.After); err != nil {
			return nil, toError(err)
		}
	}
	p, err := x.e.eng.Read(ctx, s)
	if err != nil {
		return nil, toError(err)
	}
	if static {
		return staticOf(p), nil
	}
	if len(p.Rows) == 0 {
		return nil, nil
	}
	return &p.Rows[0].Row, nil
}

// assignText renders an assignment, for messages.
func assignText(a *ast.Assignment) string {
	c, v := a.Column, values.TermText(a.Value)
	switch a.Kind {
	case ast.AssignAdd:
		return c + " = " + c + " + " + v
	case ast.AssignPrepend:
		return c + " = " + v + " + " + c
	case ast.AssignRemove:
		return c + " = " + c + " - " + v
	case ast.AssignElem:
		return c + "[" + values.TermText(a.Key) + "] = " + v
	case ast.AssignField:
		return c + "." + a.Field + " = " + v
	}
	return c + " = " + v
}
