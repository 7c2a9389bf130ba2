package exec

import (
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

const filteringMessage = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"

// planWhere sorts the WHERE relations into what selects partitions, what
// selects rows within them and what filters rows, with Cassandra's rules on
// which shapes need ALLOW FILTERING.
func (p *selectPlan) planWhere(st *ast.Select) error {
	pk := make([]*restriction, len(p.t.partition))
	var pkSlices []*restriction
	ck := make([][]*restriction, len(p.t.clustering)) // by first column
	var others []*restriction
	m := merger{}
	for i := range st.Where {
		rel := &st.Where[i]
		if rel.Op == ast.OpNe {
			// Relation.toRestriction refuses != before it looks at the
			// column, whatever the column and ALLOW FILTERING.
			return invalidf("Unsupported \"!=\" relation: %s", relationText(rel))
		}
		if rel.Token {
			if err := p.token.add(rel, p.t.keyColumns(), p.recv); err != nil {
				return err
			}
			continue
		}
		r, err := p.bindRelation(rel)
		if err != nil {
			return err
		}
		if err := m.add(r); err != nil {
			return err
		}
		c := r.cols[0]
		switch {
		case c.kind == kindPartition && !rel.Multi:
			if isSlice(r.op) {
				// Cassandra 4 filters on a partition key slice, with
				// ALLOW FILTERING, as on a partial partition key.
				pkSlices = append(pkSlices, r)
				continue
			}
			if r.op != ast.OpEq && r.op != ast.OpIn {
				if r.op == ast.OpContains || r.op == ast.OpContainsKey || r.op == ast.OpLike {
					return invalidf("%s restriction is not supported on partition key column %s", r.op, c.name)
				}
				return invalidf("Only EQ and IN relation are supported on the partition key (unless you use the token() function)")
			}
			if pk[c.pos] != nil {
				return invalidf("%s cannot be restricted by more than one relation if it includes an Equal", c.name)
			}
			pk[c.pos] = r
		case c.kind == kindClustering:
			p.clusteringRestricted = true
			ck[c.pos] = append(ck[c.pos], r)
		default:
			if rel.Multi {
				return invalidf("Multi-column relations can only be applied to clustering columns but was applied to: %s", c.name)
			}
			others = append(others, r)
		}
	}
	if err := p.planPartition(st, pk, pkSlices, &others); err != nil {
		return err
	}
	if err := p.planClustering(st, ck, &others); err != nil {
		return err
	}
	for _, r := range others {
		// Cassandra names the whole relation, as written.
		if r.op == ast.OpLike {
			return invalidf("LIKE restriction is only supported on properly indexed columns. %s LIKE %s is not valid.", r.cols[0].name, values.TermText(r.value))
		}
	}
	if len(others) > 0 && !st.AllowFiltering {
		return invalidf(filteringMessage)
	}
	p.filters = others
	// A scan that restricts clustering columns filters every partition
	// (StatementRestrictions.needFiltering); Cassandra checks this last,
	// after ORDER BY.
	p.scanFilters = p.keys == nil && p.clusteringRestricted && !st.AllowFiltering
	return nil
}

func isSlice(op ast.Operator) bool {
	return op == ast.OpGt || op == ast.OpGte || op == ast.OpLt || op == ast.OpLte
}

// relationText writes a relation as Cassandra's Relation.toString does.
func relationText(rel *ast.Relation) string {
	lhs := strings.Join(rel.Columns, ", ")
	if rel.Multi {
		lhs = "(" + lhs + ")"
	} else if rel.Token {
		lhs = "token(" + lhs + ")"
	}
	return lhs + " " + rel.Op.String() + " " + values.TermText(rel.Value)
}

// merger checks relations on the same column as Cassandra 4's restriction
// sets merge them, in WHERE order: the earlier relation on a column decides
// the message. A single-column relation meeting a multi-column one is first
// made a one-column tuple (MultiColumnRestriction.mergeWith), so
// (c, d) > (1, 2) AND c < 5 is one slice.
type merger struct {
	first map[*column]*restriction // the first =, IN or slice on a column
}

func (m *merger) add(r *restriction) error {
	if r.mapKey != nil || (r.op != ast.OpEq && r.op != ast.OpIn && !isSlice(r.op)) {
		return nil // CONTAINS, CONTAINS KEY, m[k] = v and LIKE combine freely
	}
	if m.first == nil {
		m.first = map[*column]*restriction{}
	}
	var prev *restriction
	var common []*column
	for _, c := range r.cols {
		if p := m.first[c]; p != nil {
			prev = p
			common = append(common, c)
		}
	}
	if prev != nil {
		names := columnNames(common)
		switch {
		case isEqual(prev):
			return invalidf("%s cannot be restricted by more than one relation if it includes an Equal", names)
		case prev.op == ast.OpIn:
			return invalidf("%s cannot be restricted by more than one relation if it includes a IN", names)
		case !isSlice(r.op):
			return invalidf("Column \"%s\" cannot be restricted by both an equality and an inequality relation", names)
		case prev.cols[0] != r.cols[0]:
			later := prev.cols[0]
			if r.cols[0].pos > later.pos {
				later = r.cols[0]
			}
			return invalidf("Column \"%s\" cannot be restricted by two inequalities not starting with the same column", later.name)
		case isLower(prev.op) == isLower(r.op):
			bound := "end"
			if isLower(r.op) {
				bound = "start"
			}
			return invalidf("More than one restriction was found for the %s bound on %s", bound, names)
		}
	}
	for _, c := range r.cols {
		if m.first[c] == nil {
			m.first[c] = r
		}
	}
	return nil
}

// isEqual reports an = restriction, or an IN of one value, which Cassandra
// makes an EQ restriction.
func isEqual(r *restriction) bool {
	return r.op == ast.OpEq || (r.op == ast.OpIn && len(r.in) == 1)
}

func isLower(op ast.Operator) bool { return op == ast.OpGt || op == ast.OpGte }

// bindRelation resolves a relation's columns and records the receivers of
// its markers.
func (p *selectPlan) bindRelation(rel *ast.Relation) (*restriction, error) {
	r := &restriction{op: rel.Op, mapKey: rel.MapKey, multi: rel.Multi}
	for _, name := range rel.Columns {
		c := p.t.column(name)
		if c == nil {
			return nil, invalidf("Undefined column name %s in table %s.%s", name, p.t.keyspace, p.t.name())
		}
		r.cols = append(r.cols, c)
	}
	if len(r.cols) == 0 {
		return nil, invalidf("Relation without a column")
	}
	c := r.cols[0]
	if !rel.Multi {
		if err := checkColumnRelation(c, rel); err != nil {
			return nil, err
		}
	}
	typ, name := c.typ, c.name
	if rel.Multi {
		for i, c := range r.cols {
			if c.kind != kindClustering {
				return nil, invalidf("Multi-column relations can only be applied to clustering columns but was applied to: %s", c.name)
			}
			if i > 0 && c.pos != r.cols[i-1].pos+1 {
				return nil, invalidf("Clustering columns must appear in the PRIMARY KEY order in multi-column relations: (%s)", strings.Join(rel.Columns, ", "))
			}
		}
		typ, name = tupleOf(r.cols), tupleName(r.cols)
	}
	// recvValue records the receivers of one value of the relation.
	recvValue := func(term ast.Term) {
		if rel.Multi {
			p.recvColumns(term, r.cols)
		} else {
			p.recv(term, name, typ)
		}
	}
	switch rel.Op {
	case ast.OpContains:
		if c.typ.Kind != cqltype.List && c.typ.Kind != cqltype.Set && c.typ.Kind != cqltype.Map {
			return nil, invalidf("Cannot use CONTAINS on non-collection column %s", c.name)
		}
		typ, name = c.typ.Elems[len(c.typ.Elems)-1], "value("+c.name+")"
	case ast.OpContainsKey:
		if c.typ.Kind != cqltype.Map {
			return nil, invalidf("Cannot use CONTAINS KEY on non-map column %s", c.name)
		}
		typ, name = c.typ.Elems[0], "key("+c.name+")"
	case ast.OpIsNotNull:
		return nil, invalidf("Unsupported restriction: %s IS NOT NULL", c.name)
	}
	if rel.MapKey != nil {
		if c.typ.Kind != cqltype.Map {
			return nil, invalidf("Column %s cannot be used as a map", c.name)
		}
		p.recv(rel.MapKey, "key("+c.name+")", c.typ.Elems[0])
		typ, name = c.typ.Elems[1], "value("+c.name+")"
	}
	if rel.Op == ast.OpIn {
		switch v := rel.Value.(type) {
		case *ast.Tuple:
			// Non-nil even for IN (): nil marks IN ?.
			r.in = append([]ast.Term{}, v.Elems...)
			for _, e := range v.Elems {
				recvValue(e)
			}
		case *ast.Bind:
			r.value = v
			p.recv(v, "in("+name+")", cqltype.ListOf(typ, false))
		default:
			return nil, invalidf("Invalid IN relation on %s", name)
		}
		return r, nil
	}
	r.value = rel.Value
	recvValue(rel.Value)
	return r, nil
}

// planPartition decides how partitions are found: by key when every
// partition key column has = or IN, by token range, or by a scan of the
// ring. A partial key restriction becomes a filter (ALLOW FILTERING).
func (p *selectPlan) planPartition(st *ast.Select, pk, slices []*restriction, others *[]*restriction) error {
	n := 0
	for _, r := range pk {
		if r != nil {
			n++
		}
	}
	switch {
	case len(slices) > 0 && p.token.restricted():
		return invalidf("Only EQ and IN relation are supported on the partition key (unless you use the token() function)")
	case len(slices) > 0:
		if !st.AllowFiltering {
			return invalidf(filteringMessage)
		}
		for _, r := range pk {
			if r != nil {
				*others = append(*others, r)
			}
		}
		*others = append(*others, slices...)
	case n > 0 && n < len(pk) && p.token.restricted():
		var missing []string
		for i, r := range pk {
			if r == nil {
				missing = append(missing, p.t.partition[i].name)
			}
		}
		return invalidf("Partition key parts: %s must be restricted as other parts are", strings.Join(missing, ", "))
	case n == len(pk):
		// With a token restriction too, the keys are read and those
		// outside the token range dropped, as Cassandra 4's TokenFilter.
		p.keys = pk
	case n > 0:
		if !st.AllowFiltering {
			return invalidf(filteringMessage)
		}
		for _, r := range pk {
			if r != nil {
				*others = append(*others, r)
			}
		}
	}
	return nil
}

// planClustering takes the longest = / IN prefix of the clustering columns
// and at most one slice after it; whatever else restricts a clustering
// column filters rows.
func (p *selectPlan) planClustering(st *ast.Select, ck [][]*restriction, others *[]*restriction) error {
	pos := 0
	used := map[*restriction]bool{}
	for pos < len(ck) && p.slice == nil {
		rs := ck[pos]
		if len(rs) == 0 {
			break
		}
		var eq *restriction
		var sl []*restriction
		for _, r := range rs {
			switch r.op {
			case ast.OpEq, ast.OpIn:
				if eq != nil {
					return invalidf("%s cannot be restricted by more than one relation if it includes an Equal", r.cols[0].name)
				}
				eq = r
			case ast.OpGt, ast.OpGte, ast.OpLt, ast.OpLte:
				sl = append(sl, r)
			}
		}
		if eq != nil {
			if len(sl) > 0 {
				return invalidf("%s cannot be restricted by both an equality and an inequality relation", eq.cols[0].name)
			}
			if eq.mapKey != nil {
				break
			}
			used[eq] = true
			p.prefix = append(p.prefix, eq)
			pos += len(eq.cols)
			continue
		}
		if len(sl) == 0 {
			break
		}
		s, err := p.planSlice(sl)
		if err != nil {
			return err
		}
		for _, r := range sl {
			used[r] = true
		}
		p.slice = s
		pos += s.width()
	}
	for i, rs := range ck {
		for _, r := range rs {
			if used[r] {
				continue
			}
			if !st.AllowFiltering && r.op != ast.OpContains && r.op != ast.OpContainsKey {
				prev := p.t.clustering[max(i-1, 0)]
				if i > 0 && len(ck[i-1]) == 0 {
					return invalidf("PRIMARY KEY column \"%s\" cannot be restricted as preceding column \"%s\" is not restricted", r.cols[0].name, prev.name)
				}
				return invalidf("Clustering column \"%s\" cannot be restricted (preceding column \"%s\" is restricted by a non-EQ relation)", r.cols[0].name, prev.name)
			}
			*others = append(*others, r)
		}
	}
	return nil
}

// planSlice combines the range relations on one clustering position into a
// slice: at most one lower and one upper bound. The two may have different
// widths, as in (a, b) > (1, 2) AND a < 5.
func (p *selectPlan) planSlice(rs []*restriction) (*slice, error) {
	s := &slice{}
	for _, r := range rs {
		switch r.op {
		case ast.OpGt, ast.OpGte:
			if s.lower != nil {
				return nil, invalidf("More than one restriction was found for the start bound on %s", r.cols[0].name)
			}
			s.lower = r
		case ast.OpLt, ast.OpLte:
			if s.upper != nil {
				return nil, invalidf("More than one restriction was found for the end bound on %s", r.cols[0].name)
			}
			s.upper = r
		}
	}
	return s, nil
}

// width returns how many clustering columns the slice bounds.
func (s *slice) width() int {
	n := 0
	for _, r := range []*restriction{s.lower, s.upper} {
		if r != nil {
			n = max(n, len(r.cols))
		}
	}
	return n
}

func columnNames(cols []*column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// checkColumnRelation refuses what Cassandra 4's SingleColumnRelation
// refuses of a relation's operator on its column's type, in its order:
// slices of durations (newSliceRestriction), then map entries, non-frozen
// user types and whole non-frozen collections (toReceivers).
func checkColumnRelation(c *column, rel *ast.Relation) error {
	t := c.typ
	if isSlice(rel.Op) && rel.MapKey == nil && referencesDuration(t) {
		switch {
		case t.IsCollection():
			return invalidf("Slice restrictions are not supported on collections containing durations")
		case t.Kind == cqltype.Tuple:
			return invalidf("Slice restrictions are not supported on tuples containing durations")
		case t.Kind == cqltype.UDT:
			return invalidf("Slice restrictions are not supported on UDTs containing durations")
		}
		return invalidf("Slice restrictions are not supported on duration columns")
	}
	if rel.Op == ast.OpContainsKey && t.Kind != cqltype.Map {
		return invalidf("Cannot use CONTAINS KEY on non-map column %s", c.name)
	}
	if rel.Op == ast.OpContains && !t.IsCollection() {
		return invalidf("Cannot use CONTAINS on non-collection column %s", c.name)
	}
	if rel.MapKey != nil {
		switch {
		case t.Kind == cqltype.List:
			return invalidf("Indexes on list entries (%s[index] = value) are not currently supported.", c.name)
		case t.Kind != cqltype.Map:
			return invalidf("Column %s cannot be used as a map", c.name)
		case t.Frozen:
			return invalidf("Map-entry equality predicates on frozen map column %s are not supported", c.name)
		case rel.Op != ast.OpEq:
			return invalidf("Only EQ relations are supported on map entries")
		}
		return nil
	}
	if t.Kind == cqltype.UDT && !t.Frozen {
		return invalidf("Non-frozen UDT column '%s' (%s) cannot be restricted by any relation", c.name, t)
	}
	if t.IsCollection() && !t.Frozen && rel.Op != ast.OpContains && rel.Op != ast.OpContainsKey {
		return invalidf("Collection column '%s' (%s) cannot be restricted by a '%s' relation", c.name, t, rel.Op)
	}
	return nil
}

// referencesDuration reports whether t is or holds a duration.
func referencesDuration(t *cqltype.Type) bool {
	if t.Kind == cqltype.Duration {
		return true
	}
	return slices.ContainsFunc(t.Elems, referencesDuration)
}
