package exec

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/funcs"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
)

// selection is what a SELECT returns of each row: one selector per result
// column, or, with aggregates, one accumulator per column for each group.
type selection struct {
	columns   []ColumnSpec // the result columns ([json] for SELECT JSON)
	items     []selector
	names     []string // the selectors' names, the keys of SELECT JSON
	aggregate bool
	json      bool
	// staticOnly: every column selected is a partition key or static
	// column, so a partition yields its static row whatever its rows.
	staticOnly bool
}

// selector computes one result column of a row.
type selector interface {
	eval(x *execCtx, r *rowCtx) ([]byte, error)
	typ() *cqltype.Type
}

// aggSelector is a selector of an aggregate query: it folds every row of a
// group into one value.
type aggSelector interface {
	selector
	// start returns a fresh accumulator for a group.
	start() accumulator
}

// accumulator folds a group's rows.
type accumulator interface {
	add(x *execCtx, r *rowCtx) error
	result() ([]byte, error)
}

// planSelection compiles the select clause.
func (p *selectPlan) planSelection(st *ast.Select) (*selection, error) {
	sel := &selection{json: st.JSON}
	if len(st.Selectors) == 0 {
		for _, c := range p.t.selectOrder() {
			sel.add(&columnSelector{c: c}, c.name)
		}
	}
	for i, s := range st.Selectors {
		sl, name, err := p.selector(s.Expr)
		if ce, ok := err.(*castError); ok {
			return nil, p.castRefused(st.Selectors[:i+1], ce)
		}
		if err != nil {
			return nil, err
		}
		if s.Alias != "" {
			name = s.Alias
		}
		sel.add(sl, name)
	}
	sel.staticOnly = true
	for _, it := range sel.items {
		if _, ok := it.(aggSelector); ok {
			sel.aggregate = true
		}
	}
	for _, c := range p.t.columns {
		if (c.kind == kindClustering || c.kind == kindRegular) && sel.uses(c) {
			sel.staticOnly = false
		}
	}
	if sel.aggregate {
		for i, it := range sel.items {
			if _, ok := it.(aggSelector); !ok {
				sel.items[i] = &firstSelector{selector: it}
			}
		}
	}
	if st.Distinct {
		if err := p.checkDistinct(sel); err != nil {
			return nil, err
		}
	}
	if len(st.GroupBy) > 0 {
		if err := p.planGroupBy(sel, st.GroupBy); err != nil {
			return nil, err
		}
	}
	ks, table := p.t.keyspace, p.t.name()
	if sel.json {
		sel.columns = []ColumnSpec{{Keyspace: ks, Table: table, Name: "[json]", Type: cqltype.TextType}}
		return sel, nil
	}
	for i, it := range sel.items {
		sel.columns = append(sel.columns, ColumnSpec{Keyspace: ks, Table: table, Name: sel.names[i], Type: it.typ()})
	}
	return sel, nil
}

func (s *selection) add(sl selector, name string) {
	s.items = append(s.items, sl)
	s.names = append(s.names, name)
}

// uses reports whether any selector reads column c.
func (s *selection) uses(c *column) bool {
	for _, it := range s.items {
		if selectorUses(it, c) {
			return true
		}
	}
	return false
}

func selectorUses(s selector, c *column) bool {
	switch s := s.(type) {
	case *columnSelector:
		return s.c == c
	case *cellSelector:
		return s.c == c
	case *funcSelector:
		for _, a := range s.args {
			if selectorUses(a, c) {
				return true
			}
		}
	case *aggFuncSelector:
		for _, a := range s.args {
			if selectorUses(a, c) {
				return true
			}
		}
	case *tokenSelector:
		for _, a := range s.args {
			if selectorUses(a, c) {
				return true
			}
		}
	case *jsonSelector:
		return selectorUses(s.arg, c)
	case *firstSelector:
		return selectorUses(s.selector, c)
	case *groupScalar:
		return selectorUses(s.scalarFunc, c)
	case *partSelector:
		return selectorUses(s.arg, c)
	}
	return false
}

// checkDistinct applies Cassandra's rules: only partition key and static
// columns, and all of the partition key when partitions are not read by
// key (as Cassandra, so that a range needs no grouping of its rows).
func (p *selectPlan) checkDistinct(sel *selection) error {
	for _, c := range p.t.columns {
		if (c.kind == kindClustering || c.kind == kindRegular) && sel.uses(c) {
			return invalidf("SELECT DISTINCT queries must only request partition key columns and/or static columns (not %s)", c.name)
		}
	}
	if p.keys != nil {
		return nil
	}
	for _, c := range p.t.partition {
		if !sel.uses(c) {
			return invalidf("SELECT DISTINCT queries must request all the partition key columns (missing %s)", c.name)
		}
	}
	return nil
}

// selector compiles one selectable.
func (p *selectPlan) selector(s ast.Selectable) (selector, string, error) {
	switch s := s.(type) {
	case *ast.ColumnSel:
		c := p.t.column(s.Name)
		if c == nil {
			return nil, "", invalidf("Undefined column name %s in selection clause", s.Name)
		}
		return &columnSelector{c: c}, c.name, nil
	case *ast.WriteTimeSel, *ast.TTLSel:
		name, kind := "", "writetime"
		if w, ok := s.(*ast.WriteTimeSel); ok {
			name = w.Column
		} else {
			name, kind = s.(*ast.TTLSel).Column, "ttl"
		}
		c := p.t.column(name)
		if c == nil {
			return nil, "", invalidf("Undefined column name %s in selection clause", name)
		}
		if c.kind == kindPartition || c.kind == kindClustering {
			return nil, "", invalidf("Cannot use selection function %s on PRIMARY KEY part %s", kindName(kind), c.name)
		}
		if c.typ.MultiCell() {
			return nil, "", invalidf("Cannot use selection function %s on non-frozen %s %s", kindName(kind), collectionWord(c.typ), c.name)
		}
		return &cellSelector{c: c, ttl: kind == "ttl"}, kind + "(" + c.name + ")", nil
	case *ast.CountRows:
		f, err := funcs.Lookup("", "countrows", nil)
		if err != nil {
			return nil, "", invalidf("%v", err)
		}
		return &aggFuncSelector{f: f}, "count", nil
	case *ast.FuncSel:
		return p.funcSelector(s)
	case *ast.OpSel:
		return p.opSelector(s)
	case *ast.CastSel:
		arg, argName, err := p.selector(s.Arg)
		if err != nil {
			return nil, "", err
		}
		to, err := cqltype.Parse(s.Type, nil)
		if err != nil {
			return nil, "", invalidf("%v", err)
		}
		f, err := funcs.Cast(arg.typ(), to)
		if err != nil {
			return nil, "", &castError{at: s, err: funcError(err)}
		}
		if f == nil {
			// Cassandra's WithCast hands back the argument's own
			// selector, name included, for a cast to its own type.
			return arg, argName, nil
		}
		name := "cast(" + argName + " as " + to.String() + ")"
		return scalar(&funcSelector{f: f, args: []selector{arg}}, []selector{arg}), name, nil
	case *ast.TermSel:
		t, err := termType(s.Term)
		if err != nil {
			return nil, "", err
		}
		p.recv(s.Term, "[selection]", t)
		return &termSelector{term: s.Term, t: t}, values.TermText(s.Term), nil
	case *ast.FieldSel:
		arg, argName, err := p.selector(s.Arg)
		if err != nil {
			return nil, "", err
		}
		t := arg.typ()
		if t.Kind != cqltype.UDT {
			return nil, "", invalidf("Invalid field selection: %s of type %s is not a user type", argName, t)
		}
		for i, f := range t.Fields {
			if f == s.Field {
				return &partSelector{arg: arg, field: i, t: t.Elems[i]}, argName + "." + s.Field, nil
			}
		}
		return nil, "", invalidf("%s of type %s has no field %s", argName, t, s.Field)
	case *ast.ElemSel:
		arg, argName, err := p.selector(s.Arg)
		if err != nil {
			return nil, "", err
		}
		t := arg.typ()
		switch t.Kind {
		case cqltype.Map, cqltype.Set:
			p.recv(s.Key, "key("+argName+")", t.Elems[0])
			et := t.Elems[len(t.Elems)-1]
			return &partSelector{arg: arg, key: s.Key, keyType: t.Elems[0], t: et}, argName + "[" + values.TermText(s.Key) + "]", nil
		}
		return nil, "", invalidf("Element selection is only allowed on sets and maps, but %s is a %s", argName, t)
	}
	return nil, "", invalidf("Unsupported selector %T", s)
}

// funcSelector compiles a function call: an aggregate, or a scalar
// function of other selectors.
func (p *selectPlan) funcSelector(s *ast.FuncSel) (selector, string, error) {
	if s.Keyspace == "" || s.Keyspace == "system" {
		// Cassandra's FunctionResolver sets these three apart: their
		// signatures depend on the call, not on a registry.
		switch s.Name {
		case "tojson":
			return p.jsonCall(s)
		case "token":
			return p.tokenCall(s)
		case "fromjson":
			return nil, "", invalidf("fromJson() cannot be used in the selection clause of a SELECT statement")
		}
	}
	if isCountLiteral(s) {
		// Cassandra reads count(1) as count(*) (Selectable.WithFunction),
		// named count: a literal is never null.
		f, err := funcs.Lookup("", "countrows", nil)
		if err != nil {
			return nil, "", invalidf("%v", err)
		}
		return &aggFuncSelector{f: f}, "count", nil
	}
	args := make([]selector, len(s.Args))
	fargs := make([]funcs.Arg, len(s.Args))
	names := make([]string, len(s.Args))
	for i, a := range s.Args {
		if ts, ok := a.(*ast.TermSel); ok && isUntyped(ts.Term) {
			// A literal or marker takes the type of the parameter it is
			// passed to, as in Cassandra: mintimeuuid('2024-01-02
			// 03:04:05+0000') passes a timestamp.
			fargs[i] = funcs.Arg{Text: values.TermText(ts.Term), Term: ts.Term}
			names[i] = fargs[i].Text
			continue
		}
		sl, name, err := p.selector(a)
		if err != nil {
			return nil, "", err
		}
		args[i], fargs[i], names[i] = sl, funcs.Arg{Text: name, Type: sl.typ()}, name
	}
	f, err := funcs.Lookup(s.Keyspace, s.Name, fargs)
	if err != nil {
		return nil, "", funcError(err)
	}
	for i, a := range s.Args {
		if args[i] == nil {
			term := a.(*ast.TermSel).Term
			// Cassandra names every marker of a selection [selection].
			p.recv(term, "[selection]", f.Args[i])
			args[i] = &termSelector{term: term, t: f.Args[i]}
		}
	}
	name := "system." + s.Name + "(" + strings.Join(names, ", ") + ")"
	if f.IsCast() {
		// CastFcts names its functions as CAST, however called.
		name = "cast(" + names[0] + " as " + f.Return.String() + ")"
	}
	if f.IsAggregate() {
		if slices.ContainsFunc(args, aggregates) {
			return nil, "", invalidf("aggregate functions cannot be used as arguments of aggregate functions")
		}
		return &aggFuncSelector{f: f, args: args}, name, nil
	}
	return scalar(&funcSelector{f: f, args: args}, args), name, nil
}

// opSelector compiles arithmetic (Cassandra 4.0's OperationFcts), named as
// Cassandra prints it: "a + b", "-a", without the parentheses written.
func (p *selectPlan) opSelector(s *ast.OpSel) (selector, string, error) {
	operands := []ast.Selectable{s.Left, s.Right}
	if s.Left == nil {
		operands = operands[1:]
	}
	args := make([]selector, len(operands))
	fargs := make([]funcs.Arg, len(operands))
	for i, o := range operands {
		if ts, ok := o.(*ast.TermSel); ok && isUntyped(ts.Term) {
			// A literal or marker takes its type from the other operand.
			fargs[i] = funcs.Arg{Text: values.TermText(ts.Term), Term: ts.Term}
			continue
		}
		sl, name, err := p.selector(o)
		if err != nil {
			return nil, "", err
		}
		args[i], fargs[i] = sl, funcs.Arg{Text: name, Type: sl.typ()}
	}
	var f *funcs.Function
	var err error
	if s.Left == nil {
		f, err = funcs.Negation(fargs[0])
	} else {
		f, err = funcs.Operation(s.Op, fargs[0], fargs[1])
	}
	if err != nil {
		return nil, "", funcError(err)
	}
	for i, o := range operands {
		if args[i] == nil {
			term := o.(*ast.TermSel).Term
			p.recv(term, "[selection]", f.Args[i])
			args[i] = &termSelector{term: term, t: f.Args[i]}
		}
	}
	name := "-" + fargs[0].Text
	if s.Left != nil {
		name = fargs[0].Text + " " + string(s.Op) + " " + fargs[1].Text
	}
	return scalar(&funcSelector{f: f, args: args}, args), name, nil
}

// isCountLiteral reports whether s is count of a literal other than null.
func isCountLiteral(s *ast.FuncSel) bool {
	if s.Name != "count" || (s.Keyspace != "" && s.Keyspace != "system") || len(s.Args) != 1 {
		return false
	}
	ts, ok := s.Args[0].(*ast.TermSel)
	if !ok {
		return false
	}
	lit, ok := ts.Term.(*ast.Literal)
	return ok && lit.Kind != ast.LitNull
}

// isUntyped reports whether a selected term has no type of its own: a
// literal or a bind marker, typed by where it is used.
func isUntyped(t ast.Term) bool {
	switch t.(type) {
	case *ast.Literal, *ast.Bind, *ast.List, *ast.Set, *ast.Map, *ast.Tuple:
		return true
	}
	return false
}

// planGroupBy checks GROUP BY: a prefix of the primary key columns.
func (p *selectPlan) planGroupBy(sel *selection, cols []string) error {
	pkey := append(append([]*column(nil), p.t.partition...), p.t.clustering...)
	for i, name := range cols {
		c := p.t.column(name)
		if c == nil {
			return invalidf("Undefined column name %s", name)
		}
		if i >= len(pkey) || pkey[i] != c {
			return invalidf("Group by currently only support groups of columns following their declared order in the PRIMARY KEY")
		}
	}
	p.groupBy = len(cols)
	if !sel.aggregate {
		// GROUP BY without aggregates returns the first row of each group.
		sel.aggregate = true
		for i, it := range sel.items {
			sel.items[i] = &firstSelector{selector: it}
		}
	}
	return nil
}

func kindName(kind string) string {
	if kind == "ttl" {
		return "ttl"
	}
	return "writeTime"
}

func collectionWord(t *cqltype.Type) string {
	if t.Kind == cqltype.UDT {
		return "UDT"
	}
	return "collection"
}

// funcError maps an error of cql/funcs for the client.
func funcError(err error) error {
	if fe, ok := err.(*funcs.FailureError); ok {
		return functionFailure(fe)
	}
	if fe, ok := err.(*funcs.Error); ok {
		return &Error{Code: wire.CodeInvalid, Message: fe.Msg, Cause: err}
	}
	return invalidf("%v", err)
}

// functionFailure is a native function's failure for the client:
// Cassandra's FunctionExecutionException (and OperationExecutionException
// of arithmetic), a FUNCTION_FAILURE naming the function.
func functionFailure(fe *funcs.FailureError) error {
	return &wire.Error{Code: wire.CodeFunctionFailure, Message: fe.Msg,
		Keyspace: "system", Function: fe.Function, ArgTypes: fe.ArgTypes}
}

// termType is the type of a term selected by itself: its hint's. Cassandra
// infers no other (Selectable.WithTerm): a literal fits many types, so
// SELECT 1 needs a cast, SELECT (int)1, as a marker does.
func termType(t ast.Term) (*cqltype.Type, error) {
	if h, ok := t.(*ast.Hint); ok {
		ht, err := cqltype.Parse(h.Type, nil)
		if err != nil {
			return nil, invalidf("%v", err)
		}
		if !values.Assignable(ht, h.Term) {
			// Cassandra's WithTypeHint names the receiver by the hint's text.
			text := values.TermText(h)
			return nil, invalidf("Cannot assign value %s to %s of type %s", text, text, ht)
		}
		return ht, nil
	}
	return nil, invalidf("Cannot infer type for term %s in selection clause (try using a cast to force a type)", values.TermText(t))
}

// columnSelector selects a column.
type columnSelector struct{ c *column }

func (s *columnSelector) typ() *cqltype.Type { return s.c.typ }
func (s *columnSelector) eval(_ *execCtx, r *rowCtx) ([]byte, error) {
	return r.value(s.c)
}

// cellSelector is WRITETIME(c) or TTL(c).
type cellSelector struct {
	c   *column
	ttl bool
}

func (s *cellSelector) typ() *cqltype.Type {
	if s.ttl {
		return cqltype.IntType
	}
	return cqltype.BigintType
}

func (s *cellSelector) eval(x *execCtx, r *rowCtx) ([]byte, error) {
	cell := r.cell(s.c)
	if cell == nil {
		return nil, nil
	}
	if !s.ttl {
		return binary.BigEndian.AppendUint64(nil, uint64(cell.Timestamp)), nil
	}
	if cell.TTL <= 0 {
		return nil, nil
	}
	return binary.BigEndian.AppendUint32(nil, uint32(max(cell.LocalDeletionTime-x.nowSec, 0))), nil
}

// funcSelector is a scalar function of selectors.
type funcSelector struct {
	f    *funcs.Function
	args []selector
}

func (s *funcSelector) typ() *cqltype.Type { return s.f.Return }
func (s *funcSelector) eval(x *execCtx, r *rowCtx) ([]byte, error) {
	return evalScalar(s, s.args, x, r)
}

func (s *funcSelector) apply(args [][]byte) ([]byte, error) {
	v, err := s.f.Call(args)
	if err != nil {
		return nil, funcError(err)
	}
	return v, nil
}

// scalarFunc is a selector computed from the values of its arguments.
type scalarFunc interface {
	selector
	apply(args [][]byte) ([]byte, error)
}

var (
	_ scalarFunc = (*funcSelector)(nil)
	_ scalarFunc = (*jsonSelector)(nil)
	_ scalarFunc = (*tokenSelector)(nil)
)

// evalScalar evaluates f's arguments on row r, then f.
func evalScalar(f scalarFunc, args []selector, x *execCtx, r *rowCtx) ([]byte, error) {
	vals := make([][]byte, len(args))
	for i, a := range args {
		v, err := a.eval(x, r)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return f.apply(vals)
}

// jsonCall compiles toJson(x). toJson takes any type, so Cassandra types
// its argument by the argument alone (ToJsonFct): a bind marker, null or a
// collection literal has none and needs a hint, as in toJson((int)?).
func (p *selectPlan) jsonCall(s *ast.FuncSel) (selector, string, error) {
	args := make([]selector, len(s.Args))
	names := make([]string, len(s.Args))
	for i, a := range s.Args {
		sl, name, err := p.selector(a)
		if err != nil {
			return nil, "", err
		}
		args[i], names[i] = sl, name
	}
	if len(args) != 1 {
		return nil, "", invalidf("toJson() only accepts one argument (got %d)", len(args))
	}
	return scalar(&jsonSelector{arg: args[0]}, args), "system.tojson(" + names[0] + ")", nil
}

// jsonSelector is toJson(x).
type jsonSelector struct{ arg selector }

func (s *jsonSelector) typ() *cqltype.Type { return cqltype.TextType }
func (s *jsonSelector) eval(x *execCtx, r *rowCtx) ([]byte, error) {
	return evalScalar(s, []selector{s.arg}, x, r)
}

func (s *jsonSelector) apply(args [][]byte) ([]byte, error) {
	j, err := values.ToJSON(s.arg.typ(), args[0])
	if err != nil {
		return nil, serverError(err)
	}
	return j, nil
}

// termSelector is a constant or a bound value.
type termSelector struct {
	term ast.Term
	t    *cqltype.Type
}

func (s *termSelector) typ() *cqltype.Type { return s.t }
func (s *termSelector) eval(x *execCtx, _ *rowCtx) ([]byte, error) {
	v, _, err := x.eval(s.t, s.term, "[selection]")
	return v, err
}

// partSelector selects a field of a user-type value (field >= 0 when key
// is nil) or an element of a set or map (by key).
type partSelector struct {
	arg     selector
	field   int
	key     ast.Term
	keyType *cqltype.Type
	t       *cqltype.Type
}

func (s *partSelector) typ() *cqltype.Type { return s.t }
func (s *partSelector) eval(x *execCtx, r *rowCtx) ([]byte, error) {
	v, err := s.arg.eval(x, r)
	if err != nil || v == nil {
		return nil, err
	}
	if s.key == nil {
		fields, err := splitUDT(s.arg.typ(), v)
		if err != nil {
			return nil, err
		}
		return fields[s.field], nil
	}
	k, _, err := x.eval(s.keyType, s.key, "key")
	if err != nil || k == nil {
		return nil, err
	}
	return collectionElement(s.arg.typ(), v, k)
}

// firstSelector turns a plain selector of an aggregate query into one that
// keeps its value of the group's first row.
type firstSelector struct{ selector }

func (s *firstSelector) start() accumulator { return &firstAcc{s: s.selector} }

type firstAcc struct {
	s   selector
	set bool
	v   []byte
}

func (a *firstAcc) add(x *execCtx, r *rowCtx) error {
	if a.set {
		return nil
	}
	v, err := a.s.eval(x, r)
	a.v, a.set = v, err == nil
	return err
}

func (a *firstAcc) result() ([]byte, error) { return a.v, nil }

// aggFuncSelector is an aggregate function of selectors.
type aggFuncSelector struct {
	f    *funcs.Function
	args []selector
}

func (s *aggFuncSelector) typ() *cqltype.Type { return s.f.Return }
func (s *aggFuncSelector) eval(*execCtx, *rowCtx) ([]byte, error) {
	return nil, serverError(fmt.Errorf("exec: aggregate %s evaluated per row", s.f))
}
func (s *aggFuncSelector) start() accumulator { return &aggAcc{s: s, acc: s.f.New()} }

type aggAcc struct {
	s   *aggFuncSelector
	acc funcs.Acc
}

// add feeds the aggregate's argument (none for COUNT(*)) of one row.
func (a *aggAcc) add(x *execCtx, r *rowCtx) error {
	var v []byte
	if len(a.s.args) > 0 {
		var err error
		if v, err = a.s.args[0].eval(x, r); err != nil {
			return err
		}
	}
	if err := a.acc.Add(v); err != nil {
		return serverError(err)
	}
	return nil
}

func (a *aggAcc) result() ([]byte, error) { return a.acc.Result(), nil }

// aggregates reports whether a selector folds a group's rows.
func aggregates(s selector) bool {
	_, ok := s.(aggSelector)
	return ok
}

// scalar returns s, a scalar function of args, as it is evaluated: per
// row, or, when an argument aggregates (toJson(max(v))), once per group on
// the arguments' results, as Cassandra allows.
func scalar(s scalarFunc, args []selector) selector {
	if !slices.ContainsFunc(args, aggregates) {
		return s
	}
	return &groupScalar{scalarFunc: s, args: args}
}

// groupScalar is a scalar selector applied to the results of a group: its
// arguments' accumulators (an aggregate's own, or the first row's value for
// the others) stand in for the row when the group ends.
type groupScalar struct {
	scalarFunc
	args []selector // the function's arguments, in its order
}

var _ aggSelector = (*groupScalar)(nil)

func (s *groupScalar) eval(*execCtx, *rowCtx) ([]byte, error) {
	return nil, serverError(fmt.Errorf("exec: a function of aggregates evaluated per row"))
}

func (s *groupScalar) start() accumulator {
	a := &groupScalarAcc{s: s, accs: make([]accumulator, len(s.args))}
	for i, arg := range s.args {
		if ag, ok := arg.(aggSelector); ok {
			a.accs[i] = ag.start()
		} else {
			a.accs[i] = &firstAcc{s: arg}
		}
	}
	return a
}

type groupScalarAcc struct {
	s    *groupScalar
	accs []accumulator
}

func (a *groupScalarAcc) add(x *execCtx, r *rowCtx) error {
	for _, acc := range a.accs {
		if err := acc.add(x, r); err != nil {
			return err
		}
	}
	return nil
}

// result applies the function to its arguments' accumulated values.
func (a *groupScalarAcc) result() ([]byte, error) {
	vals := make([][]byte, len(a.accs))
	for i, acc := range a.accs {
		v, err := acc.result()
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return a.s.apply(vals)
}

// tokenCall compiles token(...) in a selection. Its parameters are the
// partition key columns (Cassandra's TokenFct), so a bind marker or literal
// argument takes its key column's type: token(?) is the token of a bound
// key, which a client can compare with the tokens of rows.
func (p *selectPlan) tokenCall(s *ast.FuncSel) (selector, string, error) {
	if len(s.Args) != len(p.t.partition) {
		return nil, "", invalidf("Invalid number of arguments in call to function system.token: %d required but %d provided", len(p.t.partition), len(s.Args))
	}
	args := make([]selector, len(s.Args))
	names := make([]string, len(s.Args))
	ownKey := true // the arguments are the partition key columns, in order
	for i, a := range s.Args {
		key := p.t.partition[i]
		if ts, ok := a.(*ast.TermSel); ok && isUntyped(ts.Term) {
			if !values.Assignable(key.typ, ts.Term) {
				return nil, "", invalidf("%s is not of the expected type: %s", values.TermText(ts.Term), key.typ)
			}
			p.recv(ts.Term, "[selection]", key.typ)
			args[i], names[i], ownKey = &termSelector{term: ts.Term, t: key.typ}, values.TermText(ts.Term), false
			continue
		}
		sl, name, err := p.selector(a)
		if err != nil {
			return nil, "", err
		}
		if !sl.typ().Equal(key.typ) {
			return nil, "", invalidf("Type error: %s cannot be passed as argument %d of function system.token of type %s", name, i, key.typ)
		}
		if c, ok := sl.(*columnSelector); !ok || c.c != key {
			ownKey = false
		}
		args[i], names[i] = sl, name
	}
	return scalar(&tokenSelector{args: args, own: ownKey}, args), "system.token(" + strings.Join(names, ", ") + ")", nil
}

// tokenSelector is token(k...): the Murmur3 token of the partition key that
// args make; own says they are the row's own key columns, whose token the
// row carries.
type tokenSelector struct {
	args []selector
	own  bool
}

func (*tokenSelector) typ() *cqltype.Type { return cqltype.BigintType }
func (s *tokenSelector) eval(x *execCtx, r *rowCtx) ([]byte, error) {
	if s.own {
		return binary.BigEndian.AppendUint64(nil, uint64(r.token)), nil
	}
	return evalScalar(s, s.args, x, r)
}

func (s *tokenSelector) apply(vals [][]byte) ([]byte, error) {
	if slices.ContainsFunc(vals, func(v []byte) bool { return v == nil }) {
		return nil, nil // a null component: a null token, as in Cassandra
	}
	if len(vals) == 1 {
		return funcs.Token(vals[0]), nil
	}
	pk, err := keys.ComposePartitionKey(vals)
	if err != nil {
		return nil, invalidf("Key length of %d is longer than maximum of 65535", longest(vals))
	}
	return funcs.Token(pk), nil
}

// selectOrder returns the columns in the order SELECT * lists them, as
// Cassandra does: the partition key and clustering columns in key order,
// then the static columns and the regular columns, each by name.
func (l *tableLayout) selectOrder() []*column {
	byName := func(cs []*column) []*column {
		cs = slices.Clone(cs)
		slices.SortFunc(cs, func(a, b *column) int { return strings.Compare(a.name, b.name) })
		return cs
	}
	out := append(slices.Clone(l.partition), l.clustering...)
	return append(append(out, byName(l.static)...), byName(l.regular)...)
}

// castError is a CAST with no conversion, refused by planSelection, which
// knows the columns selected before it.
type castError struct {
	at  *ast.CastSel
	err error // the refusal naming the argument's type
}

func (e *castError) Error() string { return e.err.Error() }

// castRefused words a CAST with no conversion as Cassandra 4's WithCast
// does: "c cannot be cast to int", where c is the first column the
// selection had collected when the cast failed (its defs list), which may
// be a column of an earlier selector. Cassandra fails with an index error
// when there is none (CAST(now() AS int)); the message then names the
// argument's type.
func (p *selectPlan) castRefused(sels []ast.Selector, ce *castError) error {
	w := castWalk{p: p, stop: ce.at}
	for _, s := range sels {
		w.visit(s.Expr)
	}
	if w.first == "" {
		return ce.err
	}
	return invalidf("%s cannot be cast to %s", w.first, strings.ToLower(strings.TrimSpace(ce.at.Type)))
}

// castWalk finds the first column named by selectables, in the order
// Cassandra collects them, up to the argument of a failed cast.
type castWalk struct {
	p     *selectPlan
	stop  *ast.CastSel
	first string
	done  bool
}

func (w *castWalk) visit(s ast.Selectable) {
	if w.done {
		return
	}
	switch s := s.(type) {
	case *ast.ColumnSel:
		w.column(s.Name)
	case *ast.WriteTimeSel:
		w.column(s.Column)
	case *ast.TTLSel:
		w.column(s.Column)
	case *ast.FuncSel:
		for _, a := range s.Args {
			w.visit(a)
		}
	case *ast.CastSel:
		w.visit(s.Arg)
		if s == w.stop {
			w.done = true
		}
	case *ast.FieldSel:
		w.visit(s.Arg)
	case *ast.ElemSel:
		w.visit(s.Arg)
	case *ast.OpSel:
		if s.Left != nil {
			w.visit(s.Left)
		}
		w.visit(s.Right)
	}
}

func (w *castWalk) column(name string) {
	if w.first != "" {
		return
	}
	if c := w.p.t.column(name); c != nil {
		w.first = c.name
	}
}
