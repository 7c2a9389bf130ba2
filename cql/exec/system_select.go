package exec

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/sedimentdb/sediment/cql/ast"
	"github.com/sedimentdb/sediment/cqltype"
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
	for _, r := range st.Where {
		if r.Token || r.Multi || len(r.Columns) != 1 || r.MapKey != nil {
			return nil, true, invalidf("Sediment filters system tables on single columns only")
		}
		i := t.column(r.Columns[0])
		if i < 0 {
			return nil, true, invalidf("Undefined column name %s in table %s.%s", r.Columns[0], t.keyspace, t.name)
		}
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
	pl.addBind(st.Limit, spec("[limit]", cqltype.IntType))
	return pl, true, nil
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
	var all [][][]byte
	if p.table.rows != nil {
		all = p.table.rows(x.e)
	}
	res := &Result{Kind: ResultRows, Columns: p.specs}
	n := 0
rows:
	for _, row := range all {
		for i, f := range p.filters {
			if !slices.ContainsFunc(wanted[i], func(v []byte) bool {
				return v != nil && row[f.col] != nil && cqltype.Compare(f.typ, v, row[f.col]) == 0
			}) {
				continue rows
			}
		}
		if limit >= 0 && n >= limit {
			break
		}
		n++
		if p.count {
			continue
		}
		out := make([][]byte, len(p.cols))
		for i, c := range p.cols {
			out[i] = row[c]
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
