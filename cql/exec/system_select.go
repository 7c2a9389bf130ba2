package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/sedimentdb/sediment/cql/ast"
	"github.com/sedimentdb/sediment/cqltype"
	"github.com/sedimentdb/sediment/keys"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/token"
)

var _ plan = (*sysSelectPlan)(nil)

// sysSelectPlan is a SELECT on a system table: the rows are listed from
// the View when it runs, filtered by equality (and IN) restrictions on any
// column, as drivers and cqlsh write them, and projected on the selected
// columns or counted.
type sysSelectPlan struct {
	table *sysTable
	// cols are the selected columns' indexes; count is COUNT(*).
	cols    []int
	count   bool
	specs   []ColumnSpec
	bindArr []ColumnSpec
	filters []sysFilter
	limit   ast.Term
	// tokenLower and tokenUpper bound the partitions' tokens (nil: open),
	// as for any table.
	tokenLower, tokenUpper *tokenBound
}

// sysFilter keeps the rows whose column col equals one of the values.
type sysFilter struct {
	col    int
	typ    *cqltype.Type
	values []ast.Term // OpEq: one; OpIn: the alternatives
	inBind ast.Term   // IN ?: a list of values
}

// planSystemSelect plans a SELECT if its table is a system table; ok is
// false for other tables.
func (e *Executor) planSystemSelect(s *Session, st *ast.Select) (p plan, ok bool, err error) {
	ksName := st.Table.Keyspace
	if ksName == "" {
		ksName = s.Keyspace()
	}
	if !isSystemKeyspace(ksName) {
		return nil, false, nil
	}
	t := sysTables[ksName][st.Table.Name]
	if t == nil {
		return nil, true, invalidf("unconfigured table %s", st.Table.Name)
	}
	if st.JSON || st.Distinct || len(st.GroupBy) > 0 || len(st.OrderBy) > 0 || st.PerPartitionLimit != nil {
		return nil, true, invalidf("Sediment answers system tables with plain selections only")
	}
	pl := &sysSelectPlan{table: t, limit: st.Limit}
	spec := func(name string, typ *cqltype.Type) ColumnSpec {
		return ColumnSpec{Keyspace: t.keyspace, Table: t.name, Name: name, Type: typ}
	}
	if len(st.Selectors) == 0 {
		for i, c := range t.columns {
			pl.cols = append(pl.cols, i)
			pl.specs = append(pl.specs, spec(c.name, c.typ))
		}
	}
	for _, sel := range st.Selectors {
		switch x := sel.Expr.(type) {
		case *ast.ColumnSel:
			i := t.column(x.Name)
			if i < 0 {
				return nil, true, invalidf("Undefined column name %s in table %s.%s", x.Name, t.keyspace, t.name)
			}
			name := x.Name
			if sel.Alias != "" {
				name = sel.Alias
			}
			pl.cols = append(pl.cols, i)
			pl.specs = append(pl.specs, spec(name, t.columns[i].typ))
		case *ast.CountRows:
			if len(st.Selectors) != 1 {
				return nil, true, invalidf("Sediment answers COUNT(*) on system tables only alone")
			}
			name := "count"
			if sel.Alias != "" {
				name = sel.Alias
			}
			pl.count = true
			pl.specs = append(pl.specs, spec(name, cqltype.BigintType))
		default:
			return nil, true, invalidf("Sediment answers system tables with plain column selections only")
		}
	}
	keyRestricted := false
	for _, r := range st.Where {
		if r.Token {
			if err := pl.planToken(&r); err != nil {
				return nil, true, err
			}
			continue
		}
		if r.Multi || len(r.Columns) != 1 || r.MapKey != nil {
			return nil, true, invalidf("Sediment filters system tables on single columns only")
		}
		i := t.column(r.Columns[0])
		if i < 0 {
			return nil, true, invalidf("Undefined column name %s in table %s.%s", r.Columns[0], t.keyspace, t.name)
		}
		keyRestricted = keyRestricted || t.columns[i].kind == manifest.KindPartitionKey
		f := sysFilter{col: i, typ: t.columns[i].typ}
		switch r.Op {
		case ast.OpEq:
			f.values = []ast.Term{r.Value}
			pl.addBind(r.Value, spec(t.columns[i].name, f.typ))
		case ast.OpIn:
			switch v := r.Value.(type) {
			case *ast.Tuple:
				f.values = v.Elems
				for _, el := range v.Elems {
					pl.addBind(el, spec(t.columns[i].name, f.typ))
				}
			default:
				f.inBind = v
				pl.addBind(v, spec("in("+t.columns[i].name+")", cqltype.ListOf(f.typ, true)))
			}
		default:
			return nil, true, invalidf("Sediment filters system tables with = and IN only")
		}
		pl.filters = append(pl.filters, f)
	}
	if keyRestricted && (pl.tokenLower != nil || pl.tokenUpper != nil) {
		return nil, true, invalidf("Columns %s cannot be restricted by both a normal relation and a token relation", t.tokenText())
	}
	pl.addBind(st.Limit, spec("[limit]", cqltype.IntType))
	return pl, true, nil
}

// planToken takes a token(pk...) relation, with Cassandra's rules and
// messages for any table: the whole partition key in order, compared with
// a bigint or with token(values).
func (p *sysSelectPlan) planToken(r *ast.Relation) error {
	t := p.table
	if len(r.Columns) != len(t.partition) {
		return invalidf("The token() function must be applied to all partition key components or none of them")
	}
	for i, name := range r.Columns {
		if t.columns[t.partition[i]].name != name {
			return invalidf("The token function arguments must be in the partition key order: %s", t.tokenText())
		}
	}
	b := &tokenBound{value: r.Value}
	if c, ok := r.Value.(*ast.Call); ok && c.Name == "token" && (c.Keyspace == "" || c.Keyspace == "system") {
		if len(c.Args) != len(t.partition) {
			return invalidf("Invalid number of arguments in call to function token: %d required but %d provided", len(t.partition), len(c.Args))
		}
		b.key = c.Args
		for i, a := range c.Args {
			col := t.columns[t.partition[i]]
			p.addBind(a, ColumnSpec{Keyspace: t.keyspace, Table: t.name, Name: col.name, Type: col.typ})
		}
	} else {
		p.addBind(r.Value, ColumnSpec{Keyspace: t.keyspace, Table: t.name, Name: "partition key token", Type: cqltype.BigintType})
	}
	switch r.Op {
	case ast.OpGt, ast.OpGte:
		if p.tokenLower != nil {
			return invalidf("More than one restriction was found for the start bound on %s", t.tokenText())
		}
		b.inclusive = r.Op == ast.OpGte
		p.tokenLower = b
	case ast.OpLt, ast.OpLte:
		if p.tokenUpper != nil {
			return invalidf("More than one restriction was found for the end bound on %s", t.tokenText())
		}
		b.inclusive = r.Op == ast.OpLte
		p.tokenUpper = b
	case ast.OpEq:
		if p.tokenLower != nil || p.tokenUpper != nil {
			return invalidf("Columns %s cannot be restricted by both an equality and an inequality relation", t.tokenText())
		}
		b.inclusive = true
		p.tokenLower, p.tokenUpper = b, b
	default:
		return invalidf("%s cannot be used with the token function", r.Op)
	}
	return nil
}

// tokenText is token(k...) of the table's partition key, for messages.
func (t *sysTable) tokenText() string {
	names := make([]string, len(t.partition))
	for i, c := range t.partition {
		names[i] = t.columns[c].name
	}
	return "token(" + strings.Join(names, ", ") + ")"
}

// evalToken evaluates a token bound: a bigint, or the token of the key
// that token(values) makes.
func (p *sysSelectPlan) evalToken(x *execCtx, b *tokenBound) (int64, error) {
	if b.key == nil {
		v, unset, err := x.eval(cqltype.BigintType, b.value, "partition key token")
		if err != nil {
			return 0, err
		}
		if unset || len(v) != 8 {
			return 0, invalidf("Invalid null or unset token value")
		}
		return int64(binary.BigEndian.Uint64(v)), nil
	}
	vals := make([][]byte, len(b.key))
	for i, term := range b.key {
		c := p.table.columns[p.table.partition[i]]
		v, unset, err := x.eval(c.typ, term, c.name)
		if err != nil {
			return 0, err
		}
		if unset || v == nil {
			return 0, invalidf("Invalid null or unset value for partition key part %s", c.name)
		}
		vals[i] = v
	}
	pk, err := composeKey(vals)
	if err != nil {
		return 0, err
	}
	return token.Murmur3(pk), nil
}

// tokenRange evaluates the token bounds into an inclusive range; first >
// last when it is empty.
func (p *sysSelectPlan) tokenRange(x *execCtx) (first, last int64, err error) {
	first, last = math.MinInt64, math.MaxInt64
	if b := p.tokenLower; b != nil {
		if first, err = p.evalToken(x, b); err != nil {
			return 0, 0, err
		}
		if !b.inclusive {
			if first == math.MaxInt64 {
				return 1, 0, nil
			}
			first++
		}
	}
	if b := p.tokenUpper; b != nil {
		if last, err = p.evalToken(x, b); err != nil {
			return 0, 0, err
		}
		if !b.inclusive {
			if last == math.MinInt64 {
				return 1, 0, nil
			}
			last--
		}
	}
	return first, last, nil
}

// composeKey is the partition key of its column values: the value of a
// single column, or the composite of several.
func composeKey(vals [][]byte) ([]byte, error) {
	if len(vals) == 1 {
		return vals[0], nil
	}
	pk, err := keys.ComposePartitionKey(vals)
	if err != nil {
		return nil, invalidf("Key length of %d is longer than maximum of 65535", longest(vals))
	}
	return pk, nil
}

// sysRow is a row of a system table with its storage key: the order of
// rows, and where a page resumes.
type sysRow struct {
	key  []byte
	tok  int64
	vals [][]byte
}

// sortedRows lists the table's rows that keep accepts in the order
// Cassandra scans any table: partitions by the Murmur3 token of their key
// (then by key bytes), rows within a partition by clustering.
func (t *sysTable) sortedRows(e *Executor, keep func(vals [][]byte) bool) ([]sysRow, error) {
	if t.rows == nil {
		return nil, nil
	}
	all := slices.DeleteFunc(t.rows(e), func(vals [][]byte) bool { return !keep(vals) })
	types := make([]*cqltype.Type, len(t.clustering))
	for i, c := range t.clustering {
		types[i] = t.columns[c].typ
	}
	desc := make([]bool, len(t.clustering))
	pkVals := make([][]byte, len(t.partition))
	ckVals := make([][]byte, len(t.clustering))
	out := make([]sysRow, len(all))
	for i, vals := range all {
		for j, c := range t.partition {
			pkVals[j] = vals[c]
		}
		for j, c := range t.clustering {
			ckVals[j] = vals[c]
		}
		pk, err := composeKey(pkVals)
		if err != nil {
			return nil, err
		}
		tok := token.Murmur3(pk)
		key, err := keys.RowKey(nil, tok, pk, ckVals, types, desc)
		if err != nil {
			return nil, serverError(fmt.Errorf("exec: key of a %s.%s row: %w", t.keyspace, t.name, err))
		}
		out[i] = sysRow{key: key, tok: tok, vals: vals}
	}
	slices.SortFunc(out, func(a, b sysRow) int { return bytes.Compare(a.key, b.key) })
	return out, nil
}

// addBind records the receiver of a bind marker term.
func (p *sysSelectPlan) addBind(t ast.Term, spec ColumnSpec) {
	if b, ok := t.(*ast.Bind); ok {
		for len(p.bindArr) <= b.Index {
			p.bindArr = append(p.bindArr, ColumnSpec{})
		}
		p.bindArr[b.Index] = spec
	}
}

func (p *sysSelectPlan) binds() []ColumnSpec  { return p.bindArr }
func (p *sysSelectPlan) result() []ColumnSpec { return p.specs }

func (p *sysSelectPlan) execute(_ context.Context, x *execCtx) (*Result, error) {
	limit := -1
	if p.limit != nil {
		v, _, err := x.eval(cqltype.IntType, p.limit, "[limit]")
		if err != nil {
			return nil, err
		}
		if len(v) != 4 {
			return nil, invalidf("Invalid null value of limit")
		}
		if limit = int(int32(binary.BigEndian.Uint32(v))); limit <= 0 {
			return nil, invalidf("LIMIT must be strictly positive")
		}
	}
	// Evaluate every filter's values once.
	wanted := make([][][]byte, len(p.filters))
	for i, f := range p.filters {
		name := p.table.columns[f.col].name
		for _, term := range f.values {
			v, _, err := x.eval(f.typ, term, name)
			if err != nil {
				return nil, err
			}
			wanted[i] = append(wanted[i], v)
		}
		if f.inBind != nil {
			v, _, err := x.eval(cqltype.ListOf(f.typ, true), f.inBind, "in("+name+")")
			if err != nil {
				return nil, err
			}
			elems, err := listElems(v)
			if err != nil {
				return nil, err
			}
			wanted[i] = append(wanted[i], elems...)
		}
	}
	first, last, err := p.tokenRange(x)
	if err != nil {
		return nil, err
	}
	all, err := p.table.sortedRows(x.e, func(vals [][]byte) bool {
		for i, f := range p.filters {
			if !slices.ContainsFunc(wanted[i], func(v []byte) bool {
				return v != nil && vals[f.col] != nil && cqltype.Compare(f.typ, v, vals[f.col]) == 0
			}) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	// A page resumes after the previous page's last row, found by its key
	// among the rows as they are now, with what LIMIT left.
	pageSize := 0
	if !p.count {
		pageSize = x.params.PageSize
	}
	st, err := decodePagingState(x.params.PagingState)
	if err != nil {
		return nil, err
	}
	if st != nil && !p.count {
		all = all[sort.Search(len(all), func(i int) bool { return bytes.Compare(all[i].key, st.key) > 0 }):]
		if st.remaining > 0 {
			limit = st.remaining
		}
	}
	res := &Result{Kind: ResultRows, Columns: p.specs}
	n := 0
	var lastKey []byte
	for _, r := range all {
		if r.tok < first || r.tok > last {
			continue
		}
		if limit >= 0 && n >= limit {
			break
		}
		if pageSize > 0 && n == pageSize {
			// The page is full and row r follows: the next page starts
			// after the last row sent.
			st := &pagingState{key: lastKey}
			if limit >= 0 {
				st.remaining = limit - n
			}
			res.PagingState = encodePagingState(st)
			break
		}
		n++
		lastKey = r.key
		if p.count {
			continue
		}
		out := make([][]byte, len(p.cols))
		for j, c := range p.cols {
			out[j] = r.vals[c]
		}
		res.Rows = append(res.Rows, out)
	}
	if p.count {
		res.Rows = [][][]byte{{binary.BigEndian.AppendUint64(nil, uint64(n))}}
	}
	return res, nil
}

// listElems splits a serialized list or set, validated by binding, into
// its elements.
func listElems(v []byte) ([][]byte, error) {
	if len(v) < 4 {
		return nil, invalidf("Invalid null value for IN restriction")
	}
	n := int(binary.BigEndian.Uint32(v))
	v = v[4:]
	out := make([][]byte, 0, min(n, len(v)/4))
	for range n {
		if len(v) < 4 {
			return nil, invalidf("Invalid list value")
		}
		l := int(int32(binary.BigEndian.Uint32(v)))
		v = v[4:]
		if l < 0 || l > len(v) {
			return nil, invalidf("Invalid list value")
		}
		out = append(out, v[:l])
		v = v[l:]
	}
	return out, nil
}
