package parse

import (
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

type parseCase struct {
	text string
	want ast.Statement
}

var selectCases = []parseCase{
	{"SELECT * FROM t", &ast.Select{Table: tn("t")}},
	{"select * from KS.Tab;", &ast.Select{Table: ktn("ks", "tab")}},
	{`SELECT * FROM "KS"."Tab" ;;`, &ast.Select{Table: ktn("KS", "Tab")}},
	{"SELECT a, B, \"C\" AS x, \"say \"\"hi\"\"\" FROM t", &ast.Select{
		Table: tn("t"),
		Selectors: []ast.Selector{sel(col("a")), sel(col("b")),
			{Expr: col("C"), Alias: "x"}, sel(col(`say "hi"`))},
	}},
	// Unreserved keywords are column names.
	{"SELECT key, type, value, ttl, timestamp, json, distinct, count, writetime, cast, as, text, date FROM t", &ast.Select{
		Table: tn("t"),
		Selectors: []ast.Selector{sel(col("key")), sel(col("type")), sel(col("value")), sel(col("ttl")),
			sel(col("timestamp")), sel(col("json")), sel(col("distinct")), sel(col("count")),
			sel(col("writetime")), sel(col("cast")), sel(col("as")), sel(col("text")), sel(col("date"))},
	}},
	{"SELECT JSON * FROM t", &ast.Select{JSON: true, Table: tn("t")}},
	{"SELECT JSON DISTINCT a, b FROM t", &ast.Select{JSON: true, Distinct: true, Table: tn("t"),
		Selectors: []ast.Selector{sel(col("a")), sel(col("b"))}}},
	{"SELECT json FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{sel(col("json"))}}},
	{"SELECT json AS j FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{{Expr: col("json"), Alias: "j"}}}},
	{"SELECT distinct, json FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{sel(col("distinct")), sel(col("json"))}}},
	{"SELECT DISTINCT json FROM t", &ast.Select{Distinct: true, Table: tn("t"), Selectors: []ast.Selector{sel(col("json"))}}},
	{"SELECT COUNT(*), count(1), Count(*) AS n FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{
		sel(&ast.CountRows{}),
		sel(&ast.FuncSel{Name: "count", Args: []ast.Selectable{&ast.TermSel{Term: num("1")}}}),
		{Expr: &ast.CountRows{}, Alias: "n"},
	}}},
	{"SELECT WRITETIME(v), TTL(\"V\"), writetime(v) AS wt FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{
		sel(&ast.WriteTimeSel{Column: "v"}), sel(&ast.TTLSel{Column: "V"}),
		{Expr: &ast.WriteTimeSel{Column: "v"}, Alias: "wt"},
	}}},
	{"SELECT CAST(a AS text), cast(toJson(b) as Frozen<List<Int>>) FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{
		sel(&ast.CastSel{Arg: col("a"), Type: "text"}),
		sel(&ast.CastSel{Arg: &ast.FuncSel{Name: "tojson", Args: []ast.Selectable{col("b")}}, Type: "frozen<list<int>>"}),
	}}},
	{"SELECT now(), ks.f(a, 'x', ?), \"MyF\"(b), token(k), min(v), system.blobAsText(b) FROM t", &ast.Select{
		Table: tn("t"),
		Selectors: []ast.Selector{
			sel(&ast.FuncSel{Name: "now"}),
			sel(&ast.FuncSel{Keyspace: "ks", Name: "f", Args: []ast.Selectable{col("a"), &ast.TermSel{Term: str("x")}, &ast.TermSel{Term: bind(0)}}}),
			sel(&ast.FuncSel{Name: "MyF", Args: []ast.Selectable{col("b")}}),
			sel(&ast.FuncSel{Name: "token", Args: []ast.Selectable{col("k")}}),
			sel(&ast.FuncSel{Name: "min", Args: []ast.Selectable{col("v")}}),
			sel(&ast.FuncSel{Keyspace: "system", Name: "blobastext", Args: []ast.Selectable{col("b")}}),
		},
		Binds: binds(bind(0)),
	}},
	{"SELECT u.street, m['k'], u.a.b, l[?] FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{
		sel(&ast.FieldSel{Arg: col("u"), Field: "street"}),
		sel(&ast.ElemSel{Arg: col("m"), Key: str("k")}),
		sel(&ast.FieldSel{Arg: &ast.FieldSel{Arg: col("u"), Field: "a"}, Field: "b"}),
		sel(&ast.ElemSel{Arg: col("l"), Key: bind(0)}),
	}, Binds: binds(bind(0))}},
	{"SELECT 1, 'a', (int)?, [1, 2], null, true FROM t", &ast.Select{Table: tn("t"), Selectors: []ast.Selector{
		sel(&ast.TermSel{Term: num("1")}), sel(&ast.TermSel{Term: str("a")}),
		sel(&ast.TermSel{Term: &ast.Hint{Type: "int", Term: bind(0)}}),
		sel(&ast.TermSel{Term: list(num("1"), num("2"))}),
		sel(&ast.TermSel{Term: null()}), sel(&ast.TermSel{Term: boo("true")}),
	}, Binds: binds(bind(0))}},
	{"SELECT * FROM t WHERE a = 1 AND b > 2 AND b <= 3 AND c < 4 AND c >= 5 AND d != 6", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{eq("a", num("1")), rel("b", ast.OpGt, num("2")), rel("b", ast.OpLte, num("3")),
			rel("c", ast.OpLt, num("4")), rel("c", ast.OpGte, num("5")), rel("d", ast.OpNe, num("6"))},
	}},
	{"SELECT * FROM t WHERE a IN (1, 2) AND b IN ? AND c IN () AND d IN (?) AND e IN :vals", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{
			rel("a", ast.OpIn, tuple(num("1"), num("2"))),
			rel("b", ast.OpIn, bind(0)),
			rel("c", ast.OpIn, tuple()),
			rel("d", ast.OpIn, tuple(bind(1))),
			rel("e", ast.OpIn, named(2, "vals")),
		},
		Binds: binds(bind(0), bind(1), named(2, "vals")),
	}},
	{"SELECT * FROM t WHERE s CONTAINS 1 AND m CONTAINS KEY 'k' AND name LIKE 'a%' AND m['x'] = 3 ALLOW FILTERING", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{
			rel("s", ast.OpContains, num("1")),
			rel("m", ast.OpContainsKey, str("k")),
			rel("name", ast.OpLike, str("a%")),
			{Columns: cols("m"), MapKey: str("x"), Op: ast.OpEq, Value: num("3")},
		},
		AllowFiltering: true,
	}},
	{"SELECT * FROM t WHERE token(a, b) > token(1, 2) AND token(a, b) <= ? AND TOKEN(a,b) < -9223372036854775808", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{
			{Columns: cols("a", "b"), Token: true, Op: ast.OpGt, Value: &ast.Call{Name: "token", Args: terms(num("1"), num("2"))}},
			{Columns: cols("a", "b"), Token: true, Op: ast.OpLte, Value: bind(0)},
			{Columns: cols("a", "b"), Token: true, Op: ast.OpLt, Value: num("-9223372036854775808")},
		},
		Binds: binds(bind(0)),
	}},
	{"SELECT * FROM t WHERE k = 0 AND (a, b) > (1, 2) AND (a, b) <= ? AND (c) = (3)", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{
			eq("k", num("0")),
			{Columns: cols("a", "b"), Multi: true, Op: ast.OpGt, Value: tuple(num("1"), num("2"))},
			{Columns: cols("a", "b"), Multi: true, Op: ast.OpLte, Value: bind(0)},
			{Columns: cols("c"), Multi: true, Op: ast.OpEq, Value: tuple(num("3"))},
		},
		Binds: binds(bind(0)),
	}},
	{"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4)) AND (c, d) IN (?, ?) AND (e, f) IN ? AND (g, h) IN ()", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{
			{Columns: cols("a", "b"), Multi: true, Op: ast.OpIn, Value: tuple(tuple(num("1"), num("2")), tuple(num("3"), num("4")))},
			{Columns: cols("c", "d"), Multi: true, Op: ast.OpIn, Value: tuple(bind(0), bind(1))},
			{Columns: cols("e", "f"), Multi: true, Op: ast.OpIn, Value: bind(2)},
			{Columns: cols("g", "h"), Multi: true, Op: ast.OpIn, Value: tuple()},
		},
		Binds: binds(bind(0), bind(1), bind(2)),
	}},
	{"SELECT * FROM t WHERE (a = 1) AND b = 2", &ast.Select{Table: tn("t"), Where: []ast.Relation{eq("a", num("1")), eq("b", num("2"))}}},
	{"SELECT a, count(*) FROM t WHERE k = ? GROUP BY a, b ORDER BY a DESC, b ASC, c PER PARTITION LIMIT 2 LIMIT ? ALLOW FILTERING", &ast.Select{
		Selectors:         []ast.Selector{sel(col("a")), sel(&ast.CountRows{})},
		Table:             tn("t"),
		Where:             []ast.Relation{eq("k", bind(0))},
		GroupBy:           cols("a", "b"),
		OrderBy:           []ast.Ordering{{Column: "a", Desc: true}, {Column: "b"}, {Column: "c"}},
		PerPartitionLimit: num("2"),
		Limit:             bind(1),
		AllowFiltering:    true,
		Binds:             binds(bind(0), bind(1)),
	}},
	{"SELECT * FROM t WHERE key = :k AND \"Key\" = :\"K\" LIMIT :lim", &ast.Select{
		Table: tn("t"),
		Where: []ast.Relation{eq("key", named(0, "k")), eq("Key", named(1, "K"))},
		Limit: named(2, "lim"),
		Binds: binds(named(0, "k"), named(1, "K"), named(2, "lim")),
	}},
	{"SELECT * FROM t WHERE a IS NOT NULL", &ast.Select{Table: tn("t"), Where: []ast.Relation{{Columns: cols("a"), Op: ast.OpIsNotNull}}}},
}

var termCases = []parseCase{
	// Every literal kind, collections, tuples, user types, calls, hints.
	{`INSERT INTO t (a, b, c, d, e, f, g, h, i, j, k, l, m, n) VALUES ('it''s', $$pg 'style'$$, -12, 1.5, -2.5e-3, 1E10, NaN, -Infinity, true, FALSE, null, 0xCAFE, 0X, 123e4567-e89b-12d3-a456-426614174000)`, &ast.Insert{
		Table:   tn("t"),
		Columns: cols("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"),
		Values: terms(str("it's"), str("pg 'style'"), num("-12"), flt("1.5"), flt("-2.5e-3"), flt("1E10"),
			flt("NaN"), flt("-Infinity"), boo("true"), boo("false"), null(), blob("0xCAFE"), blob("0X"),
			uid("123e4567-e89b-12d3-a456-426614174000")),
	}},
	{"INSERT INTO t (a, b, c, d, e, f, g) VALUES (1h30m, -2d, 1mo2w3ms4us5ns6µs, P1Y2M3DT4H5M6S, PT1H, P2W, P0001-02-03T04:05:06)", &ast.Insert{
		Table:   tn("t"),
		Columns: cols("a", "b", "c", "d", "e", "f", "g"),
		Values:  terms(dur("1h30m"), dur("-2d"), dur("1mo2w3ms4us5ns6µs"), dur("P1Y2M3DT4H5M6S"), dur("PT1H"), dur("P2W"), dur("P0001-02-03T04:05:06")),
	}},
	{"INSERT INTO t (a, b, c, d) VALUES (DEADBEEF-0000-1111-2222-333344445555, 1.e5, 5., -NaN)", &ast.Insert{
		Table:   tn("t"),
		Columns: cols("a", "b", "c", "d"),
		Values:  terms(uid("DEADBEEF-0000-1111-2222-333344445555"), flt("1.e5"), flt("5."), flt("NaN")),
	}},
	{"INSERT INTO t (l, s, m, e, u, tp, n) VALUES ([1, 2], {'a', 'b'}, {1: 'x', 2: 'y'}, {}, {street: 'x', \"Zip\": ?}, (1, 'a', [3]), [[1], []])", &ast.Insert{
		Table:   tn("t"),
		Columns: cols("l", "s", "m", "e", "u", "tp", "n"),
		Values: terms(list(num("1"), num("2")), set(str("a"), str("b")), mapOf(num("1"), str("x"), num("2"), str("y")),
			&ast.Map{}, mapOf(&ast.Ident{Name: "street"}, str("x"), &ast.Ident{Name: "Zip"}, bind(0)),
			tuple(num("1"), str("a"), list(num("3"))), list(list(num("1")), list())),
		Binds: binds(bind(0)),
	}},
	{"INSERT INTO t (a, b, c, d) VALUES (now(), toTimestamp(now()), ks.f(?, 1), (bigint)?)", &ast.Insert{
		Table:   tn("t"),
		Columns: cols("a", "b", "c", "d"),
		Values: terms(&ast.Call{Name: "now"}, &ast.Call{Name: "totimestamp", Args: terms(&ast.Call{Name: "now"})},
			&ast.Call{Keyspace: "ks", Name: "f", Args: terms(bind(0), num("1"))},
			&ast.Hint{Type: "bigint", Term: bind(1)}),
		Binds: binds(bind(0), bind(1)),
	}},
	{"INSERT INTO t (a, b) VALUES ((frozen<list<int>>)[1], (ks.\"MyType\"){f: 1})", &ast.Insert{
		Table:   tn("t"),
		Columns: cols("a", "b"),
		Values: terms(&ast.Hint{Type: "frozen<list<int>>", Term: list(num("1"))},
			&ast.Hint{Type: `ks."MyType"`, Term: mapOf(&ast.Ident{Name: "f"}, num("1"))}),
	}},
	// A map whose key is a call is a map, not a user-type literal.
	{"INSERT INTO t (m) VALUES ({now(): 1})", &ast.Insert{Table: tn("t"), Columns: cols("m"),
		Values: terms(mapOf(&ast.Call{Name: "now"}, num("1")))}},
	// Comments anywhere.
	{"INSERT /* c1 */ INTO t -- c2\n (a) // c3\n VALUES (1) /* multi\nline */", &ast.Insert{Table: tn("t"), Columns: cols("a"), Values: terms(num("1"))}},
}

var insertCases = []parseCase{
	{"INSERT INTO ks.t (a, b) VALUES (?, ?) IF NOT EXISTS USING TTL 10 AND TIMESTAMP 123", &ast.Insert{
		Table: ktn("ks", "t"), Columns: cols("a", "b"), Values: terms(bind(0), bind(1)), IfNotExists: true,
		Using: ast.Using{TTL: num("10"), Timestamp: num("123")},
		Binds: binds(bind(0), bind(1)),
	}},
	{"INSERT INTO t (a) VALUES (1) USING TIMESTAMP ? AND TTL :ttl", &ast.Insert{
		Table: tn("t"), Columns: cols("a"), Values: terms(num("1")),
		Using: ast.Using{Timestamp: bind(0), TTL: named(1, "ttl")},
		Binds: binds(bind(0), named(1, "ttl")),
	}},
	{`INSERT INTO t JSON '{"a": 1}'`, &ast.Insert{Table: tn("t"), JSON: str(`{"a": 1}`)}},
	{"INSERT INTO t JSON ? DEFAULT UNSET IF NOT EXISTS USING TTL 5", &ast.Insert{
		Table: tn("t"), JSON: bind(0), DefaultUnset: true, IfNotExists: true,
		Using: ast.Using{TTL: num("5")}, Binds: binds(bind(0)),
	}},
	{"INSERT INTO t JSON :j DEFAULT NULL", &ast.Insert{Table: tn("t"), JSON: named(0, "j"), Binds: binds(named(0, "j"))}},
}

var updateCases = []parseCase{
	{"UPDATE t SET a = 1, b = ? WHERE k = ?", &ast.Update{
		Table: tn("t"),
		Set:   []ast.Assignment{{Column: "a", Value: num("1")}, {Column: "b", Value: bind(0)}},
		Where: []ast.Relation{eq("k", bind(1))},
		Binds: binds(bind(0), bind(1)),
	}},
	{"UPDATE ks.t USING TTL 5 AND TIMESTAMP 6 SET c = c + 1, d = d - ?, l = [1] + l, s = s + {'a'}, m = m + {'k': 'v'}, e += 2, f -= {3} WHERE k = 0", &ast.Update{
		Table: ktn("ks", "t"),
		Using: ast.Using{TTL: num("5"), Timestamp: num("6")},
		Set: []ast.Assignment{
			{Column: "c", Kind: ast.AssignAdd, Value: num("1")},
			{Column: "d", Kind: ast.AssignRemove, Value: bind(0)},
			{Column: "l", Kind: ast.AssignPrepend, Value: list(num("1"))},
			{Column: "s", Kind: ast.AssignAdd, Value: set(str("a"))},
			{Column: "m", Kind: ast.AssignAdd, Value: mapOf(str("k"), str("v"))},
			{Column: "e", Kind: ast.AssignAdd, Value: num("2")},
			{Column: "f", Kind: ast.AssignRemove, Value: set(num("3"))},
		},
		Where: []ast.Relation{eq("k", num("0"))},
		Binds: binds(bind(0)),
	}},
	// As in Cassandra, c = c -1 lexes as c, -1: adding a negative number.
	{"UPDATE t SET c = c -1, d = d-2 WHERE k = 0", &ast.Update{
		Table: tn("t"),
		Set: []ast.Assignment{
			{Column: "c", Kind: ast.AssignAdd, Value: num("-1")},
			{Column: "d", Kind: ast.AssignAdd, Value: num("-2")},
		},
		Where: []ast.Relation{eq("k", num("0"))},
	}},
	{"UPDATE t SET l[0] = 'x', m['k'] = ?, u.street = 'y', u = {street: 'z'}, l = null WHERE k = 0 AND c IN (1, 2)", &ast.Update{
		Table: tn("t"),
		Set: []ast.Assignment{
			{Column: "l", Kind: ast.AssignElem, Key: num("0"), Value: str("x")},
			{Column: "m", Kind: ast.AssignElem, Key: str("k"), Value: bind(0)},
			{Column: "u", Kind: ast.AssignField, Field: "street", Value: str("y")},
			{Column: "u", Value: mapOf(&ast.Ident{Name: "street"}, str("z"))},
			{Column: "l", Value: null()},
		},
		Where: []ast.Relation{eq("k", num("0")), rel("c", ast.OpIn, tuple(num("1"), num("2")))},
		Binds: binds(bind(0)),
	}},
	{"UPDATE t SET a = 1 WHERE k = 0 IF EXISTS", &ast.Update{Table: tn("t"),
		Set: []ast.Assignment{{Column: "a", Value: num("1")}}, Where: []ast.Relation{eq("k", num("0"))}, IfExists: true}},
	{"UPDATE t SET a = 1 WHERE k = 0 IF a = 2 AND b != null AND c > 3 AND l[1] = 'x' AND m['k'] IN ('a', 'b') AND u.f <= ? AND d IN ?", &ast.Update{
		Table: tn("t"),
		Set:   []ast.Assignment{{Column: "a", Value: num("1")}},
		Where: []ast.Relation{eq("k", num("0"))},
		If: []ast.Condition{
			{Column: "a", Op: ast.OpEq, Value: num("2")},
			{Column: "b", Op: ast.OpNe, Value: null()},
			{Column: "c", Op: ast.OpGt, Value: num("3")},
			{Column: "l", Elem: num("1"), Op: ast.OpEq, Value: str("x")},
			{Column: "m", Elem: str("k"), Op: ast.OpIn, Value: tuple(str("a"), str("b"))},
			{Column: "u", Field: "f", Op: ast.OpLte, Value: bind(0)},
			{Column: "d", Op: ast.OpIn, Value: bind(1)},
		},
		Binds: binds(bind(0), bind(1)),
	}},
	// Unreserved keywords as column names on both sides.
	{"UPDATE t SET value = value + 1, ttl = 2 WHERE key = 0", &ast.Update{
		Table: tn("t"),
		Set:   []ast.Assignment{{Column: "value", Kind: ast.AssignAdd, Value: num("1")}, {Column: "ttl", Value: num("2")}},
		Where: []ast.Relation{eq("key", num("0"))},
	}},
}

var deleteCases = []parseCase{
	{"DELETE FROM t WHERE k = 1", &ast.Delete{Table: tn("t"), Where: []ast.Relation{eq("k", num("1"))}}},
	{"DELETE a, l[0], m['k'], u.f FROM ks.t USING TIMESTAMP ? WHERE k = ? AND c >= 1 AND c < 5 IF EXISTS", &ast.Delete{
		Columns:  []ast.DeleteTarget{{Column: "a"}, {Column: "l", Elem: num("0")}, {Column: "m", Elem: str("k")}, {Column: "u", Field: "f"}},
		Table:    ktn("ks", "t"),
		Using:    ast.Using{Timestamp: bind(0)},
		Where:    []ast.Relation{eq("k", bind(1)), rel("c", ast.OpGte, num("1")), rel("c", ast.OpLt, num("5"))},
		IfExists: true,
		Binds:    binds(bind(0), bind(1)),
	}},
	{"DELETE FROM t WHERE k = 1 AND (a, b) >= (1, 2) IF v = 3 AND w IN (1)", &ast.Delete{
		Table: tn("t"),
		Where: []ast.Relation{eq("k", num("1")), {Columns: cols("a", "b"), Multi: true, Op: ast.OpGte, Value: tuple(num("1"), num("2"))}},
		If:    []ast.Condition{{Column: "v", Op: ast.OpEq, Value: num("3")}, {Column: "w", Op: ast.OpIn, Value: tuple(num("1"))}},
	}},
	{"DELETE FROM t WHERE k = 1 IF l CONTAINS 2 AND m CONTAINS KEY 'a'", &ast.Delete{
		Table: tn("t"),
		Where: []ast.Relation{eq("k", num("1"))},
		If:    []ast.Condition{{Column: "l", Op: ast.OpContains, Value: num("2")}, {Column: "m", Op: ast.OpContainsKey, Value: str("a")}},
	}},
}

var batchCases = []parseCase{
	{"BEGIN BATCH INSERT INTO t (a) VALUES (?); UPDATE t SET b = ? WHERE a = ?; DELETE FROM t WHERE a = 1; APPLY BATCH", &ast.Batch{
		Statements: []ast.Statement{
			&ast.Insert{Table: tn("t"), Columns: cols("a"), Values: terms(bind(0)), Binds: binds(bind(0))},
			&ast.Update{Table: tn("t"), Set: []ast.Assignment{{Column: "b", Value: bind(1)}}, Where: []ast.Relation{eq("a", bind(2))}, Binds: binds(bind(1), bind(2))},
			&ast.Delete{Table: tn("t"), Where: []ast.Relation{eq("a", num("1"))}},
		},
		Binds: binds(bind(0), bind(1), bind(2)),
	}},
	{"begin unlogged batch using timestamp 7 insert into t (a) values (1) insert into t (a) values (2) apply batch;", &ast.Batch{
		Type:  ast.BatchUnlogged,
		Using: ast.Using{Timestamp: num("7")},
		Statements: []ast.Statement{
			&ast.Insert{Table: tn("t"), Columns: cols("a"), Values: terms(num("1"))},
			&ast.Insert{Table: tn("t"), Columns: cols("a"), Values: terms(num("2"))},
		},
	}},
	{"BEGIN COUNTER BATCH UPDATE c SET n = n + 1 WHERE k = 1; APPLY BATCH", &ast.Batch{
		Type: ast.BatchCounter,
		Statements: []ast.Statement{
			&ast.Update{Table: tn("c"), Set: []ast.Assignment{{Column: "n", Kind: ast.AssignAdd, Value: num("1")}}, Where: []ast.Relation{eq("k", num("1"))}},
		},
	}},
	{"BEGIN BATCH APPLY BATCH", &ast.Batch{}},
	{"BEGIN BATCH UPDATE t SET a = 1 WHERE k = 0 IF a = 2; INSERT INTO t (k) VALUES (1) IF NOT EXISTS; APPLY BATCH", &ast.Batch{
		Statements: []ast.Statement{
			&ast.Update{Table: tn("t"), Set: []ast.Assignment{{Column: "a", Value: num("1")}}, Where: []ast.Relation{eq("k", num("0"))},
				If: []ast.Condition{{Column: "a", Op: ast.OpEq, Value: num("2")}}},
			&ast.Insert{Table: tn("t"), Columns: cols("k"), Values: terms(num("1")), IfNotExists: true},
		},
	}},
}

func runCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) { checkParse(t, c.text, c.want) })
	}
}

func TestSelect(t *testing.T) { runCases(t, selectCases) }
func TestTerms(t *testing.T)  { runCases(t, termCases) }
func TestInsert(t *testing.T) { runCases(t, insertCases) }
func TestUpdate(t *testing.T) { runCases(t, updateCases) }
func TestDelete(t *testing.T) { runCases(t, deleteCases) }
func TestBatch(t *testing.T)  { runCases(t, batchCases) }
