package ast

import (
	"strings"
)

// reserved are the keywords that cannot be names unless quoted: Cassandra
// 4's ReservedKeywords, plus the boolean literals.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		select from where and entries full insert update with limit using use set
		begin unlogged batch apply truncate delete in create keyspace schema
		columnfamily table materialized view index on to drop primary into alter
		rename add order by asc desc allow if is grant of revoke modify authorize
		describe execute norecursive token null not nan infinity or replace
		default unset mbean mbeans true false`) {
		reserved[w] = true
	}
}

// reservedTypeNames are the words Cassandra's grammar sets aside for types
// to come: written unquoted, exactly so, they cannot name a user type.
var reservedTypeNames = map[string]bool{
	"byte": true, "complex": true, "enum": true, "interval": true, "macaddr": true, "bitstring": true,
}

// ReservedTypeName reports whether word, as written, is a reserved type
// name.
func ReservedTypeName(word string) bool { return reservedTypeNames[word] }

// Reserved reports whether word, in any case, is a reserved keyword,
// which must be quoted to be used as a name.
func Reserved(word string) bool { return reserved[strings.ToLower(word)] }

// QuoteName returns name as CQL text: unchanged when it reads back as
// itself unquoted (lower case, [a-z][a-z0-9_]*, not reserved), otherwise
// in double quotes with quotes doubled. It is what cqlsh's DESCRIBE
// output and Cassandra's messages do with names.
func QuoteName(name string) string {
	plain := name != "" && !reserved[name] && 'a' <= name[0] && name[0] <= 'z'
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_'
	}
	if plain {
		return name
	}
	return quoteAlways(name)
}

// String returns the name as CQL text, quoted where needed.
func (n TableName) String() string {
	if n.Keyspace == "" {
		return QuoteName(n.Name)
	}
	return QuoteName(n.Keyspace) + "." + QuoteName(n.Name)
}

// FormatTerm returns a term as CQL text that parses back to the same
// term. Markers print as ? or :name.
func FormatTerm(t Term) string {
	var p printer
	p.term(t)
	return p.String()
}

// Format returns a statement as CQL text that parses back to the same
// statement. The skipped bodies of the unsupported statements (indexes,
// views, functions, aggregates) are left out, so their text is not
// complete CQL.
func Format(s Statement) string {
	var p printer
	p.stmt(s)
	return p.String()
}

type printer struct{ strings.Builder }

func (p *printer) w(parts ...string) {
	for _, s := range parts {
		p.WriteString(s)
	}
}

func (p *printer) name(n string) { p.w(QuoteName(n)) }

// typeName prints a user type's name, quoted where QuoteName would and
// when it is a reserved type name, which does not parse back unquoted.
func (p *printer) typeName(n TableName) {
	if n.Keyspace != "" {
		p.w(QuoteName(n.Keyspace), ".")
	}
	if ReservedTypeName(n.Name) {
		p.w(quoteAlways(n.Name))
		return
	}
	p.name(n.Name)
}

func (p *printer) names(list []string) {
	for i, n := range list {
		if i > 0 {
			p.w(", ")
		}
		p.name(n)
	}
}

func (p *printer) terms(list []Term) {
	for i, t := range list {
		if i > 0 {
			p.w(", ")
		}
		p.term(t)
	}
}

func (p *printer) term(t Term) {
	switch t := t.(type) {
	case *Literal:
		if t.Kind == LitString {
			p.w("'", strings.ReplaceAll(t.Text, "'", "''"), "'")
		} else {
			p.w(t.Text)
		}
	case *Bind:
		if t.Name == "" {
			p.w("?")
		} else {
			p.w(":", QuoteName(t.Name))
		}
	case *List:
		p.w("[")
		p.terms(t.Elems)
		p.w("]")
	case *Set:
		p.w("{")
		p.terms(t.Elems)
		p.w("}")
	case *Map:
		p.w("{")
		for i := range t.Keys {
			if i > 0 {
				p.w(", ")
			}
			p.term(t.Keys[i])
			p.w(": ")
			p.term(t.Values[i])
		}
		p.w("}")
	case *Tuple:
		p.w("(")
		p.terms(t.Elems)
		p.w(")")
	case *Ident:
		p.name(t.Name)
	case *Call:
		p.funcName(t.Keyspace, t.Name)
		p.w("(")
		p.terms(t.Args)
		p.w(")")
	case *Hint:
		p.w("(", t.Type, ")")
		p.term(t.Term)
	}
}

// funcName prints [ks.]name. Token is reserved but is a function name;
// the names that the select clause reads as WRITETIME, TTL and CAST are
// quoted to stay functions.
func (p *printer) funcName(ks, name string) {
	if ks != "" {
		p.name(ks)
		p.w(".")
	}
	switch name {
	case "token":
		p.w(name)
	case "writetime", "ttl", "cast":
		p.w(quoteAlways(name))
	default:
		p.name(name)
	}
}

func quoteAlways(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (p *printer) selectable(s Selectable) {
	switch s := s.(type) {
	case *ColumnSel:
		p.name(s.Name)
	case *FuncSel:
		p.funcName(s.Keyspace, s.Name)
		p.w("(")
		for i, a := range s.Args {
			if i > 0 {
				p.w(", ")
			}
			p.selectable(a)
		}
		p.w(")")
	case *CountRows:
		p.w("COUNT(*)")
	case *WriteTimeSel:
		p.w("WRITETIME(", QuoteName(s.Column), ")")
	case *TTLSel:
		p.w("TTL(", QuoteName(s.Column), ")")
	case *CastSel:
		p.w("CAST(")
		p.selectable(s.Arg)
		p.w(" AS ", s.Type, ")")
	case *TermSel:
		p.term(s.Term)
	case *FieldSel:
		p.selectable(s.Arg)
		p.w(".", QuoteName(s.Field))
	case *ElemSel:
		p.selectable(s.Arg)
		p.w("[")
		p.term(s.Key)
		p.w("]")
	case *OpSel:
		if s.Left == nil {
			// "--" would start a comment, so a negated operator or term
			// (which may be a negative number) keeps parentheses.
			switch s.Right.(type) {
			case *OpSel, *TermSel:
				p.w("-(")
				p.selectable(s.Right)
				p.w(")")
			default:
				p.w("-")
				p.selectable(s.Right)
			}
			return
		}
		prec := opPrec(s.Op)
		p.operand(s.Left, prec)
		p.w(" ", string(s.Op), " ")
		// Operators are left-associative: a right operand of the same
		// precedence keeps its parentheses.
		p.operand(s.Right, prec+1)
	}
}

// opPrec ranks arithmetic operators: unary minus binds tightest.
func opPrec(op byte) int {
	if op == '+' || op == '-' {
		return 1
	}
	return 2
}

// operand prints an operand of an operator of precedence prec, in
// parentheses when it binds more loosely.
func (p *printer) operand(s Selectable, prec int) {
	if o, ok := s.(*OpSel); !ok || o.Left == nil || opPrec(o.Op) >= prec {
		p.selectable(s)
		return
	}
	p.w("(")
	p.selectable(s)
	p.w(")")
}

func (p *printer) where(rels []Relation) {
	if len(rels) == 0 {
		return
	}
	p.w(" WHERE ")
	for i, r := range rels {
		if i > 0 {
			p.w(" AND ")
		}
		switch {
		case r.Token:
			p.w("token(")
			p.names(r.Columns)
			p.w(")")
		case r.Multi:
			p.w("(")
			p.names(r.Columns)
			p.w(")")
		default:
			p.names(r.Columns)
		}
		if r.MapKey != nil {
			p.w("[")
			p.term(r.MapKey)
			p.w("]")
		}
		p.w(" ", r.Op.String())
		if r.Op != OpIsNotNull {
			p.w(" ")
			p.term(r.Value)
		}
	}
}

func (p *printer) using(u Using) {
	ttl, _ := u.TTL.(*Bind)
	ts, _ := u.Timestamp.(*Bind)
	switch {
	case ttl != nil && ts != nil && ts.Index < ttl.Index:
		// Keep the markers in their order.
		p.w(" USING TIMESTAMP ")
		p.term(u.Timestamp)
		p.w(" AND TTL ")
		p.term(u.TTL)
	case u.TTL != nil && u.Timestamp != nil:
		p.w(" USING TTL ")
		p.term(u.TTL)
		p.w(" AND TIMESTAMP ")
		p.term(u.Timestamp)
	case u.TTL != nil:
		p.w(" USING TTL ")
		p.term(u.TTL)
	case u.Timestamp != nil:
		p.w(" USING TIMESTAMP ")
		p.term(u.Timestamp)
	}
}

func (p *printer) conditions(exists bool, conds []Condition) {
	if exists {
		p.w(" IF EXISTS")
	}
	for i, c := range conds {
		if i == 0 {
			p.w(" IF ")
		} else {
			p.w(" AND ")
		}
		p.name(c.Column)
		if c.Elem != nil {
			p.w("[")
			p.term(c.Elem)
			p.w("]")
		}
		if c.Field != "" {
			p.w(".", QuoteName(c.Field))
		}
		p.w(" ", c.Op.String(), " ")
		p.term(c.Value)
	}
}

func (p *printer) properties(props []Property) {
	for i, pr := range props {
		if i > 0 {
			p.w(" AND ")
		}
		p.name(pr.Name)
		p.w(" = ")
		p.term(pr.Value)
	}
}

func (p *printer) ifExists(b bool) {
	if b {
		p.w("IF EXISTS ")
	}
}

func (p *printer) ifNotExists(b bool) {
	if b {
		p.w("IF NOT EXISTS ")
	}
}

func (p *printer) renames(list []Rename) {
	for i, r := range list {
		if i > 0 {
			p.w(" AND ")
		}
		p.w(QuoteName(r.From), " TO ", QuoteName(r.To))
	}
}

func (p *printer) orderings(list []Ordering) {
	for i, o := range list {
		if i > 0 {
			p.w(", ")
		}
		p.name(o.Column)
		if o.Desc {
			p.w(" DESC")
		} else {
			p.w(" ASC")
		}
	}
}

func (p *printer) columnDef(c ColumnDef) {
	p.w(QuoteName(c.Name), " ", c.Type)
	if c.Static {
		p.w(" STATIC")
	}
}

func (p *printer) stmt(s Statement) {
	switch s := s.(type) {
	case *Select:
		p.selectStmt(s)
	case *Insert:
		p.w("INSERT INTO ", s.Table.String())
		if s.JSON != nil {
			p.w(" JSON ")
			p.term(s.JSON)
			if s.DefaultUnset {
				p.w(" DEFAULT UNSET")
			}
		} else {
			p.w(" (")
			p.names(s.Columns)
			p.w(") VALUES (")
			p.terms(s.Values)
			p.w(")")
		}
		if s.IfNotExists {
			p.w(" IF NOT EXISTS")
		}
		p.using(s.Using)
	case *Update:
		p.w("UPDATE ", s.Table.String())
		p.using(s.Using)
		p.w(" SET ")
		for i, a := range s.Set {
			if i > 0 {
				p.w(", ")
			}
			p.assignment(a)
		}
		p.where(s.Where)
		p.conditions(s.IfExists, s.If)
	case *Delete:
		p.w("DELETE ")
		for i, d := range s.Columns {
			if i > 0 {
				p.w(", ")
			}
			p.name(d.Column)
			if d.Elem != nil {
				p.w("[")
				p.term(d.Elem)
				p.w("]")
			}
			if d.Field != "" {
				p.w(".", QuoteName(d.Field))
			}
		}
		if len(s.Columns) > 0 {
			p.w(" ")
		}
		p.w("FROM ", s.Table.String())
		p.using(s.Using)
		p.where(s.Where)
		p.conditions(s.IfExists, s.If)
	case *Batch:
		p.w("BEGIN ", [...]string{"", "UNLOGGED ", "COUNTER "}[s.Type%3], "BATCH")
		p.using(s.Using)
		for _, in := range s.Statements {
			p.w(" ")
			p.stmt(in)
			p.w(";")
		}
		p.w(" APPLY BATCH")
	case *Use:
		p.w("USE ", QuoteName(s.Keyspace))
	case *Truncate:
		p.w("TRUNCATE ", s.Table.String())
	default:
		p.ddl(s)
	}
}

func (p *printer) selectStmt(s *Select) {
	p.w("SELECT ")
	if s.JSON {
		p.w("JSON ")
	}
	if s.Distinct {
		p.w("DISTINCT ")
	}
	if len(s.Selectors) == 0 {
		p.w("*")
	}
	for i, sel := range s.Selectors {
		if i > 0 {
			p.w(", ")
		}
		p.selectable(sel.Expr)
		if sel.Alias != "" {
			p.w(" AS ", QuoteName(sel.Alias))
		}
	}
	p.w(" FROM ", s.Table.String())
	p.where(s.Where)
	if len(s.GroupBy) > 0 {
		p.w(" GROUP BY ")
		p.names(s.GroupBy)
	}
	if len(s.OrderBy) > 0 {
		p.w(" ORDER BY ")
		p.orderings(s.OrderBy)
	}
	if s.PerPartitionLimit != nil {
		p.w(" PER PARTITION LIMIT ")
		p.term(s.PerPartitionLimit)
	}
	if s.Limit != nil {
		p.w(" LIMIT ")
		p.term(s.Limit)
	}
	if s.AllowFiltering {
		p.w(" ALLOW FILTERING")
	}
}

func (p *printer) assignment(a Assignment) {
	c := QuoteName(a.Column)
	switch a.Kind {
	case AssignSet:
		p.w(c, " = ")
		p.term(a.Value)
	case AssignAdd:
		p.w(c, " = ", c, " + ")
		p.term(a.Value)
	case AssignRemove:
		p.w(c, " = ", c, " - ")
		p.term(a.Value)
	case AssignPrepend:
		p.w(c, " = ")
		p.term(a.Value)
		p.w(" + ", c)
	case AssignElem:
		p.w(c, "[")
		p.term(a.Key)
		p.w("] = ")
		p.term(a.Value)
	case AssignField:
		p.w(c, ".", QuoteName(a.Field), " = ")
		p.term(a.Value)
	}
}
