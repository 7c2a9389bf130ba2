package exec

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/restrictions"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
)

// Writes: INSERT, UPDATE and DELETE become model entries (see package model)
// under the storage keys of package keys:
//
//	statement                  writes
//	-------------------------  -----------------------------------------------
//	INSERT                     row liveness (the row exists) + a cell per value
//	UPDATE SET                 cells only: the row lives while a cell does
//	c = null, DELETE c         a cell tombstone (a column deletion for a
//	                           non-frozen collection or user type)
//	c = [..] (non-frozen)      a column deletion at ts-1, then one cell per
//	                           element, so the new elements survive it
//	DELETE FROM .. full key    row deletion
//	DELETE FROM .. key prefix  range tombstone in the partition header
//	or clustering range
//	DELETE FROM .. WHERE pk    partition deletion
//	static columns             the static row in the partition header
//
// A statement's entries for one partition go to the engine as one mutation,
// applied atomically; IN on the partition key makes one per key.

// writeKind is the statement a modification plan runs.
type writeKind uint8

const (
	writeInsert writeKind = iota
	writeUpdate
	writeDelete
)

func (k writeKind) String() string {
	return [...]string{"INSERT", "UPDATE", "DELETE"}[k]
}

// keyRestriction is the value or values (IN) of one primary key column.
type keyRestriction struct {
	col *column
	// terms are the values of = t and IN (t, ...).
	terms []ast.Term
	// in is the marker of IN ?: a list of values.
	in ast.Term
	// inRel: the values come from IN, even a single one.
	inRel bool
	// multi is the multi-column relation this column is part of, which
	// gives the values of all its columns at once.
	multi *multiRestriction
}

// multiRestriction is (c1, c2, ...) = t or (c1, c2, ...) IN (...) on
// consecutive clustering columns.
type multiRestriction struct {
	cols []*column
	// alts are the alternatives: = has one; each is a *ast.Tuple literal
	// or a term of the tuple type.
	alts []ast.Term
	// in is the marker of IN ?: a list of tuples.
	in ast.Term
}

// multiRelation plans a multi-column relation: = and IN into byCol, slices
// (DELETE only) into slices, keyed by their first column.
func (p *modPlan) multiRelation(r *ast.Relation, byCol map[*column]*keyRestriction, ranges map[*column]*clusteringSlice) error {
	m := &multiRestriction{}
	for _, name := range r.Columns {
		c, err := p.column(name)
		if err != nil {
			return err
		}
		if c.kind != kindClustering {
			return invalidf("Multi-column relations can only be applied to clustering columns but was applied to: %s", name)
		}
		if s := ranges[c]; s != nil && !s.multi {
			return invalidf("Mixing single column relations and multi column relations on clustering columns is not allowed")
		}
		if byCol[c] != nil {
			return invalidf("Column \"%s\" cannot be restricted by two multi-column relations or by a multi-column and a single-column relation", name)
		}
		if len(m.cols) > 0 && c.pos != m.cols[len(m.cols)-1].pos+1 {
			return invalidf("Clustering columns must appear in the PRIMARY KEY order in multi-column relations: %s", strings.Join(r.Columns, ", "))
		}
		m.cols = append(m.cols, c)
	}
	tt := tupleOf(m.cols)
	switch r.Op {
	case ast.OpEq:
		m.alts = []ast.Term{r.Value}
	case ast.OpIn:
		if tup, ok := r.Value.(*ast.Tuple); ok {
			m.alts = tup.Elems
		} else {
			m.in = r.Value
			p.recv(r.Value, "in("+tupleName(m.cols)+")", cqltype.ListOf(tt, false))
		}
	case ast.OpGt, ast.OpGte, ast.OpLt, ast.OpLte:
		if p.kind != writeDelete {
			return invalidf("Slice restrictions are not supported on the clustering columns in %s statements", p.kind)
		}
		if tup, ok := r.Value.(*ast.Tuple); ok && len(tup.Elems) != len(m.cols) {
			return invalidf("Expected %d elements in value tuple, but got %d: %s", len(m.cols), len(tup.Elems), ast.FormatTerm(tup))
		}
		for _, c := range m.cols[1:] {
			if s := ranges[c]; s != nil {
				return invalidf("Mixing single column relations and multi column relations on clustering columns is not allowed")
			}
		}
		b := &sliceBound{cols: m.cols, term: r.Value, multi: true, inclusive: r.Op == ast.OpLte || r.Op == ast.OpGte}
		if err := addSliceBound(ranges, b, r.Op); err != nil {
			return err
		}
		p.recvColumns(r.Value, m.cols)
		return nil
	default:
		return invalidf("Unsupported \"%s\" relation on clustering columns %s in %s statements", r.Op, tupleName(m.cols), p.kind)
	}
	for _, a := range m.alts {
		p.recvColumns(a, m.cols)
	}
	for _, c := range m.cols {
		byCol[c] = &keyRestriction{col: c, inRel: r.Op == ast.OpIn, multi: m}
	}
	return nil
}

// tuples evaluates m's alternatives: one value per column each.
func (m *multiRestriction) tuples(eval termEval) ([][][]byte, error) {
	tt := tupleOf(m.cols)
	var out [][][]byte
	add := func(v []byte) error {
		if v == nil {
			return invalidf("Invalid null value in condition for columns %s", tupleName(m.cols))
		}
		parts, err := splitTuple(v, len(m.cols))
		if err != nil {
			return err
		}
		out = append(out, parts)
		return nil
	}
	if m.in != nil {
		v, unset, err := eval(m.in, cqltype.ListOf(tt, false), "in("+tupleName(m.cols)+")")
		if err != nil {
			return nil, err
		}
		if unset || v == nil {
			return nil, invalidf("Invalid null or unset value for columns %s", tupleName(m.cols))
		}
		elems, err := splitCollection(v, false)
		if err != nil {
			return nil, err
		}
		for _, e := range elems {
			if err := add(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, a := range m.alts {
		if tup, ok := a.(*ast.Tuple); ok && len(tup.Elems) == len(m.cols) {
			vals := make([][]byte, len(m.cols))
			for i, el := range tup.Elems {
				v, unset, err := eval(el, m.cols[i].typ, m.cols[i].name)
				if err != nil {
					return nil, err
				}
				if unset {
					return nil, invalidf("Invalid unset value for column %s", m.cols[i].name)
				}
				if v == nil {
					return nil, invalidf("Invalid null value in condition for column %s", m.cols[i].name)
				}
				vals[i] = v
			}
			out = append(out, vals)
			continue
		}
		v, unset, err := eval(a, tt, tupleName(m.cols))
		if err != nil {
			return nil, err
		}
		if unset {
			return nil, invalidf("Invalid unset value for columns %s", tupleName(m.cols))
		}
		if err := add(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sliceBound is one side of a clustering range of a DELETE: c > t on one
// column, or (c1, c2, ...) > t on consecutive ones (multi), compared in
// value order whatever the clustering order.
type sliceBound struct {
	cols      []*column
	term      ast.Term
	multi     bool
	inclusive bool
}

// modPlan is a planned INSERT, UPDATE or DELETE.
type modPlan struct {
	kind   writeKind
	layout *tableLayout
	pk     []keyRestriction // one per partition key column, in key order
	ck     []keyRestriction // a prefix of the clustering columns
	// lower (> or >=) and upper (< or <=) bound the clustering columns
	// after ck in a range DELETE; nil when unbounded on that side.
	lower, upper *sliceBound
	ops          []*operation
	// static: the statement writes only static columns and names no row.
	static bool
	// json is INSERT JSON's term and whether absent columns are unset.
	json        ast.Term
	jsonUnset   bool
	ttl, ts     ast.Term
	counter     bool
	ifExists    bool
	ifNotExists bool
	conds       []*condition
	receivers
	readsCurrent bool
}

// planWrite plans INSERT, UPDATE, DELETE and BATCH.
func (e *Executor) planWrite(s *Session, st ast.Statement) (plan, error) {
	if b, ok := st.(*ast.Batch); ok {
		return e.planBatch(s, b)
	}
	p, err := e.planModification(s, st, len(ast.Binds(st)))
	if err != nil {
		return nil, err
	}
	if err := checkReceivers(p.specs); err != nil {
		return nil, err
	}
	return p, nil
}

// planModification plans an INSERT, UPDATE or DELETE whose markers are
// numbered among nbinds (a batch numbers them across its statements).
func (e *Executor) planModification(s *Session, st ast.Statement, nbinds int) (*modPlan, error) {
	switch st := st.(type) {
	case *ast.Insert:
		return e.planInsert(s, st, nbinds)
	case *ast.Update:
		return e.planUpdate(s, st, nbinds)
	case *ast.Delete:
		return e.planDelete(s, st, nbinds)
	}
	return nil, invalidf("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
}

func newModPlan(kind writeKind, l *tableLayout, binds int) *modPlan {
	return &modPlan{kind: kind, layout: l, counter: l.isCounter(), receivers: newReceivers(l.keyspace, l.name(), binds)}
}

// checkReceivers fails for a marker whose type the statement does not say.
func checkReceivers(specs []ColumnSpec) error {
	for i, s := range specs {
		if s.Type == nil {
			return invalidf("Cannot infer the type of bind marker %d", i)
		}
	}
	return nil
}

// column resolves a column name of the statement's table.
func (p *modPlan) column(name string) (*column, error) {
	c := p.layout.column(name)
	if c == nil {
		return nil, invalidf("Undefined column name %s", name)
	}
	return c, nil
}

// where plans the restrictions of a WHERE clause (INSERT passes its key
// values as = relations).
func (p *modPlan) where(rels []ast.Relation) error {
	var nonKey []string
	byCol := map[*column]*keyRestriction{}
	ranges := map[*column]*clusteringSlice{}
	for _, r := range rels {
		if r.Token {
			return invalidf("The token function cannot be used in WHERE clauses for %s statements", p.kind)
		}
		if r.Multi {
			if err := p.multiRelation(&r, byCol, ranges); err != nil {
				return err
			}
			continue
		}
		name := r.Columns[0]
		c, err := p.column(name)
		if err != nil {
			return err
		}
		if c.kind != kindPartition && c.kind != kindClustering {
			nonKey = append(nonKey, name)
			continue
		}
		if r.MapKey != nil {
			return invalidf("Invalid restriction on primary key column %s", name)
		}
		switch r.Op {
		case ast.OpEq, ast.OpIn:
			if byCol[c] != nil || ranges[c] != nil {
				if r.Op == ast.OpIn {
					return invalidf("%s cannot be restricted by more than one relation if it includes a IN", name)
				}
				return invalidf("%s cannot be restricted by more than one relation if it includes an Equal", name)
			}
			kr := &keyRestriction{col: c, inRel: r.Op == ast.OpIn}
			switch {
			case r.Op == ast.OpEq:
				kr.terms = []ast.Term{r.Value}
				p.recv(r.Value, c.name, c.typ)
			default:
				if tup, ok := r.Value.(*ast.Tuple); ok {
					kr.terms = tup.Elems
					for _, t := range tup.Elems {
						p.recv(t, c.name, c.typ)
					}
				} else {
					kr.in = r.Value
					p.recv(r.Value, "in("+c.name+")", cqltype.ListOf(c.typ, false))
				}
			}
			byCol[c] = kr
		case ast.OpLt, ast.OpLte, ast.OpGt, ast.OpGte:
			if c.kind == kindPartition {
				return invalidf("Only EQ and IN relation are supported on the partition key (unless you use the token() function)")
			}
			if p.kind != writeDelete {
				return invalidf("Slice restrictions are not supported on the clustering columns in %s statements", p.kind)
			}
			if byCol[c] != nil {
				return invalidf("Column \"%s\" cannot be restricted by both an equality and an inequality relation", name)
			}
			if s := ranges[c]; s != nil && s.multi {
				return invalidf("Mixing single column relations and multi column relations on clustering columns is not allowed")
			}
			for _, s := range ranges {
				if s.multi && s.covers(c) {
					return invalidf("Mixing single column relations and multi column relations on clustering columns is not allowed")
				}
			}
			b := &sliceBound{cols: []*column{c}, term: r.Value, inclusive: r.Op == ast.OpLte || r.Op == ast.OpGte}
			if err := addSliceBound(ranges, b, r.Op); err != nil {
				return err
			}
			p.recv(r.Value, c.name, c.typ)
		default:
			if c.kind == kindPartition {
				return invalidf("Only EQ and IN relation are supported on the partition key (unless you use the token() function)")
			}
			return invalidf("Unsupported \"%s\" relation on clustering column %s in %s statements", r.Op, name, p.kind)
		}
	}
	if len(nonKey) > 0 {
		return invalidf("Non PRIMARY KEY columns found in where clause: %s", strings.Join(nonKey, ", "))
	}
	var missing []string
	for _, c := range p.layout.partition {
		kr := byCol[c]
		if kr == nil {
			missing = append(missing, c.name)
			continue
		}
		p.pk = append(p.pk, *kr)
	}
	if len(missing) > 0 {
		return invalidf("Some partition key parts are missing: %s", strings.Join(missing, ", "))
	}
	// The clustering restrictions must be = or IN on a prefix, then at most
	// one range.
	cl := p.layout.clustering
	for i, c := range cl {
		kr, s := byCol[c], ranges[c]
		if kr != nil {
			p.ck = append(p.ck, *kr)
			continue
		}
		for _, d := range cl[i+1:] {
			if byCol[d] == nil && ranges[d] == nil || s != nil && s.covers(d) {
				continue
			}
			if s != nil {
				return invalidf("Clustering column \"%s\" cannot be restricted (preceding column \"%s\" is restricted by a non-EQ relation)", d.name, c.name)
			}
			return invalidf("PRIMARY KEY column \"%s\" cannot be restricted as preceding column \"%s\" is not restricted", d.name, c.name)
		}
		if s != nil {
			p.lower, p.upper = s.lower, s.upper
		}
		break
	}
	return nil
}

// clusteringSlice is the range relations on the clustering columns from
// one position: a lower and an upper bound, each on one column or several.
type clusteringSlice struct {
	lower, upper *sliceBound
	multi        bool
}

// covers reports whether a multi-column bound of s includes column c.
func (s *clusteringSlice) covers(c *column) bool {
	for _, b := range []*sliceBound{s.lower, s.upper} {
		if b != nil && slices.Contains(b.cols, c) {
			return true
		}
	}
	return false
}

// addSliceBound adds a bound of a range relation with operator op to the
// slice of its first column.
func addSliceBound(m map[*column]*clusteringSlice, b *sliceBound, op ast.Operator) error {
	c := b.cols[0]
	s := m[c]
	if s == nil {
		s = &clusteringSlice{multi: b.multi}
		m[c] = s
	}
	if op == ast.OpGt || op == ast.OpGte {
		if s.lower != nil {
			return invalidf("More than one restriction was found for the start bound on %s", c.name)
		}
		s.lower = b
	} else {
		if s.upper != nil {
			return invalidf("More than one restriction was found for the end bound on %s", c.name)
		}
		s.upper = b
	}
	return nil
}

// hasRange reports whether a DELETE has a clustering range.
func (p *modPlan) hasRange() bool { return p.lower != nil || p.upper != nil }

// checkClustering enforces Cassandra's rules on the clustering of a write,
// once the operations and conditions are known. As in Cassandra
// (ModificationStatement.appliesOnlyToStaticColumns), a statement is on the
// static row alone when neither its operations nor its conditions touch a
// regular column and one of them touches a static column; a DELETE without
// columns deletes rows, so it touches regular columns.
func (p *modPlan) checkClustering() error {
	n := len(p.layout.clustering)
	regular := p.kind == writeDelete && len(p.ops) == 0
	static := false
	for _, o := range p.ops {
		regular = regular || o.col.kind == kindRegular
		static = static || o.col.kind == kindStatic
	}
	for _, c := range p.conds {
		regular = regular || c.col.kind == kindRegular
		static = static || c.col.kind == kindStatic
	}
	staticOnly := static && !regular
	restricted := len(p.ck) > 0 || p.hasRange()
	switch {
	case staticOnly && !restricted:
		p.static = true
	case staticOnly && p.kind != writeInsert:
		return invalidf("Invalid restrictions on clustering columns since the %s statement modifies only static columns", p.kind)
	case p.kind == writeDelete && len(p.ops) == 0:
		// Rows, ranges or the whole partition.
	case p.kind == writeDelete && (p.hasRange() || len(p.ck) < n):
		// Columns of a range of rows, or of the whole partition: Cassandra
		// refuses them when it writes (DeleteStatement.addUpdateForKey), so
		// a conditional DELETE's own refusal comes first.
		if p.conditional() {
			return nil
		}
		for _, o := range p.ops {
			if o.col.kind == kindRegular {
				return invalidf("Range deletions are not supported for specific columns")
			}
		}
	case len(p.ck) < n:
		var missing []string
		for _, c := range p.layout.clustering[len(p.ck):] {
			missing = append(missing, c.name)
		}
		return invalidf("Some clustering keys are missing: %s", strings.Join(missing, ", "))
	}
	return nil
}

// using plans the USING clause.
func (p *modPlan) using(u ast.Using) error {
	if u.TTL != nil {
		if p.kind == writeDelete {
			return invalidf("TTL is not supported on DELETE statements")
		}
		p.ttl = u.TTL
		p.recv(u.TTL, "[ttl]", cqltype.IntType)
	}
	if u.Timestamp != nil {
		p.ts = u.Timestamp
		p.recv(u.Timestamp, "[timestamp]", cqltype.BigintType)
	}
	if p.counter && p.ts != nil {
		return invalidf("Cannot provide custom timestamp for counter updates")
	}
	if p.counter && p.ttl != nil {
		return invalidf("Cannot provide custom TTL for counter updates")
	}
	return nil
}

// times evaluates the statement's write times: USING TIMESTAMP or the
// statement's, USING TTL or the table's default_time_to_live.
func (p *modPlan) times(eval termEval, def writeTimes) (writeTimes, error) {
	w := def
	if p.ts != nil {
		v, unset, err := eval(p.ts, cqltype.BigintType, "[timestamp]")
		if err != nil {
			return w, err
		}
		switch {
		case unset:
		case v == nil:
			return w, invalidf("Invalid null value of timestamp")
		case len(v) != 8:
			return w, invalidf("Invalid timestamp value: expected 8 bytes, got %d", len(v))
		default:
			w.ts = int64(binary.BigEndian.Uint64(v))
		}
	}
	w.ttl = 0
	if p.kind == writeDelete || p.counter {
		return w, nil
	}
	w.ttl = p.layout.table.Options.DefaultTTL
	if p.ttl != nil {
		v, unset, err := eval(p.ttl, cqltype.IntType, "[ttl]")
		if err != nil {
			return w, err
		}
		switch {
		case unset:
		case v == nil:
			w.ttl = 0
		case len(v) != 4:
			return w, invalidf("Invalid TTL value: expected 4 bytes, got %d", len(v))
		default:
			ttl := int32(binary.BigEndian.Uint32(v))
			if ttl < 0 {
				return w, invalidf("A TTL must be greater or equal to 0, but was %d", ttl)
			}
			if ttl > maxTTL {
				return w, invalidf("ttl is too large. requested (%d) maximum (%d)", ttl, maxTTL)
			}
			w.ttl = ttl
		}
	}
	return w, nil
}

// keyValues evaluates a key restriction: one value, or several for IN.
func keyValues(eval termEval, kr *keyRestriction) ([][]byte, error) {
	if kr.in != nil {
		v, unset, err := eval(kr.in, cqltype.ListOf(kr.col.typ, false), "in("+kr.col.name+")")
		if err != nil {
			return nil, err
		}
		if unset {
			return nil, invalidf("Invalid unset value for column %s", kr.col.name)
		}
		if v == nil {
			return nil, invalidf("Invalid null value for column %s", kr.col.name)
		}
		elems, err := splitCollection(v, false)
		if err != nil {
			return nil, err
		}
		return dedupValues(kr.col.typ, elems), nil
	}
	vals := make([][]byte, 0, len(kr.terms))
	for _, t := range kr.terms {
		v, unset, err := eval(t, kr.col.typ, kr.col.name)
		if err != nil {
			return nil, err
		}
		if unset {
			return nil, invalidf("Invalid unset value for column %s", kr.col.name)
		}
		if v == nil {
			return nil, invalidf("Invalid null value in condition for column %s", kr.col.name)
		}
		vals = append(vals, v)
	}
	return dedupValues(kr.col.typ, vals), nil
}

// dedupValues drops repeated IN values, keeping the first, so that a key
// named twice is written once.
func dedupValues(t *cqltype.Type, vals [][]byte) [][]byte {
	out := vals[:0:0]
	for _, v := range vals {
		dup := false
		for _, o := range out {
			if cqltype.Compare(t, o, v) == 0 {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	return out
}

// product returns every combination of one value per column.
func product(cols [][][]byte) [][][]byte {
	out := [][][]byte{nil}
	for _, vals := range cols {
		next := make([][][]byte, 0, len(out)*len(vals))
		for _, prefix := range out {
			for _, v := range vals {
				next = append(next, append(prefix[:len(prefix):len(prefix)], v))
			}
		}
		out = next
	}
	return out
}

// partitions evaluates the partition keys the statement writes.
func (p *modPlan) partitions(eval termEval) ([]*partitionWrite, error) {
	cols := make([][][]byte, len(p.pk))
	for i := range p.pk {
		vals, err := keyValues(eval, &p.pk[i])
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if err := cqltype.Validate(p.pk[i].col.typ, v); err != nil {
				return nil, toError(err)
			}
		}
		cols[i] = vals
	}
	var out []*partitionWrite
	for _, vals := range product(cols) {
		pk, tok, err := p.layout.partitionKey(vals)
		if err != nil {
			return nil, err
		}
		out = append(out, &partitionWrite{layout: p.layout, tok: tok, pk: pk})
	}
	return out, nil
}

// clusterings evaluates the clustering prefixes the statement names: every
// combination of the values of its restrictions, a multi-column one giving
// several columns at once.
func (p *modPlan) clusterings(eval termEval) ([][][]byte, error) {
	var groups [][][][]byte // per restriction, its alternatives
	for i := 0; i < len(p.ck); i++ {
		kr := &p.ck[i]
		var alts [][][]byte
		if kr.multi != nil {
			var err error
			if alts, err = kr.multi.tuples(eval); err != nil {
				return nil, err
			}
			i += len(kr.multi.cols) - 1
		} else {
			vals, err := keyValues(eval, kr)
			if err != nil {
				return nil, err
			}
			for _, v := range vals {
				alts = append(alts, [][]byte{v})
			}
		}
		groups = append(groups, alts)
	}
	out := [][][]byte{nil}
	for _, alts := range groups {
		next := make([][][]byte, 0, len(out)*len(alts))
		for _, prefix := range out {
			for _, a := range alts {
				next = append(next, append(prefix[:len(prefix):len(prefix)], a...))
			}
		}
		out = next
	}
	for _, ck := range out {
		size, long := 0, false
		for _, v := range ck {
			size += len(v)
			long = long || len(v) > maxKeyLength
		}
		if long {
			return nil, invalidf("Key length of %d is longer than maximum of %d", size, maxKeyLength)
		}
		for j, v := range ck {
			t := p.layout.clustering[j].typ
			if err := cqltype.Validate(t, v); err != nil {
				return nil, toError(err)
			}
			n, err := cqltype.Normalize(t, v)
			if err != nil {
				return nil, toError(err)
			}
			ck[j] = n
		}
	}
	return out, nil
}

// build evaluates the statement and returns what it writes, partition by
// partition. read returns the live view of a row (nil clustering: the
// static row) for operations that read before they write.
func (p *modPlan) build(ctx context.Context, eval termEval, w writeTimes, read rowReader) ([]*partitionWrite, error) {
	w, err := p.times(eval, w)
	if err != nil {
		return nil, err
	}
	parts, err := p.partitions(eval)
	if err != nil {
		return nil, err
	}
	var cks [][][]byte
	if !p.static {
		if cks, err = p.clusterings(eval); err != nil {
			return nil, err
		}
	}
	for _, part := range parts {
		if err := p.buildPartition(ctx, eval, w, read, part, cks); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// rowReader reads the live view of a row of a partition, or of its static
// row, for a read-before-write.
type rowReader func(ctx context.Context, part *partitionWrite, clustering [][]byte, static bool) (*model.Row, error)

func (p *modPlan) buildPartition(ctx context.Context, eval termEval, w writeTimes, read rowReader, part *partitionWrite, cks [][][]byte) error {
	if p.kind == writeDelete && len(p.ops) == 0 {
		return p.deleteRows(eval, w, part, cks)
	}
	if p.static {
		return p.applyOps(ctx, eval, w, read, part, nil, &part.header.Static)
	}
	for _, ck := range cks {
		r, err := part.row(ck)
		if err != nil {
			return err
		}
		if p.kind == writeInsert {
			r.row.Liveness = w.liveness()
		}
		if err := p.applyOps(ctx, eval, w, read, part, ck, &r.row); err != nil {
			return err
		}
	}
	return nil
}

// applyOps applies the operations to the row with clustering ck (or the
// static row) of part: regular columns to dst, static ones to the header's
// static row.
func (p *modPlan) applyOps(ctx context.Context, eval termEval, w writeTimes, read rowReader, part *partitionWrite, ck [][]byte, dst *model.Row) error {
	var cur, curStatic *model.Row
	readDone, staticDone := false, false
	for _, o := range p.ops {
		target, current := dst, &cur
		isStatic := o.col.kind == kindStatic
		if isStatic {
			target, current = &part.header.Static, &curStatic
		}
		if o.needsRead() {
			if isStatic && !staticDone {
				r, err := read(ctx, part, nil, true)
				if err != nil {
					return err
				}
				curStatic, staticDone = r, true
			} else if !isStatic && !readDone {
				r, err := read(ctx, part, ck, false)
				if err != nil {
					return err
				}
				cur, readDone = r, true
			}
		}
		if err := o.apply(eval, w, target, *current); err != nil {
			return err
		}
	}
	return nil
}

// deleteRows writes a DELETE without columns: a row deletion for a full
// clustering, a range tombstone for a prefix or a range, a partition
// deletion when only the partition key is given.
func (p *modPlan) deleteRows(eval termEval, w writeTimes, part *partitionWrite, cks [][][]byte) error {
	n := len(p.layout.clustering)
	prefix := p.layout.prefix(part.tok, part.pk)
	for _, ck := range cks {
		switch {
		case len(ck) == n && n > 0 && !p.hasRange():
			r, err := part.row(ck)
			if err != nil {
				return err
			}
			r.row.Deletion = w.deletion()
		case len(ck) == 0 && !p.hasRange():
			part.header.Deletion = w.deletion()
		default:
			rts, err := p.rangeTombstones(eval, prefix, ck, w)
			if err != nil {
				return err
			}
			part.header.RangeTombstones = append(part.header.RangeTombstones, rts...)
		}
	}
	return nil
}

// rangeTombstones returns the range tombstones deleting the rows under
// the clustering prefix ck within the DELETE's range on the next columns:
// none for a range that holds no row, several when a multi-column bound
// spans columns of both clustering orders (see package restrictions).
func (p *modPlan) rangeTombstones(eval termEval, prefix []byte, ck [][]byte, w writeTimes) ([]model.RangeTombstone, error) {
	var s restrictions.Slice
	for _, side := range []struct {
		b   *sliceBound
		dst **restrictions.Bound
	}{{p.lower, &s.Lower}, {p.upper, &s.Upper}} {
		if side.b == nil {
			continue
		}
		vals, err := p.boundValues(eval, side.b)
		if err != nil {
			return nil, err
		}
		*side.dst = &restrictions.Bound{Values: vals, Inclusive: side.b.inclusive}
	}
	key := func(c [][]byte, kind keys.BoundKind) ([]byte, error) {
		b, err := p.layout.bound(prefix, c, kind)
		if err != nil {
			return nil, toError(err)
		}
		return b, nil
	}
	ranges, err := s.Ranges(key, ck, p.layout.clusteringDesc[len(ck):])
	if err != nil {
		return nil, err
	}
	rts := make([]model.RangeTombstone, 0, len(ranges))
	for _, r := range ranges {
		rt := model.RangeTombstone{Deletion: w.deletion()}
		if rt.Start, err = engine.ClusteringOf(r.Start); err != nil {
			return nil, err
		}
		if rt.End, err = engine.ClusteringOf(r.End); err != nil {
			return nil, err
		}
		rts = append(rts, rt)
	}
	return rts, nil
}

// boundValues evaluates a bound into one value per column, normalized as
// keys are.
func (p *modPlan) boundValues(eval termEval, b *sliceBound) ([][]byte, error) {
	var vals [][]byte
	if b.multi {
		m := &multiRestriction{cols: b.cols, alts: []ast.Term{b.term}}
		tuples, err := m.tuples(eval)
		if err != nil {
			return nil, err
		}
		vals = tuples[0]
	} else {
		c := b.cols[0]
		v, unset, err := eval(b.term, c.typ, c.name)
		if err != nil {
			return nil, err
		}
		if unset {
			return nil, invalidf("Invalid unset value for column %s", c.name)
		}
		if v == nil {
			return nil, invalidf("Invalid null value in condition for column %s", c.name)
		}
		vals = [][]byte{v}
	}
	for i, v := range vals {
		t := b.cols[i].typ
		if err := cqltype.Validate(t, v); err != nil {
			return nil, toError(err)
		}
		n, err := cqltype.Normalize(t, v)
		if err != nil {
			return nil, toError(err)
		}
		vals[i] = n
	}
	return vals, nil
}
