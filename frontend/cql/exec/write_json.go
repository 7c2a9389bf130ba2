package exec

import (
	"errors"
	"sort"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// INSERT JSON is planned as an INSERT of every column whose value is an
// identifier term naming the column: jsonEval resolves those from the
// decoded JSON object at execution, so keys, TTL and conditions go through
// the same code as INSERT ... VALUES. Columns absent from the object are
// null (DEFAULT NULL) or left alone (DEFAULT UNSET).

// planJSON plans the columns of INSERT JSON.
func (p *modPlan) planJSON(st *ast.Insert) error {
	p.json, p.jsonUnset = st.JSON, st.DefaultUnset
	p.recv(st.JSON, "[json]", cqltype.TextType)
	var rels []ast.Relation
	for _, c := range p.layout.columns {
		ref := &ast.Ident{Name: c.name}
		if c.kind == kindPartition || c.kind == kindClustering {
			rels = append(rels, ast.Relation{Columns: []string{c.name}, Op: ast.OpEq, Value: ref})
			continue
		}
		p.ops = append(p.ops, &operation{col: c, kind: opSet, value: ref, valueType: c.typ})
	}
	return p.where(rels)
}

// jsonEval decodes the statement's JSON object and returns eval extended
// with the column references planJSON made.
func (p *modPlan) jsonEval(eval termEval) (termEval, error) {
	doc, unset, err := eval(p.json, cqltype.TextType, "[json]")
	if err != nil {
		return nil, err
	}
	if unset {
		return nil, invalidf("Got unset value for INSERT JSON values")
	}
	if doc == nil {
		return nil, invalidf("Got null for INSERT JSON values")
	}
	obj, err := values.DecodeObject(doc)
	if err != nil {
		return nil, termError(err, "[json]")
	}
	var unknown []string
	for name := range obj {
		if p.layout.column(name) == nil {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, invalidf("JSON values map contains unrecognized column: %s", unknown[0])
	}
	decoded := make(map[string][]byte, len(obj))
	for name, raw := range obj {
		c := p.layout.column(name)
		v, err := values.FromJSON(c.typ, raw)
		if err != nil {
			return nil, jsonValueError(termError(err, c.name), c.name)
		}
		decoded[name] = v
	}
	return func(t ast.Term, typ *cqltype.Type, recv string) ([]byte, bool, error) {
		ref, ok := t.(*ast.Ident)
		if !ok || p.layout.column(ref.Name) == nil {
			return eval(t, typ, recv)
		}
		v, present := decoded[ref.Name]
		if !present {
			return nil, p.jsonUnset, nil
		}
		return v, false, nil
	}, nil
}

// jsonValueError names the column whose JSON value could not be decoded,
// as Cassandra's Json.Prepared does with the type's MarshalException.
func jsonValueError(err error, column string) error {
	var e *Error
	if errors.As(err, &e) && e.Code == wire.CodeInvalid {
		return &Error{Code: wire.CodeInvalid, Message: "Error decoding JSON value for " + column + ": " + e.Message, Cause: e.Cause}
	}
	return err
}
