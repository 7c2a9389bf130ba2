package parse

import (
	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// create dispatches CREATE statements.
func (p *parser) create() ast.Statement {
	p.expectKw("create")
	t := p.tok()
	switch w := t.word; {
	case t.kind != tIdent:
	case w == "keyspace" || w == "schema":
		p.next()
		s := &ast.CreateKeyspace{IfNotExists: p.ifNotExists(), Name: p.name("keyspace")}
		p.expectKw("with")
		s.Properties = p.properties()
		return s
	case w == "table" || w == "columnfamily":
		p.next()
		return p.createTable()
	case w == "type":
		p.next()
		s := &ast.CreateType{IfNotExists: p.ifNotExists(), Name: p.qualifiedName("type")}
		p.expectPunct("(")
		for {
			s.Fields = append(s.Fields, ast.Field{Name: p.ident(), Type: p.typ()})
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		return s
	case w == "custom" || w == "index":
		s := &ast.CreateIndex{Custom: p.acceptKw("custom")}
		p.expectKw("index")
		s.IfNotExists = p.ifNotExists()
		if !p.isKw(p.tok(), "on") {
			s.Name = p.ident()
		}
		p.expectKw("on")
		s.Table = p.qualifiedName("table")
		p.skipRest()
		return s
	case w == "materialized":
		p.next()
		p.expectKw("view")
		s := &ast.CreateView{IfNotExists: p.ifNotExists(), Name: p.qualifiedName("view")}
		p.expectKw("as")
		p.skipRest()
		return s
	case w == "or" || w == "function" || w == "aggregate":
		orReplace := false
		if p.acceptKw("or") {
			p.expectKw("replace")
			orReplace = true
		}
		t := p.tok()
		switch {
		case p.acceptKw("function"):
			s := &ast.CreateFunction{OrReplace: orReplace, IfNotExists: p.ifNotExists()}
			s.Name = p.functionTableName()
			p.skipRest()
			return s
		case p.acceptKw("aggregate"):
			s := &ast.CreateAggregate{OrReplace: orReplace, IfNotExists: p.ifNotExists()}
			s.Name = p.functionTableName()
			p.skipRest()
			return s
		}
		p.noViable(t)
	case w == "trigger":
		p.next()
		s := &ast.CreateTrigger{IfNotExists: p.ifNotExists(), Name: p.ident()}
		p.expectKw("on")
		s.Table = p.qualifiedName("table")
		p.expectKw("using")
		if p.tok().kind != tString {
			p.failf(p.tok(), "mismatched input %s expecting STRING_LITERAL", p.quote(p.tok()))
		}
		p.next()
		return s
	case w == "role":
		p.next()
		s := &ast.CreateRole{IfNotExists: p.ifNotExists(), Name: p.roleName()}
		if p.acceptKw("with") {
			s.Options = p.roleOptions()
		}
		return s
	case w == "user":
		p.next()
		s := &ast.CreateUser{IfNotExists: p.ifNotExists(), Name: p.userName()}
		s.Password, s.Superuser = p.userOptions()
		return s
	}
	p.noViable(t)
	return nil
}

// functionTableName parses the [ks.]name of a function or aggregate.
func (p *parser) functionTableName() ast.TableName {
	ks, name := p.functionName()
	return ast.TableName{Keyspace: ks, Name: name}
}

// skipRest skips the body of a statement Sediment does not support, up
// to the end of the statement, so that the executor can name what it
// rejects. Bodies of functions are strings, so a ';' token ends the
// statement.
func (p *parser) skipRest() {
	for t := p.tok(); t.kind != tEOF && !p.isPunct(t, ";"); t = p.tok() {
		p.next()
	}
}

// createTable parses the rest of
//
//	CREATE TABLE [IF NOT EXISTS] t (c type [STATIC] [PRIMARY KEY], ...,
//	  [PRIMARY KEY ((p, ...), c, ...)]) [WITH option AND ...]
func (p *parser) createTable() *ast.CreateTable {
	s := &ast.CreateTable{IfNotExists: p.ifNotExists(), Table: p.qualifiedName("table")}
	p.expectPunct("(")
	// CreateTableStatement.Raw throws InvalidRequestException from the
	// grammar's actions for a repeated column or a second PRIMARY KEY,
	// which ends Cassandra's parse there; a missing PRIMARY KEY is
	// refused later, by the executor, as Cassandra's prepare does.
	pkSeen := false
	setPK := func(t token, part []string) {
		if pkSeen {
			p.invalidf(t, "Multiple PRIMARY KEY specified for table '%s' (exactly one required)", rawName(s.Table))
		}
		pkSeen = true
		s.PartitionKey = part
	}
	declared := map[string]bool{}
	for {
		t := p.tok()
		if p.isKw(t, "primary") {
			p.next()
			p.expectKw("key")
			p.expectPunct("(")
			var part []string
			if p.acceptPunct("(") {
				part = p.identList()
				p.expectPunct(")")
			} else {
				part = []string{p.ident()}
			}
			setPK(t, part)
			for p.acceptPunct(",") {
				s.Clustering = append(s.Clustering, p.ident())
			}
			p.expectPunct(")")
		} else {
			name := p.tok()
			c := ast.ColumnDef{Name: p.ident(), Type: p.typ()}
			c.Static = p.acceptKw("static")
			if declared[c.Name] {
				p.invalidf(name, "Duplicate column '%s' declaration for table '%s'", c.Name, rawName(s.Table))
			}
			declared[c.Name] = true
			if pk := p.tok(); p.acceptKw("primary") {
				p.expectKw("key")
				setPK(pk, []string{c.Name})
			}
			s.Columns = append(s.Columns, c)
		}
		if !p.acceptPunct(",") {
			break
		}
		if p.isPunct(p.tok(), ")") {
			break // a trailing comma, which Cassandra allows
		}
	}
	p.expectPunct(")")
	if p.acceptKw("with") {
		for {
			t := p.tok()
			switch {
			case p.isKw(t, "clustering") && p.isKw(p.peek(1), "order"):
				p.next()
				p.next()
				p.expectKw("by")
				p.expectPunct("(")
				for {
					s.ClusteringOrder = append(s.ClusteringOrder, p.clusteringOrder(s))
					if !p.acceptPunct(",") {
						break
					}
				}
				p.expectPunct(")")
			case p.isKw(t, "compact") && p.isKw(p.peek(1), "storage"):
				p.next()
				p.next()
				s.CompactStorage = true
			default:
				s.Properties = p.property(s.Properties)
			}
			if !p.acceptKw("and") {
				break
			}
		}
	}
	return s
}

// clusteringOrder parses one c ASC|DESC of CLUSTERING ORDER BY, where
// Cassandra's grammar wants the direction written, and refuses a column
// named twice from the action (extendClusteringOrder), as Invalid.
func (p *parser) clusteringOrder(s *ast.CreateTable) ast.Ordering {
	t := p.tok()
	o := ast.Ordering{Column: p.ident()}
	switch {
	case p.acceptKw("desc"):
		o.Desc = true
	case p.acceptKw("asc"):
	default:
		p.noViable(p.tok())
	}
	for _, prev := range s.ClusteringOrder {
		if prev.Column == o.Column {
			p.invalidf(t, "Duplicate column '%s' in CLUSTERING ORDER BY clause for table '%s'", o.Column, rawName(s.Table))
		}
	}
	return o
}

// rawName prints a name as Cassandra's QualifiedName does in messages:
// keyspace.name as stored, unquoted.
func rawName(n ast.TableName) string {
	if n.Keyspace == "" {
		return n.Name
	}
	return n.Keyspace + "." + n.Name
}

// properties parses name = value (AND name = value)* .
func (p *parser) properties() []ast.Property {
	var list []ast.Property
	for {
		list = p.property(list)
		if !p.acceptKw("and") {
			return list
		}
	}
}

// property parses one name = value and appends it to list. A value is a
// constant, an unreserved keyword or a map of constants.
func (p *parser) property(list []ast.Property) []ast.Property {
	t := p.tok()
	name := p.ident()
	p.expectPunct("=")
	v := p.tok()
	var value ast.Term
	switch {
	case p.isPunct(v, "{"):
		value = p.propertyMap()
	case p.isMarker():
		// propertyValue takes no marker: no alternative of Cassandra's
		// property rule matches.
		p.noViable(v)
	default:
		if lit := p.literal(); lit != nil && lit.Kind != ast.LitNull {
			value = lit
		} else if lit != nil {
			p.noViable(v) // null is no constant
		} else if p.isIdent(v) {
			value = &ast.Ident{Name: p.ident()}
		} else {
			p.noViable(v)
		}
	}
	// PropertyDefinitions.addProperty, once the value has parsed.
	for _, prop := range list {
		if prop.Name == name {
			p.actionf(t, "Multiple definition for property '%s'", name)
		}
	}
	return append(list, ast.Property{Name: name, Value: value})
}

// propertyMap parses the map value of a property, or of a role's
// OPTIONS: Cassandra's fullMapLiteral, then convertPropertyMap, an action
// that wants constants and stops at the first bad entry.
func (p *parser) propertyMap() *ast.Map {
	open := p.tok()
	p.expectPunct("{")
	m := &ast.Map{}
	if p.acceptPunct("}") {
		return m
	}
	for {
		m.Keys = append(m.Keys, p.term())
		p.expectPunct(":")
		m.Values = append(m.Values, p.term())
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct("}")
	seen := map[string]bool{}
	for i, k := range m.Keys {
		kl, ok := k.(*ast.Literal)
		if !ok || kl.Kind == ast.LitNull {
			p.actionf(open, "Invalid property name: %s%s", rawTerm(k), ddlBindHint(k))
		}
		if vl, ok := m.Values[i].(*ast.Literal); !ok || vl.Kind == ast.LitNull {
			p.actionf(open, "Invalid property value: %s for property: %s%s", rawTerm(m.Values[i]), rawTerm(kl), ddlBindHint(m.Values[i]))
		}
		if seen[kl.Text] {
			p.actionf(open, "Multiple definition for property %s", kl.Text)
		}
		seen[kl.Text] = true
	}
	return m
}

// rawTerm prints a term as Cassandra's Term.Raw does in messages: a
// string in quotes as written, a marker as ?, null as NULL.
func rawTerm(t ast.Term) string {
	switch t := t.(type) {
	case *ast.Bind:
		return "?"
	case *ast.Literal:
		switch t.Kind {
		case ast.LitString:
			return "'" + t.Text + "'"
		case ast.LitNull:
			return "NULL"
		}
	}
	return ast.FormatTerm(t)
}

func ddlBindHint(t ast.Term) string {
	if _, ok := t.(*ast.Bind); ok {
		return " (bind variables are not supported in DDL queries)"
	}
	return ""
}

// alter dispatches ALTER statements.
func (p *parser) alter() ast.Statement {
	p.expectKw("alter")
	t := p.tok()
	switch w := t.word; {
	case t.kind != tIdent:
	case w == "keyspace" || w == "schema":
		p.next()
		s := &ast.AlterKeyspace{IfExists: p.ifExists(), Name: p.name("keyspace")}
		p.expectKw("with")
		s.Properties = p.properties()
		return s
	case w == "table" || w == "columnfamily":
		p.next()
		return p.alterTable()
	case w == "type":
		p.next()
		return p.alterType()
	case w == "materialized":
		p.next()
		p.expectKw("view")
		s := &ast.AlterView{Name: p.qualifiedName("view")}
		p.expectKw("with")
		p.skipRest()
		return s
	case w == "role":
		p.next()
		// WITH is optional in Cassandra's grammar; the executor refuses
		// an ALTER ROLE without options, as AlterRoleStatement does.
		s := &ast.AlterRole{IfExists: p.ifExists(), Name: p.roleName()}
		if p.acceptKw("with") {
			s.Options = p.roleOptions()
		}
		return s
	case w == "user":
		p.next()
		s := &ast.AlterUser{IfExists: p.ifExists(), Name: p.userName()}
		s.Password, s.Superuser = p.userOptions()
		return s
	}
	p.noViable(t)
	return nil
}

// alterTable parses the rest of ALTER TABLE [IF EXISTS] t followed by
// ALTER c TYPE t, ADD, DROP, RENAME or WITH.
func (p *parser) alterTable() *ast.AlterTable {
	s := &ast.AlterTable{IfExists: p.ifExists(), Table: p.qualifiedName("table")}
	t := p.tok()
	switch {
	case p.acceptKw("alter"):
		s.Kind = ast.AlterColumnType
		c := ast.ColumnDef{Name: p.ident()}
		p.expectKw("type")
		c.Type = p.typ()
		s.Add = []ast.ColumnDef{c}
	case p.acceptKw("add"):
		s.Kind = ast.AlterAdd
		s.AddIfNotExists = p.ifNotExists()
		paren := p.acceptPunct("(")
		for {
			c := ast.ColumnDef{Name: p.ident(), Type: p.typ()}
			c.Static = p.acceptKw("static")
			s.Add = append(s.Add, c)
			if !p.acceptPunct(",") {
				break
			}
		}
		if paren {
			p.expectPunct(")")
		}
	case p.isKw(t, "drop") && p.isKw(p.peek(1), "compact") && p.isKw(p.peek(2), "storage"):
		p.next()
		p.next()
		p.next()
		s.Kind = ast.AlterDropCompactStorage
	case p.acceptKw("drop"):
		s.Kind = ast.AlterDrop
		s.DropIfExists = p.ifExists()
		if p.acceptPunct("(") {
			s.Drop = p.identList()
			p.expectPunct(")")
		} else {
			s.Drop = p.identList()
		}
		if p.acceptKw("using") {
			p.expectKw("timestamp")
			ts := p.tok()
			if ts.kind != tInteger {
				p.failf(ts, "mismatched input %s expecting INTEGER", p.quote(ts))
			}
			p.next()
			s.DropTimestamp = &ast.Literal{Kind: ast.LitInteger, Text: ts.text, Pos: ts.pos}
		}
	case p.acceptKw("rename"):
		s.Kind = ast.AlterRename
		s.RenameIfExists = p.ifExists()
		s.Renames = p.renames()
	case p.acceptKw("with"):
		s.Kind = ast.AlterWith
		s.Properties = p.properties()
	default:
		p.noViable(t)
	}
	return s
}

// renames parses a TO b (AND a TO b)* .
func (p *parser) renames() []ast.Rename {
	var list []ast.Rename
	for {
		r := ast.Rename{From: p.ident()}
		p.expectKw("to")
		r.To = p.ident()
		list = append(list, r)
		if !p.acceptKw("and") {
			return list
		}
	}
}

// alterType parses the rest of ALTER TYPE [IF EXISTS] t followed by
// ALTER f TYPE t, ADD [IF NOT EXISTS] f type or RENAME [IF EXISTS] ... .
func (p *parser) alterType() *ast.AlterType {
	s := &ast.AlterType{IfExists: p.ifExists(), Name: p.qualifiedName("type")}
	t := p.tok()
	switch {
	case p.acceptKw("alter"):
		s.Kind = ast.AlterTypeFieldType
		s.Add.Name = p.ident()
		p.expectKw("type")
		s.Add.Type = p.typ()
	case p.acceptKw("add"):
		s.Kind = ast.AlterTypeAdd
		s.AddIfNotExists = p.ifNotExists()
		s.Add = ast.Field{Name: p.ident(), Type: p.typ()}
	case p.acceptKw("rename"):
		s.Kind = ast.AlterTypeRename
		s.RenameIfExists = p.ifExists()
		s.Renames = p.renames()
	default:
		p.noViable(t)
	}
	return s
}

// drop dispatches DROP statements.
func (p *parser) drop() ast.Statement {
	p.expectKw("drop")
	t := p.tok()
	switch w := t.word; {
	case t.kind != tIdent:
	case w == "keyspace" || w == "schema":
		p.next()
		return &ast.DropKeyspace{IfExists: p.ifExists(), Name: p.name("keyspace")}
	case w == "table" || w == "columnfamily":
		p.next()
		return &ast.DropTable{IfExists: p.ifExists(), Table: p.qualifiedName("table")}
	case w == "type":
		p.next()
		return &ast.DropType{IfExists: p.ifExists(), Name: p.qualifiedName("type")}
	case w == "index":
		p.next()
		return &ast.DropIndex{IfExists: p.ifExists(), Name: p.qualifiedName("index")}
	case w == "materialized":
		p.next()
		p.expectKw("view")
		return &ast.DropView{IfExists: p.ifExists(), Name: p.qualifiedName("view")}
	case w == "function":
		p.next()
		s := &ast.DropFunction{IfExists: p.ifExists(), Name: p.functionTableName()}
		p.skipRest()
		return s
	case w == "aggregate":
		p.next()
		s := &ast.DropAggregate{IfExists: p.ifExists(), Name: p.functionTableName()}
		p.skipRest()
		return s
	case w == "trigger":
		p.next()
		s := &ast.DropTrigger{IfExists: p.ifExists(), Name: p.ident()}
		p.expectKw("on")
		s.Table = p.qualifiedName("table")
		return s
	case w == "role":
		p.next()
		return &ast.DropRole{IfExists: p.ifExists(), Name: p.roleName()}
	case w == "user":
		p.next()
		return &ast.DropUser{IfExists: p.ifExists(), Name: p.userName()}
	}
	p.noViable(t)
	return nil
}

// describeKinds are the words after DESCRIBE that name a kind of object.
// The plural ones stand alone; the singular ones take a name.
var describeKinds = map[string]struct {
	kind   ast.DescribeKind
	plural bool
}{
	"cluster":        {ast.DescribeCluster, true},
	"keyspaces":      {ast.DescribeKeyspaces, true},
	"tables":         {ast.DescribeTables, true},
	"columnfamilies": {ast.DescribeTables, true},
	"types":          {ast.DescribeTypes, true},
	"functions":      {ast.DescribeFunctions, true},
	"aggregates":     {ast.DescribeAggregates, true},
	"table":          {ast.DescribeTable, false},
	"columnfamily":   {ast.DescribeTable, false},
	"index":          {ast.DescribeIndex, false},
	"type":           {ast.DescribeType, false},
	"function":       {ast.DescribeFunction, false},
	"aggregate":      {ast.DescribeAggregate, false},
}

// describe parses DESC[RIBE] followed by what to describe and an
// optional WITH INTERNALS.
func (p *parser) describe() *ast.Describe {
	p.next() // DESC or DESCRIBE
	s := &ast.Describe{Kind: ast.DescribeName}
	t, n := p.tok(), p.peek(1)
	w := ""
	if t.kind == tIdent {
		w = t.word
	}
	k, isKind := describeKinds[w]
	switch {
	case w == "full" && p.isKw(n, "schema"), w == "schema":
		s.Full = p.acceptKw("full")
		p.next()
		s.Kind = ast.DescribeSchema
	case w == "only" && p.isKw(n, "keyspace"), w == "keyspace":
		s.Only = p.acceptKw("only")
		p.next()
		s.Kind = ast.DescribeKeyspace
		if !p.isKw(p.tok(), "with") && p.tok().kind != tEOF && !p.isPunct(p.tok(), ";") {
			s.Name.Name = p.name("keyspace")
		}
	case w == "materialized" && p.isKw(n, "view"):
		p.next()
		p.next()
		s.Kind, s.Name = ast.DescribeView, p.qualifiedName("view")
	case isKind && k.plural && !p.isPunct(n, "."):
		p.next()
		s.Kind = k.kind
	case isKind && !k.plural && (ast.Reserved(w) || !p.isPunct(n, ".") && n.kind != tEOF && !p.isPunct(n, ";") && !p.isKw(n, "with")):
		// TABLE and INDEX are reserved; TYPE, FUNCTION and AGGREGATE
		// are kinds only when a name follows.
		p.next()
		s.Kind = k.kind
		if k.kind == ast.DescribeFunction || k.kind == ast.DescribeAggregate {
			s.Name = p.functionTableName()
		} else {
			s.Name = p.qualifiedName(map[ast.DescribeKind]string{ast.DescribeTable: "table", ast.DescribeIndex: "index", ast.DescribeType: "type"}[k.kind])
		}
	default:
		s.Name = p.qualifiedName("")
	}
	if p.acceptKw("with") {
		p.expectKw("internals")
		s.WithInternals = true
	}
	return s
}
