package parse

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// errorCases pin the position and the wording of syntax errors; msg is
// the whole of Error(), as the client sees it.
var errorCases = []struct {
	text string
	line int
	col  int
	msg  string
}{
	{"SELECT * FORM t", 1, 9, "line 1:9 mismatched input 'FORM' expecting K_FROM (SELECT * [FORM] t)"},
	{"SELECT a, b, c FORM t", 1, 15, "line 1:15 mismatched input 'FORM' expecting K_FROM (...a, b, c [FORM] t)"},
	{"SELEC * FROM t", 1, 0, "line 1:0 no viable alternative at input 'SELEC' ([SELEC] *...)"},
	{"SELECT * FROM t WHERE", 1, 21, "line 1:21 no viable alternative at input '<EOF>'"},
	{"SELECT * FROM t t2", 1, 16, "line 1:16 mismatched input 't2' expecting EOF (SELECT * FROM t [t2])"},
	{"SELECT * FROM select", 1, 14, "line 1:14 no viable alternative at input 'select' (SELECT * FROM [select])"},
	{"SELECT * FROM t; SELECT * FROM u", 1, 17, "line 1:17 mismatched input 'SELECT' expecting EOF (SELECT * FROM t; [SELECT] *...)"},
	{"SELECT * FROM t\nWHERE a = 1 AND\n  b = @", 3, 6, "line 3:6 no viable alternative at character '@'"},
	{"SELECT * FROM t\nWHERE a = 1 AND\n  b => 1", 3, 5, "line 3:5 no viable alternative at input '>' (...= 1 AND  b =[>] 1)"},
	{"SELECT * FROM t WHERE a = 1 LIMIT 1 ALLOW", 1, 41, "line 1:41 mismatched input '<EOF>' expecting K_FILTERING"},
	{"SELECT * FROM t LIMIT 'a'", 1, 22, "line 1:22 no viable alternative at input ''a'' (SELECT * FROM t LIMIT ['a'])"},
	{"SELECT \"\" FROM t", 1, 7, `line 1:7 no viable alternative at input '""' (SELECT [""] FROM...)`},
	{"SELECT 'é' < FROM t", 1, 11, "line 1:11 mismatched input '<' expecting K_FROM (SELECT 'é' [<] FROM...)"},
	{"SELECT 'é' + FROM t", 1, 13, "line 1:13 no viable alternative at input 'FROM' (SELECT 'é' + [FROM] t)"},
	{"", 1, 0, "line 1:0 no viable alternative at input '<EOF>'"},
	{";", 1, 0, "line 1:0 no viable alternative at input ';' ([;])"},
	{"INSERT INTO t (a) VALUES ('abc", 1, 30, "line 1:30 mismatched character '<EOF>' expecting '''"},
	{`INSERT INTO t (a) VALUES ("abc`, 1, 30, `line 1:30 mismatched character '<EOF>' expecting '"'`},
	{"INSERT INTO t (a) VALUES ($$abc", 1, 31, "line 1:31 mismatched character '<EOF>' expecting '$'"},
	{"SELECT * FROM t /* unterminated", 1, 31, "line 1:31 mismatched character '<EOF>' expecting '*'"},
	{"INSERT INTO t (a) VALUES (1) USING TTL 1 AND TTL 2", 1, 45, "line 1:45 Multiple definitions of TTL in USING (...) USING TTL 1 AND [TTL] 2)"},
	{"DELETE FROM t USING TTL 5 WHERE k = 0", 1, 20, "line 1:20 mismatched input 'TTL' expecting K_TIMESTAMP (DELETE FROM t USING [TTL] 5...)"},
	{"UPDATE t SET a = b + 1 WHERE k = 0", 1, 17, "Only expressions of the form X = X +<value> are supported."},
	{"UPDATE t SET a = b - {1} WHERE k = 0", 1, 17, "Only expressions of the form X = X -<value> are supported."},
	{"UPDATE t SET a = b -1 WHERE k = 0", 1, 17, "Only expressions of the form X = X - <value> are supported."},
	{"UPDATE t SET a = b 1 WHERE k = 0", 1, 17, "Only expressions of the form X = X + <value> are supported."},
	{"UPDATE t SET a = 1 + b WHERE k = 0", 1, 21, "Only expressions of the form X = <value> + X are supported."},
	// Cassandra's action runs once the operation has parsed: an error
	// in the operand comes first.
	{"UPDATE t SET a = b + WHERE k = 0", 1, 21, "line 1:21 no viable alternative at input 'WHERE' (...SET a = b + [WHERE] k...)"},
	{"UPDATE t SET a = a * 2 WHERE k = 0", 1, 19, "line 1:19 mismatched input '*' expecting '+' or '-' (...t SET a = a [*] 2...)"},
	{"UPDATE t SET a = 1", 1, 18, "line 1:18 mismatched input '<EOF>' expecting K_WHERE"},
	{"BEGIN BATCH SELECT * FROM t APPLY BATCH", 1, 12, "line 1:12 mismatched input 'SELECT' expecting K_APPLY (BEGIN BATCH [SELECT] *...)"},
	{"CREATE TABLE t (a int PRIMARY KEY, b list<int)", 1, 37, "line 1:37 no viable alternative at input 'list' (...int PRIMARY KEY, b [list]<...)"},
	{"CREATE KEYSPACE k WITH a = 1 AND a = 2", 1, 33, "Multiple definition for property 'a'"},
	{"CREATE KEYSPACE k WITH a = 1 AND a =", 1, 36, "line 1:36 no viable alternative at input '<EOF>'"},
	{"CREATE KEYSPACE k WITH replication = {'class': ?}", 1, 37, "Invalid property value: ? for property: 'class' (bind variables are not supported in DDL queries)"},
	{"CREATE KEYSPACE k WITH replication = {'class': now()}", 1, 37, "Invalid property value: now() for property: 'class'"},
	{"CREATE KEYSPACE k WITH replication = {:k: 'x'}", 1, 37, "Invalid property name: ? (bind variables are not supported in DDL queries)"},
	{"CREATE KEYSPACE k WITH replication = {'a': 1, 'a': 2}", 1, 37, "Multiple definition for property a"},
	{"CREATE KEYSPACE k WITH replication = {'a': 1, 'a': 2} AND replication = {}", 1, 37, "Multiple definition for property a"},
	{"CREATE KEYSPACE k WITH replication = {'class': null}", 1, 37, "Invalid property value: NULL for property: 'class'"},
	{"CREATE TABLE t (k int PRIMARY KEY) WITH comment = {1, 2}", 1, 52, "line 1:52 mismatched input ',' expecting ':' (...WITH comment = {1[,] 2...)"},
	{"CREATE TABLE t (k int PRIMARY KEY) WITH comment = {1}", 1, 52, "line 1:52 mismatched input '}' expecting ':' (...WITH comment = {1[}])"},
	{"CREATE ROLE r WITH OPTIONS = {'a': 1, 'a': 2}", 1, 29, "Multiple definition for property a"},
	{"CREATE ROLE r WITH OPTIONS = {'a': ?}", 1, 29, "Invalid property value: ? for property: 'a' (bind variables are not supported in DDL queries)"},
	{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c)", 1, 77, "line 1:77 no viable alternative at input ')' (...CLUSTERING ORDER BY (c[)])"},
	{"CREATE KEYSPACE k WITH durable_writes = null", 1, 40, "line 1:40 no viable alternative at input 'null' (...KEYSPACE k WITH durable_writes = [null])"},
	{"CREATE KEYSPACE k WITH durable_writes = ?", 1, 40, "line 1:40 no viable alternative at input '?' (...KEYSPACE k WITH durable_writes = [?])"},
	{"CREATE ROLE r WITH password = 'a' AND password = 'b'", 1, 38, "Multiple definition for property 'PASSWORD'"},
	{"CREATE ROLE r WITH login = true AND login = 1", 1, 44, "line 1:44 mismatched input '1' expecting BOOLEAN (...= true AND login = [1])"},
	{"ALTER ROLE r WITH options = {} AND options = {'a': 'b'}", 1, 35, "Multiple definition for property 'OPTIONS'"},
	{"CREATE ROLE r WITH login = 'yes'", 1, 27, "line 1:27 mismatched input ''yes'' expecting BOOLEAN (...ROLE r WITH login = ['yes'])"},
	{"CREATE USER \"bob\"", 1, 12, "Quoted strings are are not supported for user names and USER is deprecated, please use ROLE"},
	{"USE ?", 1, 4, "Bind variables cannot be used for keyspace names"},
	{"SELECT * FROM ks.?", 1, 17, "Bind variables cannot be used for table names"},
	{"SELECT * FROM ?.t", 1, 14, "Bind variables cannot be used for keyspace names"},
	{"DROP MATERIALIZED VIEW ?", 1, 23, "Bind variables cannot be used for table names"},
	{"DROP INDEX ks.?", 1, 14, "Bind variables cannot be used for index names"},
	{"DROP ROLE ?", 1, 10, "Bind variables cannot be used for role names"},
	// Only ? has an alternative, refused by an action; :name has none.
	{"DROP ROLE :r", 1, 10, "line 1:10 no viable alternative at input ':' (DROP ROLE [:]r)"},
	{"SELECT * FROM :t", 1, 14, "line 1:14 no viable alternative at input ':' (SELECT * FROM [:]t)"},
	{"DROP TYPE ?", 1, 10, "line 1:10 no viable alternative at input '?' (DROP TYPE [?])"},
	// Parser.g's reservedTypeNames, compared as written.
	{"CREATE TYPE byte (a int)", 1, 12, "Invalid (reserved) user type name byte"},
	{"CREATE TABLE t (k int PRIMARY KEY, v frozen<list<complex>>)", 1, 49, "Invalid (reserved) user type name complex"},
	{"CREATE TABLE t (k int PRIMARY KEY, v map<enum, int)", 1, 41, "Invalid (reserved) user type name enum"},
	{"CREATE TABLE t (k int PRIMARY KEY, v frozen<int>)", 1, 37, "frozen<> is only allowed on collections, tuples, and user-defined types (got int)"},
	{"CREATE TYPE u (a list<frozen<varchar>>)", 1, 22, "frozen<> is only allowed on collections, tuples, and user-defined types (got varchar)"},
	{"ALTER TABLE t ADD v frozen<text>", 1, 20, "frozen<> is only allowed on collections, tuples, and user-defined types (got text)"},
	// The action runs once '>' has parsed.
	{"CREATE TABLE t (k int PRIMARY KEY, v frozen<int)", 1, 37, "line 1:37 no viable alternative at input 'frozen' (...int PRIMARY KEY, v [frozen]<...)"},
	{"SELECT * FROM t WHERE a = " + deep(300), 1, 281, "line 1:281 statement nested too deeply (more than 256 levels) (...[[[[[[[][...)"},
	{"SELECT * FROM t WHERE a = 1 \x80", 1, 28, "line 1:28 invalid UTF-8 in statement"},
	{"INSERT INTO t (a) VALUES ('\xff')", 1, 26, "line 1:26 invalid UTF-8 in string literal"},
}

// deep is a list literal nested n levels.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestErrors(t *testing.T) {
	for _, c := range errorCases {
		s, err := Statement(c.text)
		if err == nil {
			t.Errorf("Statement(%q) = %T, want an error", c.text, s)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Statement(%q): error %T %v, want *Error", c.text, err, err)
			continue
		}
		if pe.Line != c.line || pe.Col != c.col {
			t.Errorf("Statement(%q): error at %d:%d, want %d:%d (%v)", c.text, pe.Line, pe.Col, c.line, c.col, err)
		}
		if c.msg != "" && err.Error() != c.msg {
			t.Errorf("Statement(%q):\n got %s\nwant %s", c.text, err, c.msg)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	// Nesting within the limit parses; past it, an error instead of a
	// blown stack.
	if _, err := Statement("SELECT * FROM t WHERE a = " + deep(200)); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"SELECT * FROM t WHERE a = " + deep(20000),
		"SELECT " + strings.Repeat("f(", 20000) + " FROM t",
		"CREATE TABLE t (k " + strings.Repeat("frozen<", 20000) + " PRIMARY KEY)",
		"SELECT * FROM t WHERE " + strings.Repeat("(", 20000) + "a = 1",
		"INSERT INTO t (a) VALUES (" + strings.Repeat("(int)", 20000) + "1)",
	} {
		if _, err := Statement(text); err == nil {
			t.Errorf("Statement(%.40q...) succeeded", text)
		}
	}
}

// TestPositions checks the byte offsets of literals and markers, which
// the executor uses to point at a bad value.
func TestPositions(t *testing.T) {
	const text = "INSERT INTO t (a, b, c) VALUES (?, 'x', :n)"
	s, err := Statement(text)
	if err != nil {
		t.Fatal(err)
	}
	in := s.(*ast.Insert)
	if b := in.Values[0].(*ast.Bind); text[b.Pos:b.Pos+1] != "?" {
		t.Errorf("marker at %d", b.Pos)
	}
	if l := in.Values[1].(*ast.Literal); text[l.Pos:l.Pos+3] != "'x'" {
		t.Errorf("literal at %d", l.Pos)
	}
	if b := in.Values[2].(*ast.Bind); text[b.Pos:b.Pos+2] != ":n" {
		t.Errorf("named marker at %d", b.Pos)
	}
}

func TestStatements(t *testing.T) {
	script := `
		-- a script
		CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
		USE ks;;
		CREATE TABLE t (k int PRIMARY KEY, v text);
		INSERT INTO t (k, v) VALUES (?, ?);
		CREATE FUNCTION f (a int) RETURNS int LANGUAGE java AS $$ return a; $$;
		UPDATE t SET v = ? WHERE k = ?
	`
	list, err := Statements(script)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 6 {
		t.Fatalf("%d statements, want 6", len(list))
	}
	if _, ok := list[4].(*ast.CreateFunction); !ok {
		t.Errorf("statement 4 is %T", list[4])
	}
	// Each statement numbers its markers from 0.
	up := list[5].(*ast.Update)
	if len(up.Binds) != 2 || up.Binds[0].Index != 0 || up.Binds[1].Index != 1 {
		t.Errorf("update binds %+v", up.Binds)
	}
	if got := len(ast.Binds(list[3])); got != 2 {
		t.Errorf("insert has %d binds", got)
	}
	if ast.Binds(list[0]) != nil {
		t.Errorf("CREATE KEYSPACE has binds")
	}

	for _, empty := range []string{"", " ;; ", "-- only a comment\n"} {
		list, err := Statements(empty)
		if err != nil || len(list) != 0 {
			t.Errorf("Statements(%q) = %v, %v", empty, list, err)
		}
	}
	_, err = Statements("USE a; USE b c; USE d")
	var pe *Error
	if !errors.As(err, &pe) || pe.Col != 13 {
		t.Errorf("error %v, want one at column 13", err)
	}
}

// TestPrefixes parses every prefix of every test statement: each must
// give a statement or an error, never a panic.
func TestPrefixes(t *testing.T) {
	for _, text := range allTestStatements() {
		for i := range text {
			s, err := Statement(text[:i])
			if (s == nil) == (err == nil) {
				t.Fatalf("Statement(%q) = %v, %v", text[:i], s, err)
			}
		}
	}
}

func allTestStatements() []string {
	var list []string
	for _, cases := range [][]parseCase{selectCases, termCases, insertCases, updateCases, deleteCases, batchCases, ddlCases, describeCases, authCases} {
		for _, c := range cases {
			list = append(list, c.text)
		}
	}
	for _, c := range errorCases {
		if len(c.text) < 1000 {
			list = append(list, c.text)
		}
	}
	return list
}

// TestInvalidErrors pins the checks that Cassandra's grammar actions make
// with an InvalidRequestException: an *InvalidError, which ends the parse
// at once, so that it wins over a syntax error after it.
func TestInvalidErrors(t *testing.T) {
	for _, c := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))", 1, 42, "Multiple PRIMARY KEY specified for table 't' (exactly one required)"},
		{"CREATE TABLE ks.\"T\" (a int PRIMARY KEY, b int PRIMARY KEY, c int PRIMARY KEY", 1, 46, "Multiple PRIMARY KEY specified for table 'ks.T' (exactly one required)"},
		{"CREATE TABLE t (a int, PRIMARY KEY (a), PRIMARY KEY (b, +", 1, 40, "Multiple PRIMARY KEY specified for table 't' (exactly one required)"},
		{"CREATE TABLE t (a int, b text, a int, PRIMARY KEY (a))", 1, 31, "Duplicate column 'a' declaration for table 't'"},
		{"CREATE TABLE t (a int PRIMARY KEY, a int PRIMARY KEY)", 1, 35, "Duplicate column 'a' declaration for table 't'"},
		{"CREATE TABLE t (a int) WITH CLUSTERING ORDER BY (b ASC) AND CLUSTERING ORDER BY (b DESC) AND x", 1, 81, "Duplicate column 'b' in CLUSTERING ORDER BY clause for table 't'"},
	} {
		s, err := Statement(c.text)
		var ie *InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("Statement(%q) = %T, %v; want an *InvalidError", c.text, s, err)
			continue
		}
		if ie.Line != c.line || ie.Col != c.col || err.Error() != c.msg {
			t.Errorf("Statement(%q): %d:%d %q, want %d:%d %q", c.text, ie.Line, ie.Col, err, c.line, c.col, c.msg)
		}
	}
}

// TestBare checks that an action error keeps its position for tools while
// printing the bare message, and that ANTLR's errors are not bare.
func TestBare(t *testing.T) {
	_, err := Statement("USE ?")
	var pe *Error
	if !errors.As(err, &pe) || !pe.Bare || pe.Line != 1 || pe.Col != 4 || err.Error() != pe.Msg {
		t.Errorf("USE ?: %#v", err)
	}
	_, err = Statement("USE")
	if !errors.As(err, &pe) || pe.Bare || !strings.HasPrefix(err.Error(), "line 1:3 ") {
		t.Errorf("USE: %#v", err)
	}
}

// TestLeftToExecutor lists statements the parser used to refuse that
// Cassandra refuses only when it prepares them: they parse.
func TestLeftToExecutor(t *testing.T) {
	for _, text := range []string{
		"INSERT INTO t (a, b) VALUES (1)",     // Unmatched column names/values
		"INSERT INTO t (a) VALUES (1, 2)",     // likewise
		"CREATE TABLE t (a int)",              // No PRIMARY KEY specifed
		"CREATE TABLE t (a int, b int,)",      // likewise, with a trailing comma
		"ALTER ROLE r",                        // ALTER [ROLE|USER] can't be empty
		"ALTER ROLE IF EXISTS r",              // likewise
		"CREATE TYPE BYTE (a int)",            // reserved names compare as written
		"CREATE TYPE ks.t (a frozen<byte.u>)", // a keyspace may be so named
		`CREATE TYPE ks.t (a frozen<"int">)`,  // a user type may be so named
	} {
		if _, err := Statement(text); err != nil {
			t.Errorf("Statement(%q): %v", text, err)
		}
	}
	// Cassandra's grammar takes any integer after c = c, not only a
	// negative one: c = c 5 adds 5.
	s, err := Statement("UPDATE t SET a = a 5 WHERE k = 0")
	if err != nil {
		t.Fatal(err)
	}
	a := s.(*ast.Update).Set[0]
	if lit, ok := a.Value.(*ast.Literal); a.Kind != ast.AssignAdd || !ok || lit.Text != "5" {
		t.Errorf("a = a 5 parses as %+v", a)
	}
}

// TestDeepNestingCostsLittle: a statement nested far too deeply is
// refused after the tokens up to the refusal, not after lexing the whole
// text: 8 MB of parentheses allocate a few kilobytes, not gigabytes.
func TestDeepNestingCostsLittle(t *testing.T) {
	const depth = 4 << 20
	text := "SELECT * FROM t WHERE p = " + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Statement(text)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("error %v, want nested too deeply", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing took %d bytes of allocations, want less than 1 MiB", n)
	}
}
