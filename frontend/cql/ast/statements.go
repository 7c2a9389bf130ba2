package ast

// A Statement is one parsed CQL statement. Each kind of statement is its
// own struct; the executor switches on the concrete type.
type Statement interface{ stmt() }

// TableName is a possibly qualified name: [keyspace.]name. It names
// tables, views, indexes, user types, functions and aggregates. Keyspace
// is empty when the statement did not give one (the session's keyspace
// applies). Both parts are case-folded unless they were quoted.
type TableName struct {
	Keyspace, Name string
}

// Property is one `name = value` option of a WITH clause (keyspace,
// table and view options). Name is lower case unless quoted. Value is a
// *Literal, a *Map (such as replication or compaction), or an *Ident for
// a bare identifier value; the executor validates names and values.
type Property struct {
	Name  string
	Value Term
}

// Using holds the USING clause of a write. TTL and Timestamp are nil
// when absent; otherwise a *Literal or a *Bind.
type Using struct {
	TTL, Timestamp Term
}

// Operator is the operator of a WHERE relation or an IF condition.
type Operator uint8

// Operators, in the order of the Cassandra grammar.
const (
	OpEq          Operator = iota // =
	OpLt                          // <
	OpLte                         // <=
	OpGt                          // >
	OpGte                         // >=
	OpNe                          // !=
	OpIn                          // IN
	OpContains                    // CONTAINS
	OpContainsKey                 // CONTAINS KEY
	OpLike                        // LIKE
	OpIsNotNull                   // IS NOT NULL (materialized views only)
)

var opNames = [...]string{"=", "<", "<=", ">", ">=", "!=", "IN", "CONTAINS", "CONTAINS KEY", "LIKE", "IS NOT NULL"}

// String returns the operator as CQL writes it.
func (o Operator) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "?"
}

// Relation is one restriction of a WHERE clause. The left side is one
// column (Columns has one name), token(c1, ...) (Token is true), or a
// column tuple (c1, ...) (Multi is true).
//
// Value is the right side. For OpIn it is a *Tuple of the alternatives
// (each alternative a *Tuple for a multi-column IN) or a *Bind for IN ?.
// For a multi-column comparison it is a *Tuple or a *Bind. For a token
// relation it is a *Call of token or any term. OpIsNotNull has no Value.
type Relation struct {
	Columns []string
	Token   bool
	Multi   bool
	// MapKey is set for c[key] = value, a restriction on a map entry.
	MapKey Term
	Op     Operator
	Value  Term
}

// Condition is one IF condition of a conditional UPDATE or DELETE:
// c op t, c[elem] op t, c.field op t, or c CONTAINS [KEY] t. For OpIn,
// Value is a *Tuple of the alternatives or a *Bind.
type Condition struct {
	Column string
	Elem   Term   // non-nil for c[elem]: a list index or a map key
	Field  string // non-empty for c.field of a user type
	Op     Operator
	Value  Term
}

// AssignKind is the shape of an UPDATE assignment.
type AssignKind uint8

// Assignment kinds.
const (
	AssignSet     AssignKind = iota // c = t
	AssignAdd                       // c = c + t, c += t (counters, append, set and map add)
	AssignPrepend                   // c = t + c (list prepend)
	AssignRemove                    // c = c - t, c -= t (counters, list, set and map remove)
	AssignElem                      // c[k] = t (list index or map key)
	AssignField                     // c.field = t (user type field)
)

// Assignment is one SET item of an UPDATE.
type Assignment struct {
	Column string
	Kind   AssignKind
	Key    Term   // AssignElem: the index or key
	Field  string // AssignField: the field name
	Value  Term
}

// Ordering is one column of ORDER BY or CLUSTERING ORDER BY.
type Ordering struct {
	Column string
	Desc   bool
}

// Select is a SELECT statement.
type Select struct {
	JSON     bool
	Distinct bool
	// Selectors is empty for SELECT *.
	Selectors []Selector
	Table     TableName
	Where     []Relation
	GroupBy   []string
	OrderBy   []Ordering
	// PerPartitionLimit and Limit are nil when absent; otherwise a
	// *Literal or a *Bind.
	PerPartitionLimit Term
	Limit             Term
	AllowFiltering    bool
	// Binds lists the statement's markers in order of appearance.
	Binds []*Bind
}

// Selector is one item of a select clause, with its alias (empty when
// there is no AS).
type Selector struct {
	Expr  Selectable
	Alias string
}

// A Selectable is what a selector computes: a column, a function of
// selectables, WRITETIME, TTL, CAST, COUNT(*), a term, a field or an
// element of another selectable.
type Selectable interface{ selectable() }

// ColumnSel selects a column.
type ColumnSel struct{ Name string }

// FuncSel is a function call over selectables, such as count(c),
// toJson(c) or ks.f(a, 1). Name is lower case unless quoted.
type FuncSel struct {
	Keyspace, Name string
	Args           []Selectable
}

// CountRows is COUNT(*). COUNT(1) is a FuncSel of count on the term 1.
type CountRows struct{}

// WriteTimeSel is WRITETIME(c).
type WriteTimeSel struct{ Column string }

// TTLSel is TTL(c).
type TTLSel struct{ Column string }

// CastSel is CAST(x AS type); Type is the type as written, for
// cqltype.Parse.
type CastSel struct {
	Arg  Selectable
	Type string
}

// TermSel is a term used as a selector: a literal, a marker, a
// collection or a type hint.
type TermSel struct{ Term Term }

// FieldSel is x.field, a field of a user-type value.
type FieldSel struct {
	Arg   Selectable
	Field string
}

// ElemSel is x[key], an element of a collection value.
type ElemSel struct {
	Arg Selectable
	Key Term
}

// OpSel is arithmetic in a selection (Cassandra 4.0): Left Op Right with
// Op one of + - * / %, or the negation -Right when Left is nil.
type OpSel struct {
	Op          byte
	Left, Right Selectable
}

func (*ColumnSel) selectable()    {}
func (*OpSel) selectable()        {}
func (*FuncSel) selectable()      {}
func (*CountRows) selectable()    {}
func (*WriteTimeSel) selectable() {}
func (*TTLSel) selectable()       {}
func (*CastSel) selectable()      {}
func (*TermSel) selectable()      {}
func (*FieldSel) selectable()     {}
func (*ElemSel) selectable()      {}

// Insert is INSERT INTO t (c, ...) VALUES (t, ...) or INSERT INTO t JSON
// value.
type Insert struct {
	Table   TableName
	Columns []string
	Values  []Term
	// JSON is non-nil for INSERT JSON: a *Literal string or a *Bind.
	// Columns and Values are then empty.
	JSON Term
	// DefaultUnset is true for JSON ... DEFAULT UNSET: columns missing
	// from the JSON are left alone instead of set to null.
	DefaultUnset bool
	IfNotExists  bool
	Using        Using
	Binds        []*Bind
}

// Update is an UPDATE statement.
type Update struct {
	Table    TableName
	Using    Using
	Set      []Assignment
	Where    []Relation
	IfExists bool
	If       []Condition
	Binds    []*Bind
}

// DeleteTarget is one item of DELETE's column list: a column, an element
// c[t] of a list or map, or a field c.f of a user type.
type DeleteTarget struct {
	Column string
	Elem   Term
	Field  string
}

// Delete is a DELETE statement. Columns is empty when whole rows go.
// Only Using.Timestamp can be set.
type Delete struct {
	Columns  []DeleteTarget
	Table    TableName
	Using    Using
	Where    []Relation
	IfExists bool
	If       []Condition
	Binds    []*Bind
}

// BatchType is the kind of a BATCH.
type BatchType uint8

// Batch types.
const (
	BatchLogged BatchType = iota
	BatchUnlogged
	BatchCounter
)

// Batch is BEGIN [UNLOGGED|COUNTER] BATCH ... APPLY BATCH. Statements are
// *Insert, *Update and *Delete. Markers are numbered across the whole
// batch: Binds lists them all, and each inner statement's Binds holds its
// own with those same indexes.
type Batch struct {
	Type       BatchType
	Using      Using
	Statements []Statement
	Binds      []*Bind
}

// Use is USE keyspace.
type Use struct{ Keyspace string }

// CreateKeyspace is CREATE KEYSPACE [IF NOT EXISTS] k WITH ....
type CreateKeyspace struct {
	Name        string
	IfNotExists bool
	Properties  []Property
}

// AlterKeyspace is ALTER KEYSPACE [IF EXISTS] k WITH ....
type AlterKeyspace struct {
	Name       string
	IfExists   bool
	Properties []Property
}

// DropKeyspace is DROP KEYSPACE [IF EXISTS] k.
type DropKeyspace struct {
	Name     string
	IfExists bool
}

// ColumnDef is a column of CREATE TABLE or ALTER TABLE ADD. Type is the
// type as written, for cqltype.Parse.
type ColumnDef struct {
	Name   string
	Type   string
	Static bool
}

// CreateTable is CREATE TABLE. PartitionKey and Clustering come from
// the PRIMARY KEY, inline or as a clause.
type CreateTable struct {
	Table           TableName
	IfNotExists     bool
	Columns         []ColumnDef
	PartitionKey    []string
	Clustering      []string
	ClusteringOrder []Ordering
	// CompactStorage is parsed so that the executor can reject it.
	CompactStorage bool
	Properties     []Property
}

// AlterTableKind is what an ALTER TABLE does.
type AlterTableKind uint8

// ALTER TABLE kinds.
const (
	AlterAdd                AlterTableKind = iota // ADD c type [, ...]
	AlterDrop                                     // DROP c [, ...] or DROP (c, ...)
	AlterRename                                   // RENAME a TO b [AND c TO d ...]
	AlterWith                                     // WITH name = value [AND ...]
	AlterColumnType                               // ALTER c TYPE t (no longer supported by Cassandra)
	AlterDropCompactStorage                       // DROP COMPACT STORAGE
)

// Rename is one a TO b of an ALTER RENAME.
type Rename struct{ From, To string }

// AlterTable is ALTER TABLE [IF EXISTS] t followed by one action.
type AlterTable struct {
	Table    TableName
	IfExists bool
	Kind     AlterTableKind
	// Add: the new columns. AlterColumnType: the column and its new type.
	Add []ColumnDef
	// AddIfNotExists and DropIfExists are the column-level IF clauses.
	AddIfNotExists bool
	Drop           []string
	DropIfExists   bool
	// DropTimestamp is DROP ... USING TIMESTAMP t, nil when absent.
	DropTimestamp  Term
	Renames        []Rename
	RenameIfExists bool
	Properties     []Property
}

// DropTable is DROP TABLE [IF EXISTS] t.
type DropTable struct {
	Table    TableName
	IfExists bool
}

// Truncate is TRUNCATE [TABLE] t.
type Truncate struct{ Table TableName }

// Field is a field of a user type.
type Field struct{ Name, Type string }

// CreateType is CREATE TYPE [IF NOT EXISTS] t (f type, ...).
type CreateType struct {
	Name        TableName
	IfNotExists bool
	Fields      []Field
}

// AlterTypeKind is what an ALTER TYPE does.
type AlterTypeKind uint8

// ALTER TYPE kinds.
const (
	AlterTypeAdd       AlterTypeKind = iota // ADD f type
	AlterTypeRename                         // RENAME f TO g [AND ...]
	AlterTypeFieldType                      // ALTER f TYPE t (no longer supported by Cassandra)
)

// AlterType is ALTER TYPE [IF EXISTS] t followed by one action.
type AlterType struct {
	Name     TableName
	IfExists bool
	Kind     AlterTypeKind
	// Add is the new field (AlterTypeAdd) or the retyped one.
	Add            Field
	AddIfNotExists bool
	Renames        []Rename
	RenameIfExists bool
}

// DropType is DROP TYPE [IF EXISTS] t.
type DropType struct {
	Name     TableName
	IfExists bool
}

// CreateIndex is CREATE [CUSTOM] INDEX. Sediment has no secondary
// indexes: the node exists so the executor can say so.
type CreateIndex struct {
	Name        string // empty when not given
	Table       TableName
	IfNotExists bool
	Custom      bool
}

// DropIndex is DROP INDEX [IF EXISTS] [ks.]name.
type DropIndex struct {
	Name     TableName
	IfExists bool
}

// CreateView is CREATE MATERIALIZED VIEW; its body is skipped.
type CreateView struct {
	Name        TableName
	IfNotExists bool
}

// AlterView is ALTER MATERIALIZED VIEW; its body is skipped.
type AlterView struct{ Name TableName }

// DropView is DROP MATERIALIZED VIEW [IF EXISTS] v.
type DropView struct {
	Name     TableName
	IfExists bool
}

// CreateFunction is CREATE [OR REPLACE] FUNCTION; its body is skipped.
type CreateFunction struct {
	Name        TableName
	OrReplace   bool
	IfNotExists bool
}

// DropFunction is DROP FUNCTION [IF EXISTS] f [(types)]; the signature is
// skipped.
type DropFunction struct {
	Name     TableName
	IfExists bool
}

// CreateAggregate is CREATE [OR REPLACE] AGGREGATE; its body is skipped.
type CreateAggregate struct {
	Name        TableName
	OrReplace   bool
	IfNotExists bool
}

// DropAggregate is DROP AGGREGATE [IF EXISTS] a [(types)].
type DropAggregate struct {
	Name     TableName
	IfExists bool
}

// CreateTrigger is CREATE TRIGGER [IF NOT EXISTS] name ON t USING 'class'.
type CreateTrigger struct {
	Name        string
	Table       TableName
	IfNotExists bool
}

// DropTrigger is DROP TRIGGER [IF EXISTS] name ON t.
type DropTrigger struct {
	Name     string
	Table    TableName
	IfExists bool
}

// DescribeKind is what a DESCRIBE statement asks for.
type DescribeKind uint8

// DESCRIBE kinds, as Cassandra 4's server-side DESCRIBE has them.
const (
	DescribeCluster    DescribeKind = iota // DESCRIBE CLUSTER
	DescribeSchema                         // DESCRIBE [FULL] SCHEMA
	DescribeKeyspaces                      // DESCRIBE KEYSPACES
	DescribeKeyspace                       // DESCRIBE [ONLY] KEYSPACE [k]
	DescribeTables                         // DESCRIBE TABLES
	DescribeTable                          // DESCRIBE TABLE [k.]t
	DescribeIndex                          // DESCRIBE INDEX [k.]i
	DescribeView                           // DESCRIBE MATERIALIZED VIEW [k.]v
	DescribeTypes                          // DESCRIBE TYPES
	DescribeType                           // DESCRIBE TYPE [k.]t
	DescribeFunctions                      // DESCRIBE FUNCTIONS
	DescribeFunction                       // DESCRIBE FUNCTION [k.]f
	DescribeAggregates                     // DESCRIBE AGGREGATES
	DescribeAggregate                      // DESCRIBE AGGREGATE [k.]a
	DescribeName                           // DESCRIBE [k.]name: a keyspace, table, view, index, ...
)

// Describe is DESC[RIBE] ..., which cqlsh 6 sends to the server. Name
// holds the object's name; for DescribeKeyspace the keyspace is in
// Name.Name (empty: the session's keyspace).
type Describe struct {
	Kind          DescribeKind
	Name          TableName
	Full          bool // DESCRIBE FULL SCHEMA
	Only          bool // DESCRIBE ONLY KEYSPACE
	WithInternals bool // ... WITH INTERNALS
}

func (*Describe) stmt()        {}
func (*Select) stmt()          {}
func (*Insert) stmt()          {}
func (*Update) stmt()          {}
func (*Delete) stmt()          {}
func (*Batch) stmt()           {}
func (*Use) stmt()             {}
func (*CreateKeyspace) stmt()  {}
func (*AlterKeyspace) stmt()   {}
func (*DropKeyspace) stmt()    {}
func (*CreateTable) stmt()     {}
func (*AlterTable) stmt()      {}
func (*DropTable) stmt()       {}
func (*Truncate) stmt()        {}
func (*CreateType) stmt()      {}
func (*AlterType) stmt()       {}
func (*DropType) stmt()        {}
func (*CreateIndex) stmt()     {}
func (*DropIndex) stmt()       {}
func (*CreateView) stmt()      {}
func (*AlterView) stmt()       {}
func (*DropView) stmt()        {}
func (*CreateFunction) stmt()  {}
func (*DropFunction) stmt()    {}
func (*CreateAggregate) stmt() {}
func (*DropAggregate) stmt()   {}
func (*CreateTrigger) stmt()   {}
func (*DropTrigger) stmt()     {}

// Binds returns the bind markers of s in order of appearance: nil for
// statements that take none.
func Binds(s Statement) []*Bind {
	switch s := s.(type) {
	case *Select:
		return s.Binds
	case *Insert:
		return s.Binds
	case *Update:
		return s.Binds
	case *Delete:
		return s.Binds
	case *Batch:
		return s.Binds
	}
	return nil
}
