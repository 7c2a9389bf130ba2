package parse

import (
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// selectStmt parses
//
//	SELECT [JSON] [DISTINCT] (* | selector [AS alias], ...) FROM t
//	  [WHERE relations] [GROUP BY c, ...] [ORDER BY c [ASC|DESC], ...]
//	  [PER PARTITION LIMIT n] [LIMIT n] [ALLOW FILTERING]
func (p *parser) selectStmt() *ast.Select {
	p.expectKw("select")
	s := &ast.Select{}
	// json and distinct are also column names: they are keywords only
	// when a select clause follows.
	if p.isKw(p.tok(), "json") && p.selectClauseFollows(1) {
		p.next()
		s.JSON = true
	}
	if p.isKw(p.tok(), "distinct") && p.selectClauseFollows(1) {
		p.next()
		s.Distinct = true
	}
	if !p.acceptPunct("*") {
		for {
			s.Selectors = append(s.Selectors, p.selector())
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	p.expectKw("from")
	s.Table = p.qualifiedName("table")
	if p.acceptKw("where") {
		s.Where = p.relations()
	}
	if p.acceptKw("group") {
		p.expectKw("by")
		s.GroupBy = p.identList()
	}
	if p.acceptKw("order") {
		p.expectKw("by")
		s.OrderBy = p.orderings()
	}
	if p.isKw(p.tok(), "per") {
		p.next()
		p.expectKw("partition")
		p.expectKw("limit")
		s.PerPartitionLimit = p.intValue()
	}
	if p.acceptKw("limit") {
		s.Limit = p.intValue()
	}
	if p.acceptKw("allow") {
		p.expectKw("filtering")
		s.AllowFiltering = true
	}
	s.Binds = p.binds
	return s
}

// selectClauseFollows reports whether the token n ahead can start a
// select clause, which tells SELECT JSON x from a column named json.
func (p *parser) selectClauseFollows(n int) bool {
	t := p.peek(n)
	switch {
	case t.kind == tEOF:
		return false
	case t.kind == tPunct:
		switch t.text {
		case "*", "(", "[", "{", "?", ":", "-":
			return true
		}
		return false
	case p.isKw(t, "from"):
		return false
	case p.isKw(t, "as"):
		// SELECT json AS j FROM t: an alias of the column json.
		return !p.isIdent(p.peek(n+1)) || p.isKw(p.peek(n+2), "as") || p.isPunct(p.peek(n+2), ",")
	}
	return true
}

// orderings parses c [ASC|DESC] (, c [ASC|DESC])* .
func (p *parser) orderings() []ast.Ordering {
	var list []ast.Ordering
	for {
		o := ast.Ordering{Column: p.ident()}
		if p.acceptKw("desc") {
			o.Desc = true
		} else {
			p.acceptKw("asc")
		}
		list = append(list, o)
		if !p.acceptPunct(",") {
			return list
		}
	}
}

// intValue parses an integer literal or a marker (LIMIT, USING).
func (p *parser) intValue() ast.Term {
	t := p.tok()
	if t.kind == tInteger {
		p.next()
		return &ast.Literal{Kind: ast.LitInteger, Text: t.text, Pos: t.pos}
	}
	if p.isMarker() {
		return p.marker()
	}
	p.noViable(t)
	return nil
}

// selector parses one selector with its optional alias.
func (p *parser) selector() ast.Selector {
	s := ast.Selector{Expr: p.selectable()}
	if p.acceptKw("as") {
		s.Alias = p.ident()
	}
	return s
}

// selectable parses a selector expression: Cassandra 4.0's
// selectionAddition, sums of products of unary operands, left-associative.
func (p *parser) selectable() ast.Selectable {
	p.enter()
	defer p.leave()
	s := p.selectionProduct()
	for t := p.tok(); p.isPunct(t, "+") || p.isPunct(t, "-"); t = p.tok() {
		p.next()
		s = &ast.OpSel{Op: t.text[0], Left: s, Right: p.selectionProduct()}
	}
	return s
}

// selectionProduct is selectionMultiplication: operands joined by * / %.
func (p *parser) selectionProduct() ast.Selectable {
	s := p.selectionUnary()
	for t := p.tok(); p.isPunct(t, "*") || p.isPunct(t, "/") || p.isPunct(t, "%"); t = p.tok() {
		p.next()
		s = &ast.OpSel{Op: t.text[0], Left: s, Right: p.selectionUnary()}
	}
	return s
}

// selectionUnary is selectionGroup: an operand, negated by a leading '-'.
func (p *parser) selectionUnary() ast.Selectable {
	p.enter()
	defer p.leave()
	if p.acceptPunct("-") {
		return &ast.OpSel{Op: '-', Right: p.selectionUnary()}
	}
	return p.selectionOperand()
}

// selectionOperand parses an operand with its .field and [key] modifiers.
func (p *parser) selectionOperand() ast.Selectable {
	s := p.selectableGroup()
	for {
		switch {
		case p.isPunct(p.tok(), ".") && p.isIdent(p.peek(1)):
			p.next()
			s = &ast.FieldSel{Arg: s, Field: p.ident()}
		case p.acceptPunct("["):
			s = &ast.ElemSel{Arg: s, Key: p.term()}
			p.expectPunct("]")
		default:
			return s
		}
	}
}

func (p *parser) selectableGroup() ast.Selectable {
	t := p.tok()
	if p.isPunct(p.peek(1), "(") {
		switch t.word {
		case "count":
			if t.kind == tIdent && p.isPunct(p.peek(2), "*") {
				p.next()
				p.next()
				p.next()
				p.expectPunct(")")
				return &ast.CountRows{}
			}
		case "writetime", "ttl":
			if t.kind == tIdent {
				p.next()
				p.next()
				c := p.ident()
				p.expectPunct(")")
				if t.word == "ttl" {
					return &ast.TTLSel{Column: c}
				}
				return &ast.WriteTimeSel{Column: c}
			}
		case "cast":
			if t.kind == tIdent {
				p.next()
				p.next()
				arg := p.selectable()
				p.expectKw("as")
				typ := p.typ()
				p.expectPunct(")")
				return &ast.CastSel{Arg: arg, Type: typ}
			}
		}
	}
	if p.isCallStart() {
		ks, name := p.functionName()
		p.expectPunct("(")
		f := &ast.FuncSel{Keyspace: ks, Name: name}
		if !p.acceptPunct(")") {
			for {
				f.Args = append(f.Args, p.selectable())
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct(")")
		}
		return f
	}
	if p.isIdent(t) && p.literalWord(t) == "" {
		return &ast.ColumnSel{Name: p.ident()}
	}
	if p.isPunct(t, "(") {
		if h := p.tryHint(); h != nil {
			return &ast.TermSel{Term: h}
		}
		// A selector in parentheses is that selector (Cassandra's
		// selectionTupleOrNestedSelector); a tuple is read as a term.
		save := p.i
		p.next()
		s := p.selectable()
		if p.acceptPunct(")") {
			return s
		}
		p.i = save
	}
	return &ast.TermSel{Term: p.term()}
}

// literalWord returns the lower-case word when t is a literal spelled as
// a word (true, false, null, NaN, Infinity), or "".
func (p *parser) literalWord(t token) string {
	if t.kind != tIdent {
		return ""
	}
	switch w := t.word; w {
	case "true", "false", "null", "nan", "infinity":
		return w
	}
	return ""
}

// relations parses relation (AND relation)* .
func (p *parser) relations() []ast.Relation {
	var list []ast.Relation
	for {
		list = p.relation(list)
		if !p.acceptKw("and") {
			return list
		}
	}
}

// relation parses one WHERE relation and appends it to list (a
// parenthesized relation may hold several).
func (p *parser) relation(list []ast.Relation) []ast.Relation {
	p.enter()
	defer p.leave()
	t := p.tok()
	switch {
	case p.isKw(t, "token") && p.isPunct(p.peek(1), "("):
		p.next()
		p.next()
		r := ast.Relation{Token: true, Columns: p.identList()}
		p.expectPunct(")")
		r.Op = p.compareOp()
		r.Value = p.term()
		return append(list, r)
	case p.isPunct(t, "("):
		if !p.isIdent(p.peek(1)) || !(p.isPunct(p.peek(2), ",") || p.isPunct(p.peek(2), ")")) {
			// ( relation ), as Cassandra's grammar allows.
			p.next()
			list = p.relation(list)
			p.expectPunct(")")
			return list
		}
		p.next()
		r := ast.Relation{Multi: true, Columns: p.identList()}
		p.expectPunct(")")
		if p.acceptKw("in") {
			r.Op = ast.OpIn
			r.Value = p.multiInValues()
			return append(list, r)
		}
		r.Op = p.compareOp()
		if p.isMarker() {
			r.Value = p.marker()
		} else {
			r.Value = p.tupleLiteral()
		}
		return append(list, r)
	}
	r := ast.Relation{Columns: []string{p.ident()}}
	if p.acceptPunct("[") {
		r.MapKey = p.term()
		p.expectPunct("]")
		r.Op = p.compareOp()
		r.Value = p.term()
		return append(list, r)
	}
	switch {
	case p.acceptKw("in"):
		r.Op = ast.OpIn
		r.Value = p.inValues()
	case p.acceptKw("contains"):
		r.Op = ast.OpContains
		if p.acceptKw("key") {
			r.Op = ast.OpContainsKey
		}
		r.Value = p.term()
	case p.acceptKw("like"):
		r.Op = ast.OpLike
		r.Value = p.term()
	case p.acceptKw("is"):
		p.expectKw("not")
		p.expectKw("null")
		r.Op = ast.OpIsNotNull
	default:
		r.Op = p.compareOp()
		r.Value = p.term()
	}
	return append(list, r)
}

// compareOps are the operators of compareOp.
var compareOps = map[string]ast.Operator{
	"=": ast.OpEq, "<": ast.OpLt, "<=": ast.OpLte,
	">": ast.OpGt, ">=": ast.OpGte, "!=": ast.OpNe,
}

// compareOp parses = < <= > >= != .
func (p *parser) compareOp() ast.Operator {
	t := p.tok()
	if t.kind == tPunct {
		if op, ok := compareOps[t.text]; ok {
			p.next()
			return op
		}
	}
	p.noViable(t)
	return 0
}

// inValues parses the right side of a single-column IN: (t, ...), () or
// a marker.
func (p *parser) inValues() ast.Term {
	if p.isMarker() {
		return p.marker()
	}
	p.expectPunct("(")
	tup := &ast.Tuple{}
	if !p.acceptPunct(")") {
		tup.Elems = p.termList()
		p.expectPunct(")")
	}
	return tup
}

// multiInValues parses the right side of (a, b) IN: ((1, 2), ...),
// (?, ...), () or a marker.
func (p *parser) multiInValues() ast.Term {
	if p.isMarker() {
		return p.marker()
	}
	p.expectPunct("(")
	tup := &ast.Tuple{}
	if p.acceptPunct(")") {
		return tup
	}
	for {
		if p.isMarker() {
			tup.Elems = append(tup.Elems, p.marker())
		} else {
			tup.Elems = append(tup.Elems, p.tupleLiteral())
		}
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
	return tup
}

// tupleLiteral parses (t, ...).
func (p *parser) tupleLiteral() *ast.Tuple {
	p.expectPunct("(")
	tup := &ast.Tuple{Elems: p.termList()}
	p.expectPunct(")")
	return tup
}

// using parses USING TTL t AND TIMESTAMP t in either order; the caller
// has checked for USING. timestampOnly is set for DELETE, which takes no
// TTL.
func (p *parser) using(u *ast.Using, timestampOnly bool) {
	p.expectKw("using")
	for {
		t := p.tok()
		switch {
		case p.isKw(t, "timestamp"):
			p.next()
			if u.Timestamp != nil {
				p.failf(t, "Multiple definitions of TIMESTAMP in USING")
			}
			u.Timestamp = p.intValue()
		case p.isKw(t, "ttl") && !timestampOnly:
			p.next()
			if u.TTL != nil {
				p.failf(t, "Multiple definitions of TTL in USING")
			}
			u.TTL = p.intValue()
		default:
			if timestampOnly {
				p.failf(t, "mismatched input %s expecting K_TIMESTAMP", p.quote(t))
			}
			p.noViable(t)
		}
		if !p.acceptKw("and") {
			return
		}
	}
}

// insert parses
//
//	INSERT INTO t (c, ...) VALUES (v, ...) [IF NOT EXISTS] [USING ...]
//	INSERT INTO t JSON v [DEFAULT NULL|UNSET] [IF NOT EXISTS] [USING ...]
func (p *parser) insert() *ast.Insert {
	p.expectKw("insert")
	p.expectKw("into")
	s := &ast.Insert{Table: p.qualifiedName("table")}
	if p.acceptKw("json") {
		t := p.tok()
		switch {
		case t.kind == tString:
			p.next()
			s.JSON = &ast.Literal{Kind: ast.LitString, Text: t.text, Pos: t.pos}
		case p.isMarker():
			s.JSON = p.marker()
		default:
			p.noViable(t)
		}
		if p.acceptKw("default") {
			switch {
			case p.acceptKw("unset"):
				s.DefaultUnset = true
			case p.acceptKw("null"):
			default:
				p.noViable(p.tok())
			}
		}
	} else {
		// As many values as columns is checked by the executor, where
		// Cassandra checks it (ParsedInsert.prepareInternal, Invalid).
		p.expectPunct("(")
		s.Columns = p.identList()
		p.expectPunct(")")
		p.expectKw("values")
		p.expectPunct("(")
		s.Values = p.termList()
		p.expectPunct(")")
	}
	s.IfNotExists = p.ifNotExists()
	if p.isKw(p.tok(), "using") {
		p.using(&s.Using, false)
	}
	s.Binds = p.binds
	return s
}

// update parses
//
//	UPDATE t [USING ...] SET assignment, ... WHERE relations
//	  [IF EXISTS | IF condition AND ...]
func (p *parser) update() *ast.Update {
	p.expectKw("update")
	s := &ast.Update{Table: p.qualifiedName("table")}
	if p.isKw(p.tok(), "using") {
		p.using(&s.Using, false)
	}
	p.expectKw("set")
	for {
		s.Set = append(s.Set, p.assignment())
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectKw("where")
	s.Where = p.relations()
	s.IfExists, s.If = p.conditions()
	s.Binds = p.binds
	return s
}

// assignment parses one SET item.
func (p *parser) assignment() ast.Assignment {
	a := ast.Assignment{Column: p.ident()}
	switch {
	case p.acceptPunct("["):
		a.Kind = ast.AssignElem
		a.Key = p.term()
		p.expectPunct("]")
		p.expectPunct("=")
		a.Value = p.term()
		return a
	case p.isPunct(p.tok(), ".") && p.isIdent(p.peek(1)):
		p.next()
		a.Kind = ast.AssignField
		a.Field = p.ident()
		p.expectPunct("=")
		a.Value = p.term()
		return a
	case (p.isPunct(p.tok(), "+") || p.isPunct(p.tok(), "-")) && p.isPunct(p.peek(1), "="):
		// c += t, c -= t
		a.Kind = ast.AssignAdd
		if p.next().text == "-" {
			a.Kind = ast.AssignRemove
		}
		p.next()
		a.Value = p.term()
		return a
	}
	p.expectPunct("=")
	t := p.tok()
	if p.isIdent(t) && p.literalWord(t) == "" && !p.isCallStart() {
		// c = c + t or c = c - t. Cassandra's action checks the name
		// once the operation has parsed, and names the sign written:
		// +<value>, -<value>, and "- <value>" (or "+ <value>") when
		// c = d -1 lexes as d, -1.
		name := p.ident()
		op := p.tok()
		a.Kind, a.Value = p.operation()
		if name != a.Column {
			if op.kind == tInteger {
				sign := "+"
				if strings.HasPrefix(op.text, "-") {
					sign = "-"
				}
				p.actionf(t, "Only expressions of the form X = X %s <value> are supported.", sign)
			}
			p.actionf(t, "Only expressions of the form X = X %s<value> are supported.", op.text)
		}
		return a
	}
	a.Value = p.term()
	if p.acceptPunct("+") {
		// c = t + c, a list prepend
		t := p.tok()
		if name := p.ident(); name != a.Column {
			p.actionf(t, "Only expressions of the form X = <value> + X are supported.")
		}
		a.Kind = ast.AssignPrepend
		return a
	}
	a.Kind = ast.AssignSet
	return a
}

// operation parses the "+ t" or "- t" of c = c + t. As in Cassandra,
// c = c -1 lexes as c, -1 and adds the negative integer; and since its
// grammar takes any integer there, c = c 1 adds 1.
func (p *parser) operation() (ast.AssignKind, ast.Term) {
	t := p.tok()
	switch {
	case p.acceptPunct("+"):
		return ast.AssignAdd, p.term()
	case p.acceptPunct("-"):
		return ast.AssignRemove, p.term()
	case t.kind == tInteger:
		p.next()
		return ast.AssignAdd, &ast.Literal{Kind: ast.LitInteger, Text: t.text, Pos: t.pos}
	}
	p.failf(t, "mismatched input %s expecting '+' or '-'", p.quote(t))
	return 0, nil
}

// conditions parses an optional IF EXISTS or IF condition (AND
// condition)* .
func (p *parser) conditions() (exists bool, conds []ast.Condition) {
	if !p.acceptKw("if") {
		return false, nil
	}
	if p.acceptKw("exists") {
		return true, nil
	}
	for {
		c := ast.Condition{Column: p.ident()}
		switch {
		case p.acceptPunct("["):
			c.Elem = p.term()
			p.expectPunct("]")
		case p.isPunct(p.tok(), ".") && p.isIdent(p.peek(1)):
			p.next()
			c.Field = p.ident()
		}
		switch {
		case p.acceptKw("in"):
			c.Op = ast.OpIn
			c.Value = p.inValues()
		case c.Elem == nil && c.Field == "" && p.acceptKw("contains"):
			// Cassandra 5.0: IF c CONTAINS v, IF m CONTAINS KEY k, on a
			// whole column only.
			c.Op = ast.OpContains
			if p.acceptKw("key") {
				c.Op = ast.OpContainsKey
			}
			c.Value = p.term()
		default:
			c.Op = p.compareOp()
			c.Value = p.term()
		}
		conds = append(conds, c)
		if !p.acceptKw("and") {
			return false, conds
		}
	}
}

// deleteStmt parses
//
//	DELETE [target, ...] FROM t [USING TIMESTAMP n] WHERE relations
//	  [IF EXISTS | IF condition AND ...]
func (p *parser) deleteStmt() *ast.Delete {
	p.expectKw("delete")
	s := &ast.Delete{}
	if !p.isKw(p.tok(), "from") {
		for {
			d := ast.DeleteTarget{Column: p.ident()}
			switch {
			case p.acceptPunct("["):
				d.Elem = p.term()
				p.expectPunct("]")
			case p.isPunct(p.tok(), ".") && p.isIdent(p.peek(1)):
				p.next()
				d.Field = p.ident()
			}
			s.Columns = append(s.Columns, d)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	p.expectKw("from")
	s.Table = p.qualifiedName("table")
	if p.isKw(p.tok(), "using") {
		p.using(&s.Using, true)
	}
	p.expectKw("where")
	s.Where = p.relations()
	s.IfExists, s.If = p.conditions()
	s.Binds = p.binds
	return s
}

// bindsFrom returns the markers from index start on, or nil.
func (p *parser) bindsFrom(start int) []*ast.Bind {
	if start == len(p.binds) {
		return nil
	}
	return p.binds[start:len(p.binds):len(p.binds)]
}

// batch parses
//
//	BEGIN [UNLOGGED|COUNTER] BATCH [USING ...]
//	  (INSERT|UPDATE|DELETE ... [;])*
//	APPLY BATCH
func (p *parser) batch() *ast.Batch {
	p.expectKw("begin")
	b := &ast.Batch{}
	switch {
	case p.acceptKw("unlogged"):
		b.Type = ast.BatchUnlogged
	case p.acceptKw("counter"):
		b.Type = ast.BatchCounter
	}
	p.expectKw("batch")
	if p.isKw(p.tok(), "using") {
		p.using(&b.Using, false)
	}
	for !p.isKw(p.tok(), "apply") {
		start := len(p.binds)
		var s ast.Statement
		t := p.tok()
		switch {
		case p.isKw(t, "insert"):
			in := p.insert()
			in.Binds = p.bindsFrom(start)
			s = in
		case p.isKw(t, "update"):
			up := p.update()
			up.Binds = p.bindsFrom(start)
			s = up
		case p.isKw(t, "delete"):
			del := p.deleteStmt()
			del.Binds = p.bindsFrom(start)
			s = del
		default:
			p.failf(t, "mismatched input %s expecting K_APPLY", p.quote(t))
		}
		b.Statements = append(b.Statements, s)
		p.acceptPunct(";")
	}
	p.expectKw("apply")
	p.expectKw("batch")
	b.Binds = p.binds
	return b
}
