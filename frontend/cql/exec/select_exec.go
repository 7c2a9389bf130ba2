package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/restrictions"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
)

// planOrder checks ORDER BY: clustering columns in key order, all in the
// clustering order or all against it, with the partition key restricted.
func (p *selectPlan) planOrder(st *ast.Select) error {
	if len(st.OrderBy) == 0 {
		return nil
	}
	cols := make([]*column, len(st.OrderBy))
	for i, o := range st.OrderBy {
		if cols[i] = p.t.column(o.Column); cols[i] == nil {
			return invalidf("Undefined column name %s", o.Column)
		}
	}
	// Cassandra's order: the partition restriction first, then the
	// columns (SelectStatement.verifyOrderingIsAllowed, isReversed).
	if p.keys == nil {
		return invalidf("ORDER BY is only supported when the partition key is restricted by an EQ or an IN.")
	}
	next := 0 // the clustering position the next ordering may name
	for i, c := range cols {
		if c.kind != kindClustering {
			return invalidf("Order by is currently only supported on the clustered columns of the PRIMARY KEY, got %s", c.name)
		}
		// Columns restricted by = may be left out: their one value
		// orders nothing.
		for ; next < c.pos; next++ {
			if !p.restrictedByEq(p.t.clustering[next]) {
				return invalidf("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY")
			}
		}
		if next != c.pos {
			return invalidf("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY")
		}
		next++
		p.order = append(p.order, orderKey{pos: c.pos, typ: c.typ, desc: st.OrderBy[i].Desc})
		rev := st.OrderBy[i].Desc != c.desc
		if i > 0 && rev != p.reverse {
			return invalidf("Unsupported order by relation")
		}
		p.reverse = rev
	}
	for _, r := range p.keys {
		// An IN of one value is an EQ in Cassandra; IN ? stays an IN.
		if r.op == ast.OpIn && (r.in == nil || len(r.in) > 1) {
			p.orderAcross = true
		}
	}
	return nil
}

// planLimits records the receivers of LIMIT and PER PARTITION LIMIT.
func (p *selectPlan) planLimits(st *ast.Select) error {
	p.limit, p.perPartLim = st.Limit, st.PerPartitionLimit
	p.recv(st.Limit, "[limit]", cqltype.IntType)
	p.recv(st.PerPartitionLimit, "[per_partition_limit]", cqltype.IntType)
	return nil
}

// orderKey is one ORDER BY column: its clustering position, type and
// direction.
type orderKey struct {
	pos  int
	typ  *cqltype.Type
	desc bool
}

// compareOrder compares two rows' clustering values by the ORDER BY
// columns only, as Cassandra's post-query ordering of rows from several
// partitions does: rows equal on them keep their read order.
func (p *selectPlan) compareOrder(a, b [][]byte) int {
	for _, k := range p.order {
		var x, y []byte
		if k.pos < len(a) {
			x = a[k.pos]
		}
		if k.pos < len(b) {
			y = b[k.pos]
		}
		var c int
		switch {
		case x == nil || y == nil: // a static row alone: null sorts first
			c = cmpBool(x != nil, y != nil)
		default:
			c = cqltype.Compare(k.typ, x, y)
		}
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// restrictedByEq reports whether a relation restricts c to one value: =,
// an IN of one value, or a multi-column = (StatementRestrictions'
// isColumnRestrictedByEq).
func (p *selectPlan) restrictedByEq(c *column) bool {
	for _, rs := range [][]*restriction{p.keys, p.prefix, p.filters} {
		for _, r := range rs {
			if r == nil || r.mapKey != nil || !slices.Contains(r.cols, c) {
				continue
			}
			if r.op == ast.OpEq || (r.op == ast.OpIn && len(r.in) == 1) {
				return true
			}
		}
	}
	return false
}

// evalLimit evaluates a limit term: 0 when absent or unset, otherwise > 0.
// Cassandra 4.0 and 4.1 check LIMIT and PER PARTITION LIMIT with the same
// getLimit, so both answer with LIMIT's words.
func (x *execCtx) evalLimit(t ast.Term, name string) (int, error) {
	if t == nil {
		return 0, nil
	}
	v, unset, err := x.eval(cqltype.IntType, t, name)
	if err != nil {
		return 0, err
	}
	if unset {
		return 0, nil // an unset limit is no limit
	}
	if v == nil {
		return 0, invalidf("Invalid null value of limit")
	}
	if len(v) != 4 {
		return 0, invalidf("Invalid limit value")
	}
	n := int32(binary.BigEndian.Uint32(v))
	if n <= 0 {
		return 0, invalidf("LIMIT must be strictly positive")
	}
	return int(n), nil
}

// reader is one execution of a select plan: it feeds rows through the
// filters and limits into the result, and knows where a page ends.
type reader struct {
	p *selectPlan
	x *execCtx

	filters []*boundRestriction

	// productChecked: the clustering IN alternatives passed the
	// guardrails.
	productChecked bool

	pageSize  int // 0: no paging
	remaining int // rows LIMIT still allows; 0 once exhausted when limited
	limited   bool
	perPart   int

	// The partition being read and the rows it has given.
	partPrefix []byte
	partRows   int

	out     *Result
	rows    int    // rows in this page
	lastKey []byte // the storage key of the page's last row
	full    bool   // the page or the limit is reached

	groups *grouper // aggregates, nil otherwise
	// sortAcross: ORDER BY over several partitions; rows are sorted, and
	// LIMIT applied, once all are read (without paging).
	sortAcross bool
	sorted     []sortedRow
}

type sortedRow struct {
	ck  [][]byte // the row's clustering values
	row [][]byte
}

// execute runs the plan.
func (p *selectPlan) execute(ctx context.Context, x *execCtx) (*Result, error) {
	rd := &reader{p: p, x: x, out: &Result{Kind: ResultRows, Columns: p.sel.columns}}
	var err error
	if rd.remaining, err = x.evalLimit(p.limit, "[limit]"); err != nil {
		return nil, err
	}
	rd.limited = rd.remaining > 0
	if rd.perPart, err = x.evalLimit(p.perPartLim, "[per_partition_limit]"); err != nil {
		return nil, err
	}
	if p.distinct {
		rd.perPart = 1
	}
	if rd.filters, err = p.bindFilters(x); err != nil {
		return nil, err
	}
	if p.sel.aggregate {
		rd.groups = &grouper{sel: p.sel, n: p.groupBy}
		if p.groupBy > 0 {
			// The limits count groups, not rows.
			rd.groups.limit = rd.remaining
			if !p.distinct {
				rd.groups.perPart, rd.perPart = rd.perPart, 0
			}
		}
	} else if x.params.PageSize > 0 {
		rd.pageSize = x.params.PageSize
	}
	st, err := decodePagingState(x.params.PagingState)
	if err != nil {
		return nil, err
	}
	if st != nil {
		if rd.groups != nil {
			return nil, invalidf("Invalid paging state: aggregate queries return one page")
		}
		rd.remaining, rd.partRows = st.remaining, st.partRows
		rd.limited = st.remaining > 0
	}
	if p.keys != nil {
		err = rd.readKeys(ctx, st)
	} else {
		err = rd.readRange(ctx, st)
	}
	if err != nil {
		return nil, err
	}
	return rd.finish()
}

// finish turns what was read into the result: groups folded, rows sorted
// across partitions, and the paging state of an incomplete page.
func (rd *reader) finish() (*Result, error) {
	if rd.groups != nil {
		if rd.sortAcross {
			rd.groups.order = rd.p.compareOrder
		}
		rows, err := rd.groups.finish()
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if err := rd.appendRow(r); err != nil {
				return nil, err
			}
		}
		return rd.out, nil
	}
	if rd.sortAcross {
		slices.SortStableFunc(rd.sorted, func(a, b sortedRow) int { return rd.p.compareOrder(a.ck, b.ck) })
		if rd.limited && len(rd.sorted) > rd.remaining {
			rd.sorted = rd.sorted[:rd.remaining]
		}
		for _, r := range rd.sorted {
			if err := rd.appendRow(r.row); err != nil {
				return nil, err
			}
		}
	}
	if rd.full && rd.pageSize > 0 && (!rd.limited || rd.remaining > 0) {
		rd.out.PagingState = encodePagingState(&pagingState{key: rd.lastKey, remaining: rd.remaining, partRows: rd.partRows})
	}
	return rd.out, nil
}

// appendRow adds a computed row to the result, as JSON for SELECT JSON.
func (rd *reader) appendRow(row [][]byte) error {
	if rd.p.sel.json {
		j, err := rd.p.sel.toJSON(row)
		if err != nil {
			return err
		}
		row = [][]byte{j}
	}
	rd.out.Rows = append(rd.out.Rows, row)
	return nil
}

// startPartition notes the partition the following rows belong to.
func (rd *reader) startPartition(prefix []byte) {
	if !bytes.Equal(prefix, rd.partPrefix) {
		rd.partPrefix = prefix
		rd.partRows = 0
	}
}

// partitionDone reports whether PER PARTITION LIMIT stops the partition.
func (rd *reader) partitionDone() bool { return rd.perPart > 0 && rd.partRows >= rd.perPart }

// emit passes a row through the filters into the result. It reports
// whether the page or the limit is full.
func (rd *reader) emit(r *rowCtx) (bool, error) {
	if rd.full || rd.partitionDone() {
		return rd.full, nil
	}
	for _, f := range rd.filters {
		ok, err := f.matches(r)
		if err != nil || !ok {
			return false, err
		}
	}
	rd.partRows++
	rd.lastKey = r.key
	if rd.groups != nil {
		return false, rd.groups.add(rd.x, r)
	}
	row := make([][]byte, len(rd.p.sel.items))
	for i, s := range rd.p.sel.items {
		v, err := s.eval(rd.x, r)
		if err != nil {
			return false, err
		}
		row[i] = v
	}
	if rd.sortAcross {
		rd.sorted = append(rd.sorted, sortedRow{ck: r.ck, row: row})
		return false, nil
	}
	if err := rd.appendRow(row); err != nil {
		return false, err
	}
	rd.rows++
	if rd.limited {
		rd.remaining--
		if rd.remaining == 0 {
			rd.full = true
		}
	}
	if rd.pageSize > 0 && rd.rows >= rd.pageSize {
		rd.full = true
	}
	return rd.full, nil
}

// want returns how many live rows a read should ask the engine for: what
// the page and the limit still take, unless filters or per-partition
// limits make that unknowable (0: all).
func (rd *reader) want() int {
	if len(rd.filters) > 0 || rd.groups != nil || rd.sortAcross {
		return 0
	}
	n := 0
	if rd.pageSize > 0 {
		n = rd.pageSize - rd.rows
	}
	if rd.limited && (n == 0 || rd.remaining < n) {
		n = rd.remaining
	}
	if rd.perPart > 0 && (n == 0 || rd.perPart-rd.partRows < n) {
		n = rd.perPart - rd.partRows
	}
	return n
}

// partitionKeys evaluates the partition key restrictions: every
// combination of the = and IN values, in storage order, without repeats.
func (rd *reader) partitionKeys(ctx context.Context) ([]partKey, error) {
	cols := make([][][]byte, len(rd.p.keys))
	for i, r := range rd.p.keys {
		vs, err := rd.values(r)
		if err != nil {
			return nil, err
		}
		cols[i] = vs
	}
	g := &rd.x.e.cfg.Guardrails
	if err := g.checkCartesianProduct(ctx, "partition key", cols); err != nil {
		return nil, err
	}
	if err := g.checkPartitionKeys(ctx, rd.p.t.name(), productSize(cols)); err != nil {
		return nil, err
	}
	var out []partKey
	for _, vals := range product(cols) {
		pk, tok, err := rd.p.t.partitionKey(vals)
		if err != nil {
			return nil, err
		}
		out = append(out, partKey{pk: pk, token: tok, prefix: rd.p.t.prefix(tok, pk), values: vals})
	}
	// Partitions come in the order of their key values, component by
	// component, as Cassandra builds them (a sorted set of keys), not in
	// token order.
	byValue := func(a, b partKey) int {
		for i, c := range rd.p.t.partition {
			if n := cqltype.Compare(c.typ, a.values[i], b.values[i]); n != 0 {
				return n
			}
		}
		return 0
	}
	slices.SortFunc(out, byValue)
	return slices.CompactFunc(out, func(a, b partKey) bool { return byValue(a, b) == 0 }), nil
}

type partKey struct {
	token      int64
	pk, prefix []byte
	values     [][]byte
}

// values evaluates the right side of an = or IN restriction of one column
// (for a multi-column relation: tuples) into its non-null values.
func (rd *reader) values(r *restriction) ([][]byte, error) {
	t, name := r.cols[0].typ, r.cols[0].name
	if r.multi {
		types := make([]*cqltype.Type, len(r.cols))
		for i, c := range r.cols {
			types[i] = c.typ
		}
		t = cqltype.TupleOf(types...)
	}
	var out [][]byte
	add := func(v []byte, unset bool) error {
		if unset {
			return invalidf("Invalid unset value for column %s", name)
		}
		if v == nil {
			if r.op == ast.OpIn {
				return nil // IN ignores nulls, as Cassandra's
			}
			return invalidf("Invalid null value in condition for column %s", name)
		}
		out = append(out, v)
		return nil
	}
	if r.op != ast.OpIn {
		v, unset, err := rd.x.eval(t, r.value, name)
		if err != nil {
			return nil, err
		}
		return out, add(v, unset)
	}
	if r.in == nil { // IN ?
		v, unset, err := rd.x.eval(cqltype.ListOf(t, false), r.value, name)
		if err != nil {
			return nil, err
		}
		if unset || v == nil {
			return nil, invalidf("Invalid null value for IN restriction on %s", name)
		}
		es, err := splitCollection(v, false)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if err := add(e, false); err != nil {
				return nil, err
			}
		}
		return dedupValues(t, out), nil
	}
	for _, term := range r.in {
		v, unset, err := rd.x.eval(t, term, name)
		if err != nil {
			return nil, err
		}
		if err := add(v, unset); err != nil {
			return nil, err
		}
	}
	return dedupValues(t, out), nil
}

// clusteringRanges returns the row key ranges [start, end) of a partition
// that the clustering prefix and slice select, in clustering order (nil
// bounds are the partition's edges). nil, nil means the whole partition.
func (rd *reader) clusteringRanges(ctx context.Context, prefix []byte) ([][2][]byte, error) {
	p := rd.p
	if len(p.prefix) == 0 && p.slice == nil {
		return nil, nil
	}
	// Each prefix restriction gives alternatives of one or more columns.
	alts := make([][][]byte, len(p.prefix))
	for i, r := range p.prefix {
		vs, err := rd.values(r)
		if err != nil {
			return nil, err
		}
		alts[i] = vs
	}
	if !rd.productChecked {
		// Every partition has the same alternatives: check them once.
		if err := rd.x.e.cfg.Guardrails.checkCartesianProduct(ctx, "clustering key", alts); err != nil {
			return nil, err
		}
		rd.productChecked = true
	}
	var out [][2][]byte
	for _, combo := range product(alts) {
		var comps [][]byte
		for i, v := range combo {
			if p.prefix[i].multi {
				fields, err := splitTuple(v, len(p.prefix[i].cols))
				if err != nil {
					return nil, err
				}
				comps = append(comps, fields...)
			} else {
				comps = append(comps, v)
			}
		}
		rgs, err := rd.sliceRanges(prefix, comps)
		if err != nil {
			return nil, err
		}
		out = append(out, rgs...)
	}
	if len(out) == 0 {
		return [][2][]byte{}, nil
	}
	// Alternatives come in value order; storage order differs for
	// descending columns.
	slices.SortFunc(out, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	return out, nil
}

// sliceRanges returns the key ranges of the rows with the clustering
// prefix comps, narrowed by the slice; none when they hold nothing.
func (rd *reader) sliceRanges(prefix []byte, comps [][]byte) ([][2][]byte, error) {
	l := rd.p.t
	var s restrictions.Slice
	if sl := rd.p.slice; sl != nil {
		for _, side := range []struct {
			r   *restriction
			dst **restrictions.Bound
		}{{sl.lower, &s.Lower}, {sl.upper, &s.Upper}} {
			if side.r == nil {
				continue
			}
			vals, err := rd.sliceValues(side.r)
			if err != nil {
				return nil, err
			}
			*side.dst = &restrictions.Bound{Values: vals, Inclusive: side.r.op == ast.OpGte || side.r.op == ast.OpLte}
		}
	}
	key := func(ck [][]byte, kind keys.BoundKind) ([]byte, error) {
		b, err := l.bound(prefix, ck, kind)
		if err != nil {
			return nil, serverError(err)
		}
		return b, nil
	}
	rgs, err := s.Ranges(key, comps, l.clusteringDesc[len(comps):])
	if err != nil {
		return nil, err
	}
	out := make([][2][]byte, len(rgs))
	for i, r := range rgs {
		out[i] = [2][]byte{r.Start, r.End}
	}
	return out, nil
}

// sliceValues evaluates a slice bound into its column values: one, or a
// tuple's components.
func (rd *reader) sliceValues(r *restriction) ([][]byte, error) {
	vs, err := rd.values(&restriction{cols: r.cols, op: ast.OpEq, value: r.value, multi: r.multi})
	if err != nil {
		return nil, err
	}
	if !r.multi {
		return vs, nil
	}
	return splitTuple(vs[0], len(r.cols))
}

// splitTuple splits a serialized tuple of n components; a component may not
// be null in a key.
func splitTuple(v []byte, n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	for len(v) > 0 && len(out) < n {
		if len(v) < 4 {
			return nil, invalidf("Invalid tuple value")
		}
		l := int32(binary.BigEndian.Uint32(v))
		v = v[4:]
		if l < 0 || int(l) > len(v) {
			return nil, invalidf("Invalid null value in tuple")
		}
		out = append(out, v[:l])
		v = v[l:]
	}
	if len(out) != n {
		return nil, invalidf("Expected %d elements in value tuple, but got %d", n, len(out))
	}
	return out, nil
}

// readKeys reads the partitions the key restrictions name.
func (rd *reader) readKeys(ctx context.Context, st *pagingState) error {
	pks, err := rd.partitionKeys(ctx)
	if err != nil {
		return err
	}
	if rd.p.token.restricted() {
		first, last, err := rd.p.token.eval(rd.x, rd.p.t.keyColumns())
		if err != nil {
			return err
		}
		pks = slices.DeleteFunc(pks, func(k partKey) bool { return k.token < first || k.token > last })
	}
	// Cassandra pages only when the page is smaller than the LIMIT
	// (SelectStatement.execute), and refuses to page rows it sorts.
	paged := rd.pageSize > 0 && !(rd.limited && rd.remaining <= rd.pageSize)
	if rd.p.orderAcross && paged {
		return invalidf("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query")
	}
	rd.sortAcross = rd.p.orderAcross && len(pks) > 1
	start := 0
	var after []byte
	if st != nil {
		n, err := keys.PartitionPrefixLen(st.key)
		if err != nil {
			return invalidf("Invalid paging state")
		}
		i := slices.IndexFunc(pks, func(k partKey) bool { return bytes.Equal(k.prefix, st.key[:n]) })
		if i < 0 {
			return invalidf("Invalid paging state: it does not belong to this query")
		}
		start, after = i, st.key
		rd.partPrefix = pks[i].prefix
	}
	for i := start; i < len(pks) && !rd.full; i++ {
		k := pks[i]
		var resume []byte
		if i == start {
			resume = after
		}
		if err := rd.readPartition(ctx, k, resume); err != nil {
			return err
		}
	}
	return nil
}

// readPartition reads the selected rows of one partition, after the key
// resume if a page ended inside it.
func (rd *reader) readPartition(ctx context.Context, k partKey, resume []byte) error {
	// A statement past its timeout, or whose client is gone, stops
	// between partitions: reading from memory never looks at ctx.
	if err := ctx.Err(); err != nil {
		return toError(err)
	}
	rd.startPartition(k.prefix)
	if resume != nil && bytes.Equal(resume, keys.AppendPartitionEnd(nil, k.prefix)) {
		return nil // the page ended on this partition's static row
	}
	ranges, err := rd.clusteringRanges(ctx, k.prefix)
	if err != nil {
		return err
	}
	if ranges == nil {
		ranges = [][2][]byte{{nil, nil}}
	}
	if rd.p.reverse {
		slices.Reverse(ranges)
	}
	emitted := rd.partRows > 0 || resume != nil
	var static *model.Row
	staticLive := false
	for _, rg := range ranges {
		if rd.full || rd.partitionDone() {
			return nil
		}
		start, end := rg[0], rg[1]
		if resume != nil {
			if rd.p.reverse {
				end = minKeyOpen(end, resume)
			} else {
				start = keys.Max(start, append(slices.Clone(resume), 0))
			}
			if start != nil && end != nil && bytes.Compare(start, end) >= 0 {
				continue
			}
		}
		part, err := rd.x.e.eng.Read(ctx, engine.Slice{
			Table: rd.p.t.id, Key: k.pk, Start: start, End: end,
			Reverse: rd.p.reverse, Limit: rd.want(), Now: rd.x.nowSec,
		})
		if err != nil {
			return toError(err)
		}
		if part.StaticLive {
			static, staticLive = &part.Header.Static, true
		}
		for i := range part.Rows {
			if !rd.p.t.rowLive(&part.Rows[i].Row, rd.x.nowSec) {
				continue
			}
			ck, err := rd.p.t.clusteringValues(part.Rows[i].Key)
			if err != nil {
				return serverError(err)
			}
			r := &rowCtx{token: k.token, pk: k.values, ck: ck, static: static, row: &part.Rows[i].Row, key: part.Rows[i].Key}
			emitted = true
			if full, err := rd.emit(r); err != nil || full {
				return err
			}
		}
	}
	if !emitted && staticLive && !rd.p.clusteringRestricted {
		_, err := rd.emit(&rowCtx{token: k.token, pk: k.values, static: static, key: keys.AppendPartitionEnd(nil, k.prefix)})
		return err
	}
	return nil
}

// minKeyOpen is keys.Min where nil is the open upper end.
func minKeyOpen(end, k []byte) []byte {
	if end == nil {
		return k
	}
	return keys.Min(end, k)
}

// readRange reads partitions by token: a token range, or the whole ring.
// The clustering restrictions are then checked on each row.
func (rd *reader) readRange(ctx context.Context, st *pagingState) error {
	first, last, err := rd.p.token.eval(rd.x, rd.p.t.keyColumns())
	if err != nil || first > last {
		return err
	}
	var after []byte
	if st != nil {
		after = st.key
		if n, err := keys.PartitionPrefixLen(after); err == nil {
			rd.partPrefix = after[:n]
		}
	}
	rangeCache := map[string][][2][]byte{}
	for !rd.full {
		if err := ctx.Err(); err != nil {
			return toError(err)
		}
		chunk := rd.want()
		if chunk == 0 || chunk > 1000 {
			chunk = 1000
		}
		page, err := rd.x.e.eng.Scan(ctx, engine.Scan{Table: rd.p.t.id, First: first, Last: last, After: after, Limit: chunk, Now: rd.x.nowSec})
		if err != nil {
			return toError(err)
		}
		for i := range page.Partitions {
			part := &page.Partitions[i]
			if err := rd.scanPartition(ctx, part, rangeCache); err != nil || rd.full {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		after = page.Next
	}
	return nil
}

// scanPartition feeds the rows of a scanned partition through the
// clustering restrictions.
func (rd *reader) scanPartition(ctx context.Context, part *engine.Partition, cache map[string][][2][]byte) error {
	pkVals, err := rd.p.t.partitionValues(part.Key)
	if err != nil {
		return serverError(err)
	}
	prefix := rd.p.t.prefix(part.Token, part.Key)
	rd.startPartition(prefix)
	var static *model.Row
	if part.StaticLive {
		static = &part.Header.Static
	}
	ranges, ok := cache[string(prefix)]
	if !ok {
		clear(cache) // one partition's ranges at a time
		if ranges, err = rd.clusteringRanges(ctx, prefix); err != nil {
			return err
		}
		cache[string(prefix)] = ranges
	}
	for i := range part.Rows {
		row := &part.Rows[i]
		if ranges != nil && !inRanges(ranges, row.Key) || !rd.p.t.rowLive(&row.Row, rd.x.nowSec) {
			continue
		}
		ck, err := rd.p.t.clusteringValues(row.Key)
		if err != nil {
			return serverError(err)
		}
		if full, err := rd.emit(&rowCtx{token: part.Token, pk: pkVals, ck: ck, static: static, row: &row.Row, key: row.Key}); err != nil || full {
			return err
		}
	}
	if len(part.Rows) == 0 && part.StaticLive && !rd.p.clusteringRestricted {
		_, err := rd.emit(&rowCtx{token: part.Token, pk: pkVals, static: static, key: keys.AppendPartitionEnd(nil, prefix)})
		return err
	}
	return nil
}

// inRanges reports whether key lies in one of the ranges.
func inRanges(ranges [][2][]byte, key []byte) bool {
	for _, rg := range ranges {
		if (rg[0] == nil || bytes.Compare(key, rg[0]) >= 0) && (rg[1] == nil || bytes.Compare(key, rg[1]) < 0) {
			return true
		}
	}
	return false
}
