package parse

import (
	"errors"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// FuzzParse feeds arbitrary text to the parser. Every input must give a
// statement, a positioned *Error or an *InvalidError, never a panic; a statement's markers
// must be numbered 0, 1, ... in order, and ast.Format of the statement
// must parse back to the same tree.
func FuzzParse(f *testing.F) {
	for _, s := range allTestStatements() {
		f.Add(s)
	}
	for _, c := range arithCases {
		f.Add(c.text)
	}
	for _, s := range []string{
		"SELECT * FROM t WHERE a = 1h30m AND b = P1DT2H AND c = -NaN AND d = 0x",
		"SELECT json AS j, distinct FROM t",
		"INSERT INTO t (a) VALUES ((tuple<int, text>)(1, 'a'))",
		"BEGIN BATCH INSERT INTO t (a) VALUES (:a) APPLY BATCH",
		"SELECT * FROM t WHERE m[?] = ? AND (a) IN ((1), (2))",
		"CREATE TABLE t (k int, PRIMARY KEY (k)) WITH caching = {'keys': 'ALL'} AND speculative_retry = NONE",
		"CREATE TABLE A(A froZen<list<ComPleX>>)", // a reserved type name in another case
		"CREATE TYPE BYte(A A)",
		"SELECT 'unterminated",
		"/* open comment",
		"\x00\xff\"\"''$$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Statement(text)
		checkResult(t, text, s, err)
		if err == nil {
			roundTrip(t, text, s)
		}
		list, err := Statements(text)
		if err != nil {
			checkResult(t, text, nil, err)
			return
		}
		for _, s := range list {
			checkResult(t, text, s, nil)
		}
	})
}

func checkResult(t *testing.T, text string, s ast.Statement, err error) {
	t.Helper()
	if err != nil {
		var pe *Error
		var ie *InvalidError
		switch {
		case errors.As(err, &ie):
			pe = &Error{Line: ie.Line, Col: ie.Col, Msg: ie.Msg}
		case !errors.As(err, &pe):
			t.Fatalf("%q: error %T %v, want *Error or *InvalidError", text, err, err)
		}
		if s != nil || pe.Line < 1 || pe.Col < 0 || pe.Msg == "" {
			t.Fatalf("%q: statement %T with error %#v", text, s, err)
		}
		return
	}
	if s == nil {
		t.Fatalf("%q: neither statement nor error", text)
	}
	for i, b := range ast.Binds(s) {
		if b.Index != i || b.Pos < 0 || b.Pos >= len(text) {
			t.Fatalf("%q: marker %d is %+v", text, i, b)
		}
	}
}
