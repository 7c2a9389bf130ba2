package parse

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// Constructors that keep the expected trees of the tests short. Their
// positions are zero: stripPos clears the parser's before comparing, and
// positions are tested on their own.

func str(s string) *ast.Literal  { return &ast.Literal{Kind: ast.LitString, Text: s} }
func num(s string) *ast.Literal  { return &ast.Literal{Kind: ast.LitInteger, Text: s} }
func flt(s string) *ast.Literal  { return &ast.Literal{Kind: ast.LitFloat, Text: s} }
func boo(s string) *ast.Literal  { return &ast.Literal{Kind: ast.LitBoolean, Text: s} }
func uid(s string) *ast.Literal  { return &ast.Literal{Kind: ast.LitUUID, Text: s} }
func blob(s string) *ast.Literal { return &ast.Literal{Kind: ast.LitBlob, Text: s} }
func dur(s string) *ast.Literal  { return &ast.Literal{Kind: ast.LitDuration, Text: s} }
func null() *ast.Literal         { return &ast.Literal{Kind: ast.LitNull, Text: "null"} }

func bind(i int) *ast.Bind                    { return &ast.Bind{Index: i} }
func named(i int, name string) *ast.Bind      { return &ast.Bind{Index: i, Name: name} }
func binds(bs ...*ast.Bind) []*ast.Bind       { return bs }
func tuple(elems ...ast.Term) *ast.Tuple      { return &ast.Tuple{Elems: elems} }
func list(elems ...ast.Term) *ast.List        { return &ast.List{Elems: elems} }
func set(elems ...ast.Term) *ast.Set          { return &ast.Set{Elems: elems} }
func tn(name string) ast.TableName            { return ast.TableName{Name: name} }
func ktn(ks, name string) ast.TableName       { return ast.TableName{Keyspace: ks, Name: name} }
func col(name string) *ast.ColumnSel          { return &ast.ColumnSel{Name: name} }
func sel(s ast.Selectable) ast.Selector       { return ast.Selector{Expr: s} }
func strp(s string) *string                   { return &s }
func boolp(b bool) *bool                      { return &b }
func cols(names ...string) []string           { return names }
func terms(ts ...ast.Term) []ast.Term         { return ts }
func props(ps ...ast.Property) []ast.Property { return ps }

// mapOf builds a map literal from alternating keys and values.
func mapOf(kv ...ast.Term) *ast.Map {
	m := &ast.Map{}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Keys = append(m.Keys, kv[i])
		m.Values = append(m.Values, kv[i+1])
	}
	return m
}

func eq(column string, v ast.Term) ast.Relation {
	return ast.Relation{Columns: []string{column}, Op: ast.OpEq, Value: v}
}

func rel(column string, op ast.Operator, v ast.Term) ast.Relation {
	return ast.Relation{Columns: []string{column}, Op: op, Value: v}
}

// stripPos zeroes every int field named Pos reachable from v, so that
// trees compare without their positions.
func stripPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			stripPos(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).Name == "Pos" && v.Field(i).Kind() == reflect.Int {
				v.Field(i).SetInt(0)
				continue
			}
			stripPos(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			stripPos(v.Index(i))
		}
	}
}

// dump renders a tree for failure messages, with the type of each node.
func dump(v any) string {
	b, err := json.MarshalIndent(typed(reflect.ValueOf(v)), "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func typed(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
			return map[string]any{v.Type().String(): typed(v.Elem())}
		}
		return typed(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			m[v.Type().Field(i).Name] = typed(v.Field(i))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		s := make([]any, v.Len())
		for i := range s {
			s[i] = typed(v.Index(i))
		}
		return s
	}
	return v.Interface()
}

// checkParse parses text and compares the tree, positions aside.
func checkParse(t *testing.T, text string, want ast.Statement) {
	t.Helper()
	got, err := Statement(text)
	if err != nil {
		t.Fatalf("Statement(%q): %v", text, err)
	}
	stripPos(reflect.ValueOf(got))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Statement(%q)\ngot  %s\nwant %s", text, dump(got), dump(want))
	}
}
