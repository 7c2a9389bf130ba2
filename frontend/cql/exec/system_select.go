package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/manifest"
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
	// token bounds the partitions' tokens, as for any table.
	token tokenBounds
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
	if !isSystemKeyspace(ksName) && ksName != ksSystemTraces {
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
			receive := func(term ast.Term, name string, typ *cqltype.Type) {
				pl.addBind(term, ColumnSpec{Keyspace: t.keyspace, Table: t.name, Name: name, Type: typ})
			}
			if err := pl.token.add(&r, t.keyColumns(), receive); err != nil {
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
	if keyRestricted && pl.token.restricted() {
		return nil, true, invalidf("Columns %s cannot be restricted by both a normal relation and a token relation", tokenText(t.keyColumns()))
	}
	pl.addBind(st.Limit, spec("[limit]", cqltype.IntType))
	return pl, true, nil
}

// keyColumns are the partition key columns, as token relations see them.
func (t *sysTable) keyColumns() []keyColumn {
	key := make([]keyColumn, len(t.partition))
	for i, c := range t.partition {
		key[i] = keyColumn{name: t.columns[c].name, typ: t.columns[c].typ}
	}
	return key
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
		pk, tok, err := partitionKeyOf(pkVals)
		if err != nil {
			return nil, err
		}
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
	first, last, err := p.token.eval(x, p.table.keyColumns())
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
