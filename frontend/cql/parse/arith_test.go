package parse

import (
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// arithCases are selections with arithmetic and the tree each parses to,
// fully parenthesized by paren.
var arithCases = []struct{ text, tree string }{
	{"SELECT a + b FROM t", "(a + b)"},
	{"SELECT a + b * 2 FROM t", "(a + (b * 2))"},
	{"SELECT a * b + 2 FROM t", "((a * b) + 2)"},
	{"SELECT a - b - c FROM t", "((a - b) - c)"},
	{"SELECT a / b % c * d FROM t", "(((a / b) % c) * d)"},
	{"SELECT -a * 2 FROM t", "((-a) * 2)"},
	{"SELECT - -a FROM t", "(-(-a))"},
	{"SELECT -(a + b) FROM t", "(-(a + b))"},
	{"SELECT (a + b) * c FROM t", "((a + b) * c)"},
	{"SELECT a - (b - c) FROM t", "(a - (b - c))"},
	{"SELECT a - -1 FROM t", "(a - -1)"},
	{"SELECT ts - 1d, d + 2d FROM t", "(ts - 1d), (d + 2d)"},
	{"SELECT a + ?, (int)1 * b FROM t", "(a + ?), ((int)1 * b)"},
	{"SELECT f(a + 1, -b) / 2 FROM t", "(f((a + 1), (-b)) / 2)"},
	{"SELECT cast(a + b AS text), m[1] + 1 FROM t", "cast((a + b) AS text), (m[1] + 1)"},
	{"SELECT a + b AS s FROM t", "(a + b)"},
	{"SELECT (1, 2), (a) FROM t", "(1, 2), a"},
}

func TestSelectionArithmetic(t *testing.T) {
	for _, c := range arithCases {
		s, err := Statement(c.text)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		sel := s.(*ast.Select)
		got := ""
		for i, x := range sel.Selectors {
			if i > 0 {
				got += ", "
			}
			got += paren(x.Expr)
		}
		if got != c.tree {
			t.Errorf("%q parses as %s, want %s", c.text, got, c.tree)
		}
		roundTrip(t, c.text, s)
	}
}

func TestSelectionArithmeticErrors(t *testing.T) {
	for _, text := range []string{
		"SELECT a + FROM t",
		"SELECT a * * b FROM t",
		"SELECT (a + b FROM t",
		"SELECT a + b) FROM t",
		"SELECT a -- b FROM t",
	} {
		if _, err := Statement(text); err == nil {
			t.Errorf("%q parses", text)
		}
	}
}

// paren renders a selectable with every operation in parentheses.
func paren(s ast.Selectable) string {
	switch s := s.(type) {
	case *ast.OpSel:
		if s.Left == nil {
			return "(-" + paren(s.Right) + ")"
		}
		return "(" + paren(s.Left) + " " + string(s.Op) + " " + paren(s.Right) + ")"
	case *ast.FuncSel:
		out := s.Name + "("
		for i, a := range s.Args {
			if i > 0 {
				out += ", "
			}
			out += paren(a)
		}
		return out + ")"
	case *ast.CastSel:
		return "cast(" + paren(s.Arg) + " AS " + s.Type + ")"
	}
	out := ast.Format(&ast.Select{Selectors: []ast.Selector{{Expr: s}}, Table: ast.TableName{Name: "t"}})
	return strings.TrimSuffix(strings.TrimPrefix(out, "SELECT "), " FROM t")
}
