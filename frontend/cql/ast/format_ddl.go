package ast

import "strings"

// ddl prints the schema, DESCRIBE and auth statements.
func (p *printer) ddl(s Statement) {
	switch s := s.(type) {
	case *CreateKeyspace:
		p.w("CREATE KEYSPACE ")
		p.ifNotExists(s.IfNotExists)
		p.w(QuoteName(s.Name), " WITH ")
		p.properties(s.Properties)
	case *AlterKeyspace:
		p.w("ALTER KEYSPACE ")
		p.ifExists(s.IfExists)
		p.w(QuoteName(s.Name), " WITH ")
		p.properties(s.Properties)
	case *DropKeyspace:
		p.w("DROP KEYSPACE ")
		p.ifExists(s.IfExists)
		p.name(s.Name)
	case *CreateTable:
		p.createTable(s)
	case *AlterTable:
		p.alterTable(s)
	case *DropTable:
		p.w("DROP TABLE ")
		p.ifExists(s.IfExists)
		p.w(s.Table.String())
	case *CreateType:
		p.w("CREATE TYPE ")
		p.ifNotExists(s.IfNotExists)
		p.typeName(s.Name)
		p.w(" (")
		for i, f := range s.Fields {
			if i > 0 {
				p.w(", ")
			}
			p.w(QuoteName(f.Name), " ", f.Type)
		}
		p.w(")")
	case *AlterType:
		p.w("ALTER TYPE ")
		p.ifExists(s.IfExists)
		p.typeName(s.Name)
		switch s.Kind {
		case AlterTypeAdd:
			p.w(" ADD ")
			p.ifNotExists(s.AddIfNotExists)
			p.w(QuoteName(s.Add.Name), " ", s.Add.Type)
		case AlterTypeRename:
			p.w(" RENAME ")
			p.ifExists(s.RenameIfExists)
			p.renames(s.Renames)
		case AlterTypeFieldType:
			p.w(" ALTER ", QuoteName(s.Add.Name), " TYPE ", s.Add.Type)
		}
	case *DropType:
		p.w("DROP TYPE ")
		p.ifExists(s.IfExists)
		p.typeName(s.Name)
	case *CreateIndex:
		p.w("CREATE ")
		if s.Custom {
			p.w("CUSTOM ")
		}
		p.w("INDEX ")
		p.ifNotExists(s.IfNotExists)
		if s.Name != "" {
			p.w(QuoteName(s.Name), " ")
		}
		p.w("ON ", s.Table.String())
	case *DropIndex:
		p.w("DROP INDEX ")
		p.ifExists(s.IfExists)
		p.w(s.Name.String())
	case *CreateView:
		p.w("CREATE MATERIALIZED VIEW ")
		p.ifNotExists(s.IfNotExists)
		p.w(s.Name.String(), " AS")
	case *AlterView:
		p.w("ALTER MATERIALIZED VIEW ", s.Name.String(), " WITH")
	case *DropView:
		p.w("DROP MATERIALIZED VIEW ")
		p.ifExists(s.IfExists)
		p.w(s.Name.String())
	case *CreateFunction:
		p.createRoutine("FUNCTION", s.OrReplace, s.IfNotExists, s.Name)
	case *DropFunction:
		p.w("DROP FUNCTION ")
		p.ifExists(s.IfExists)
		p.funcName(s.Name.Keyspace, s.Name.Name)
	case *CreateAggregate:
		p.createRoutine("AGGREGATE", s.OrReplace, s.IfNotExists, s.Name)
	case *DropAggregate:
		p.w("DROP AGGREGATE ")
		p.ifExists(s.IfExists)
		p.funcName(s.Name.Keyspace, s.Name.Name)
	case *CreateTrigger:
		p.w("CREATE TRIGGER ")
		p.ifNotExists(s.IfNotExists)
		p.w(QuoteName(s.Name), " ON ", s.Table.String(), " USING ''")
	case *DropTrigger:
		p.w("DROP TRIGGER ")
		p.ifExists(s.IfExists)
		p.w(QuoteName(s.Name), " ON ", s.Table.String())
	case *Describe:
		p.describe(s)
	default:
		p.auth(s)
	}
}

func (p *printer) createRoutine(kind string, orReplace, ifNotExists bool, name TableName) {
	p.w("CREATE ")
	if orReplace {
		p.w("OR REPLACE ")
	}
	p.w(kind, " ")
	p.ifNotExists(ifNotExists)
	p.funcName(name.Keyspace, name.Name)
}

func (p *printer) createTable(s *CreateTable) {
	p.w("CREATE TABLE ")
	p.ifNotExists(s.IfNotExists)
	p.w(s.Table.String(), " (")
	for i, c := range s.Columns {
		if i > 0 {
			p.w(", ")
		}
		p.columnDef(c)
	}
	// The parser leaves a table without a key to the executor, which
	// refuses it as Cassandra's prepare does; it prints without one.
	if len(s.PartitionKey) > 0 {
		if len(s.Columns) > 0 {
			p.w(", ")
		}
		p.w("PRIMARY KEY ((")
		p.names(s.PartitionKey)
		p.w(")")
		for _, c := range s.Clustering {
			p.w(", ", QuoteName(c))
		}
		p.w(")")
	}
	p.w(")")
	var opts []string
	if len(s.ClusteringOrder) > 0 {
		var o printer
		o.w("CLUSTERING ORDER BY (")
		o.orderings(s.ClusteringOrder)
		o.w(")")
		opts = append(opts, o.String())
	}
	if s.CompactStorage {
		opts = append(opts, "COMPACT STORAGE")
	}
	if len(s.Properties) > 0 {
		var o printer
		o.properties(s.Properties)
		opts = append(opts, o.String())
	}
	if len(opts) > 0 {
		p.w(" WITH ", strings.Join(opts, " AND "))
	}
}

func (p *printer) alterTable(s *AlterTable) {
	p.w("ALTER TABLE ")
	p.ifExists(s.IfExists)
	p.w(s.Table.String())
	switch s.Kind {
	case AlterAdd:
		p.w(" ADD ")
		p.ifNotExists(s.AddIfNotExists)
		p.w("(")
		for i, c := range s.Add {
			if i > 0 {
				p.w(", ")
			}
			p.columnDef(c)
		}
		p.w(")")
	case AlterDrop:
		p.w(" DROP ")
		p.ifExists(s.DropIfExists)
		p.w("(")
		p.names(s.Drop)
		p.w(")")
		if s.DropTimestamp != nil {
			p.w(" USING TIMESTAMP ")
			p.term(s.DropTimestamp)
		}
	case AlterRename:
		p.w(" RENAME ")
		p.ifExists(s.RenameIfExists)
		p.renames(s.Renames)
	case AlterWith:
		p.w(" WITH ")
		p.properties(s.Properties)
	case AlterColumnType:
		if len(s.Add) > 0 {
			p.w(" ALTER ", QuoteName(s.Add[0].Name), " TYPE ", s.Add[0].Type)
		}
	case AlterDropCompactStorage:
		p.w(" DROP COMPACT STORAGE")
	}
}

var describeWords = map[DescribeKind]string{
	DescribeCluster: "CLUSTER", DescribeKeyspaces: "KEYSPACES", DescribeTables: "TABLES",
	DescribeTypes: "TYPES", DescribeFunctions: "FUNCTIONS", DescribeAggregates: "AGGREGATES",
	DescribeTable: "TABLE ", DescribeIndex: "INDEX ", DescribeView: "MATERIALIZED VIEW ",
	DescribeType: "TYPE ", DescribeFunction: "FUNCTION ", DescribeAggregate: "AGGREGATE ",
}

// describeKeywords are the words that start a DESCRIBE form.
var describeKeywords = map[string]bool{
	"cluster": true, "keyspaces": true, "tables": true, "columnfamilies": true, "types": true,
	"functions": true, "aggregates": true, "type": true, "function": true, "aggregate": true,
	"full": true, "only": true,
}

func (p *printer) describe(s *Describe) {
	p.w("DESCRIBE ")
	switch s.Kind {
	case DescribeSchema:
		if s.Full {
			p.w("FULL ")
		}
		p.w("SCHEMA")
	case DescribeKeyspace:
		if s.Only {
			p.w("ONLY ")
		}
		p.w("KEYSPACE")
		if s.Name.Name != "" {
			p.w(" ", QuoteName(s.Name.Name))
		}
	case DescribeName:
		if s.Name.Keyspace == "" && describeKeywords[strings.ToLower(s.Name.Name)] {
			// A bare name that DESCRIBE would read as a keyword.
			p.w(quoteAlways(s.Name.Name))
		} else {
			p.w(s.Name.String())
		}
	case DescribeFunction, DescribeAggregate:
		p.w(describeWords[s.Kind])
		p.funcName(s.Name.Keyspace, s.Name.Name)
	default:
		p.w(describeWords[s.Kind])
		if strings.HasSuffix(describeWords[s.Kind], " ") {
			p.w(s.Name.String())
		}
	}
	if s.WithInternals {
		p.w(" WITH INTERNALS")
	}
}

// roleName prints a role name as a string, which keeps its case and can
// never be taken for a keyword.
func (p *printer) roleName(n string) { p.term(&Literal{Kind: LitString, Text: n}) }

// roleTo prints GRANT or REVOKE (verb) of role to or from (prep) grantee.
func (p *printer) roleTo(verb, role, prep, grantee string) {
	p.w(verb)
	p.roleName(role)
	p.w(prep)
	p.roleName(grantee)
}

// permissionOn prints GRANT or REVOKE (verb) of perm on res to or from
// (prep) role.
func (p *printer) permissionOn(verb, perm string, res Resource, prep, role string) {
	p.w(verb)
	p.permission(perm)
	p.w(" ON ")
	p.resource(res)
	p.w(prep)
	p.roleName(role)
}

func (p *printer) roleOptions(o RoleOptions) {
	var opts []string
	if o.Password != nil {
		opts = append(opts, "PASSWORD = "+FormatTerm(&Literal{Kind: LitString, Text: *o.Password}))
	}
	if o.Login != nil {
		opts = append(opts, "LOGIN = "+boolText(*o.Login))
	}
	if o.Superuser != nil {
		opts = append(opts, "SUPERUSER = "+boolText(*o.Superuser))
	}
	if o.Options != nil {
		opts = append(opts, "OPTIONS = "+FormatTerm(o.Options))
	}
	if len(opts) > 0 {
		p.w(" WITH ", strings.Join(opts, " AND "))
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// userName prints the name of a legacy USER statement as a string: a
// user name keeps its case unquoted and cannot be a quoted name.
func (p *printer) userName(n string) { p.term(&Literal{Kind: LitString, Text: n}) }

func (p *printer) userOptions(password *string, superuser *bool) {
	if password != nil {
		p.w(" WITH PASSWORD ")
		p.term(&Literal{Kind: LitString, Text: *password})
	}
	if superuser != nil {
		if *superuser {
			p.w(" SUPERUSER")
		} else {
			p.w(" NOSUPERUSER")
		}
	}
}

func (p *printer) resource(r Resource) {
	switch r.Kind {
	case ResAllKeyspaces:
		p.w("ALL KEYSPACES")
	case ResKeyspace:
		p.w("KEYSPACE ", QuoteName(r.Keyspace))
	case ResTable:
		p.w("TABLE ", TableName{Keyspace: r.Keyspace, Name: r.Name}.String())
	case ResAllRoles:
		p.w("ALL ROLES")
	case ResRole:
		p.w("ROLE ")
		p.roleName(r.Name)
	case ResAllFunctions:
		p.w("ALL FUNCTIONS")
		if r.Keyspace != "" {
			p.w(" IN KEYSPACE ", QuoteName(r.Keyspace))
		}
	case ResFunction:
		p.w("FUNCTION ")
		p.funcName(r.Keyspace, r.Name)
		p.w("(", strings.Join(r.ArgTypes, ", "), ")")
	case ResAllMBeans:
		p.w("ALL MBEANS")
	case ResMBean:
		p.w("MBEAN ")
		p.term(&Literal{Kind: LitString, Text: r.Name})
	}
}

func (p *printer) permission(perm string) {
	if perm == PermAll {
		p.w("ALL PERMISSIONS")
	} else {
		p.w(perm)
	}
}

func (p *printer) auth(s Statement) {
	switch s := s.(type) {
	case *CreateRole:
		p.w("CREATE ROLE ")
		p.ifNotExists(s.IfNotExists)
		p.roleName(s.Name)
		p.roleOptions(s.Options)
	case *AlterRole:
		p.w("ALTER ROLE ")
		p.ifExists(s.IfExists)
		p.roleName(s.Name)
		p.roleOptions(s.Options)
	case *DropRole:
		p.w("DROP ROLE ")
		p.ifExists(s.IfExists)
		p.roleName(s.Name)
	case *CreateUser:
		p.w("CREATE USER ")
		p.ifNotExists(s.IfNotExists)
		p.userName(s.Name)
		p.userOptions(s.Password, s.Superuser)
	case *AlterUser:
		p.w("ALTER USER ")
		p.ifExists(s.IfExists)
		p.userName(s.Name)
		p.userOptions(s.Password, s.Superuser)
	case *DropUser:
		p.w("DROP USER ")
		p.ifExists(s.IfExists)
		p.userName(s.Name)
	case *ListRoles:
		p.w("LIST ROLES")
		if s.Of != "" {
			p.w(" OF ")
			p.roleName(s.Of)
		}
		if s.NoRecursive {
			p.w(" NORECURSIVE")
		}
	case *ListUsers:
		p.w("LIST USERS")
	case *GrantRole:
		p.roleTo("GRANT ", s.Role, " TO ", s.To)
	case *RevokeRole:
		p.roleTo("REVOKE ", s.Role, " FROM ", s.From)
	case *GrantPermission:
		p.permissionOn("GRANT ", s.Permission, s.Resource, " TO ", s.Role)
	case *RevokePermission:
		p.permissionOn("REVOKE ", s.Permission, s.Resource, " FROM ", s.Role)
	case *ListPermissions:
		p.w("LIST ")
		p.permission(s.Permission)
		if s.Resource != nil {
			p.w(" ON ")
			p.resource(*s.Resource)
		}
		if s.Of != "" {
			p.w(" OF ")
			p.roleName(s.Of)
		}
		if s.NoRecursive {
			p.w(" NORECURSIVE")
		}
	}
}
