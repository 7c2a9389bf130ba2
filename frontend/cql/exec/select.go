package exec

import (
	"slices"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// selectPlan is a SELECT planned against one table: which partitions and
// rows it reads (the key restrictions), which rows it keeps (filters), and
// what it returns of them (the selection).
type selectPlan struct {
	t *tableLayout
	receivers

	// Partitions: keys (one restriction per partition key column, each an
	// = or IN), or a token range, or every partition.
	keys  []*restriction
	token tokenBounds

	// Rows within a partition: an = or IN prefix of the clustering columns
	// (single or multi-column), then at most one slice.
	prefix []*restriction
	slice  *slice
	// clusteringRestricted is true when any relation names a clustering
	// column; without one, a partition with no rows but a live static row
	// yields one row, as in Cassandra.
	clusteringRestricted bool

	filters []*restriction // checked on each assembled row
	// scanFilters: a scan restricts clustering columns without ALLOW
	// FILTERING, refused once the rest of the statement is checked.
	scanFilters bool

	sel               *selection
	reverse           bool // ORDER BY against the clustering order
	orderAcross       bool // ORDER BY with IN on the partition key: sort rows
	order             []orderKey
	limit, perPartLim ast.Term
	distinct          bool
	// groupBy is the number of primary key columns GROUP BY names.
	groupBy int
}

// restriction is one WHERE relation bound to columns.
type restriction struct {
	cols []*column // one, or several for a multi-column relation
	op   ast.Operator
	// value is the right side: a term of the column's type (or a tuple
	// for a multi-column relation); for IN, in lists the alternatives or
	// value is a *ast.Bind of a list of them.
	value ast.Term
	in    []ast.Term
	// mapKey is the key of a c[key] = v restriction.
	mapKey ast.Term
	// multi marks a multi-column relation, whose value is a tuple.
	multi bool
}

// slice bounds the rows after the clustering prefix: a lower and an upper
// range relation (either nil when open), each over one column or over a
// tuple of columns starting at the slice's position.
type slice struct {
	lower, upper *restriction
}

func (p *selectPlan) binds() []ColumnSpec  { return p.specs }
func (p *selectPlan) result() []ColumnSpec { return p.sel.columns }

// planSelect plans a SELECT of a user table.
func (e *Executor) planSelect(s *Session, st *ast.Select) (plan, error) {
	t, err := e.table(s, st.Table)
	if err != nil {
		return nil, err
	}
	p := &selectPlan{t: t, receivers: newReceivers(t.keyspace, t.name(), len(st.Binds)), distinct: st.Distinct}
	if err := p.planWhere(st); err != nil {
		return nil, err
	}
	// Cassandra's order of checks (SelectStatement.RawStatement.prepare):
	// the selection, DISTINCT, GROUP BY, PER PARTITION LIMIT, ORDER BY and
	// last whether a scan filters.
	if st.Distinct && st.PerPartitionLimit != nil {
		return nil, invalidf("PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries")
	}
	if st.Distinct && p.restrictsRows() {
		return nil, invalidf("SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.")
	}
	groupBy, groupErr := p.groupColumns(st)
	withGroups := *st // the selection groups by the whole key prefix
	withGroups.GroupBy = groupBy
	if p.sel, err = p.planSelection(&withGroups); err != nil {
		return nil, err
	}
	if groupErr != nil {
		return nil, groupErr
	}
	if p.sel.aggregate && len(st.GroupBy) == 0 && st.PerPartitionLimit != nil {
		return nil, invalidf("PER PARTITION LIMIT is not allowed with aggregate queries.")
	}
	if err := p.planOrder(st); err != nil {
		return nil, err
	}
	if err := p.planLimits(st); err != nil {
		return nil, err
	}
	if p.scanFilters {
		return nil, invalidf(filteringMessage)
	}
	for i, sp := range p.specs {
		if sp.Type == nil {
			return nil, invalidf("Bind variable %d has no receiver in this statement", i)
		}
	}
	return p, nil
}

// restrictsRows reports whether the WHERE clause restricts a clustering or
// regular column, which SELECT DISTINCT refuses (static columns are
// allowed).
func (p *selectPlan) restrictsRows() bool {
	if p.clusteringRestricted {
		return true
	}
	for _, r := range p.filters {
		if r.cols[0].kind == kindRegular || r.cols[0].kind == kindClustering {
			return true
		}
	}
	return false
}

// groupColumns checks GROUP BY as Cassandra's getAggregationSpecification
// does and returns the primary key prefix it groups by: the columns named,
// in key order, with the columns restricted by = between them (they hold
// one value, so grouping by them changes nothing), and never part of the
// partition key only.
func (p *selectPlan) groupColumns(st *ast.Select) ([]string, error) {
	if len(st.GroupBy) == 0 {
		return nil, nil
	}
	pkey := append(slices.Clone(p.t.partition), p.t.clustering...)
	const orderMsg = "Group by currently only support groups of columns following their declared order in the PRIMARY KEY"
	next := 0
	for _, name := range st.GroupBy {
		c := p.t.column(name)
		if c == nil {
			return nil, invalidf("Undefined column name %s in table %s.%s", name, p.t.keyspace, p.t.name())
		}
		if c.kind != kindPartition && c.kind != kindClustering {
			return nil, invalidf("Group by is currently only supported on the columns of the PRIMARY KEY, got %s", c.name)
		}
		for {
			if next >= len(pkey) {
				return nil, invalidf(orderMsg)
			}
			pc := pkey[next]
			next++
			if pc == c {
				break
			}
			if !p.restrictedByEq(pc) {
				return nil, invalidf(orderMsg)
			}
		}
	}
	if next < len(p.t.partition) {
		return nil, invalidf("Group by is not supported on only a part of the partition key")
	}
	if next > len(p.t.partition) && st.Distinct {
		return nil, invalidf("Grouping on clustering columns is not allowed for SELECT DISTINCT queries")
	}
	names := make([]string, next)
	for i, c := range pkey[:next] {
		names[i] = c.name
	}
	return names, nil
}
