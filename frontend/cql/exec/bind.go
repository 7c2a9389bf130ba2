package exec

import (
	"errors"
	"fmt"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/funcs"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// bindValues decodes a request's values against a plan's bind receivers:
// named values are put in marker order, the count must match, and every
// value that is neither null nor unset must be valid for its receiver's type
// (Cassandra checks this at bind time, with the marshaller's message).
func bindValues(specs []ColumnSpec, p *Params) (vals [][]byte, unset []bool, err error) {
	vals, unset = p.Values, p.Unset
	if len(p.Names) > 0 {
		if len(p.Names) != len(p.Values) {
			return nil, nil, invalidf("Invalid amount of bind variables: %d names for %d values", len(p.Names), len(p.Values))
		}
		vals, unset = make([][]byte, len(specs)), make([]bool, len(specs))
		for i, s := range specs {
			j := indexOf(p.Names, s.Name)
			if j < 0 {
				return nil, nil, invalidf("No value provided for bind variable %s", s.Name)
			}
			vals[i] = p.Values[j]
			unset[i] = j < len(p.Unset) && p.Unset[j]
		}
	}
	if len(vals) != len(specs) {
		return nil, nil, invalidf("there were %d markers(?) in CQL but %d bound variables", len(specs), len(vals))
	}
	if unset == nil {
		unset = make([]bool, len(vals))
	}
	if len(unset) != len(vals) {
		return nil, nil, serverError(fmt.Errorf("exec: %d unset flags for %d values", len(unset), len(vals)))
	}
	for i, v := range vals {
		if v == nil || unset[i] {
			continue
		}
		if err := cqltype.Validate(specs[i].Type, v); err != nil {
			var me *cqltype.MarshalError
			if errors.As(err, &me) {
				return nil, nil, &Error{Code: wire.CodeInvalid, Message: me.Msg, Cause: err}
			}
			return nil, nil, invalidf("Invalid value for %s of type %s: %v", specs[i].Name, specs[i].Type, err)
		}
	}
	return vals, unset, nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// errUnset marks a term whose bind marker was sent unset.
var errUnset = errors.New("exec: unset value")

// eval evaluates a term for a receiver of type t named recv (a column, or
// a derived name such as value(c)): literals and collection literals through
// cql/values, bind markers from the bound values, type hints, and function
// calls. It returns nil for null. unset reports a bind marker sent unset as
// the whole term; an unset value nested in a larger term is an error, as in
// Cassandra.
func (x *execCtx) eval(t *cqltype.Type, term ast.Term, recv string) (v []byte, unset bool, err error) {
	if b, ok := term.(*ast.Bind); ok {
		v, unset := x.bound(b.Index)
		return v, unset, nil
	}
	v, err = values.Encode(t, term, x.resolver(recv))
	if err != nil {
		return nil, false, termError(err, recv)
	}
	return v, false, nil
}

// termError maps an error of evaluating a term for receiver recv.
func termError(err error, recv string) error {
	var verr *values.Error
	if errors.As(err, &verr) {
		return &Error{Code: wire.CodeInvalid, Message: verr.Message(recv), Cause: err}
	}
	if errors.Is(err, errUnset) {
		return invalidf("Invalid unset value for %s", recv)
	}
	return err
}

// resolver evaluates what values.Encode cannot alone: bind markers, type
// hints and function calls.
func (x *execCtx) resolver(recv string) values.Resolver {
	var resolve values.Resolver
	resolve = func(t *cqltype.Type, term ast.Term) ([]byte, error) {
		switch term := term.(type) {
		case *ast.Bind:
			v, unset := x.bound(term.Index)
			if unset {
				return nil, errUnset
			}
			return v, nil
		case *ast.Hint:
			ht, err := cqltype.Parse(term.Type, nil)
			if err != nil {
				return nil, invalidf("%v", err)
			}
			return values.Encode(ht, term.Term, resolve)
		case *ast.Call:
			return x.call(t, term, resolve)
		case *ast.Ident:
			return nil, invalidf("Undefined name %s in selection clause", term.Name)
		}
		return nil, invalidf("Invalid term %T for %s", term, recv)
	}
	return resolve
}

// call evaluates a function call term for a receiver of type t: the
// native function is found by its arguments, its result must fit t, and its
// arguments are evaluated for its parameter types.
func (x *execCtx) call(t *cqltype.Type, c *ast.Call, resolve values.Resolver) ([]byte, error) {
	f, err := lookupCall(c, t)
	if err != nil {
		return nil, funcCallError(err)
	}
	if t != nil && !resultFits(f.Return, t) {
		return nil, invalidf("Type error: cannot assign result of function %s (type %s) to a receiver of type %s", f.Name, f.Return, t)
	}
	args := make([][]byte, len(c.Args))
	for i, a := range c.Args {
		if args[i], err = values.Encode(f.Args[i], a, resolve); err != nil {
			return nil, err
		}
	}
	v, err := f.Call(args)
	if err != nil {
		return nil, funcCallError(err)
	}
	return v, nil
}

// lookupCall finds the function a call term names, for a receiver of type
// t (nil if unknown): fromjson returns the receiver's type, so it is made
// for it.
func lookupCall(c *ast.Call, t *cqltype.Type) (*funcs.Function, error) {
	if c.Name == "fromjson" && (c.Keyspace == "" || c.Keyspace == "system") && t != nil {
		if len(c.Args) != 1 {
			return nil, invalidf("Invalid number of arguments in call to function system.fromjson: 1 required but %d provided", len(c.Args))
		}
		return funcs.FromJSON(t), nil
	}
	args := make([]funcs.Arg, len(c.Args))
	for i, a := range c.Args {
		args[i] = funcs.Arg{Text: values.TermText(a), Type: termOwnType(a), Term: a}
	}
	return funcs.Lookup(c.Keyspace, c.Name, args)
}

// termOwnType is the type a term of a write states by itself: a hint's, or
// the result type of a nested call (which Cassandra's FunctionCall tests
// against the parameter); nil for literals and markers.
func termOwnType(t ast.Term) *cqltype.Type {
	if c, ok := t.(*ast.Call); ok {
		if f, err := lookupCall(c, nil); err == nil {
			return f.Return
		}
		return nil // the call reports its own error when it is evaluated
	}
	return hintType(t)
}

// hintType is the type a term states by itself: a type hint's.
func hintType(t ast.Term) *cqltype.Type {
	if h, ok := t.(*ast.Hint); ok {
		if typ, err := cqltype.Parse(h.Type, nil); err == nil {
			return typ
		}
	}
	return nil
}

// resultFits reports whether a function result of type r may be assigned
// to a receiver of type t: the same type, or one whose values t accepts.
func resultFits(r, t *cqltype.Type) bool {
	switch {
	case r.Equal(t):
		return true
	case t.Kind == cqltype.Text && r.Kind == cqltype.Ascii:
		return true
	case t.Kind == cqltype.UUID && r.Kind == cqltype.Timeuuid:
		return true
	case t.Kind == cqltype.Blob:
		return true
	}
	return false
}

// funcCallError maps an error of cql/funcs.
func funcCallError(err error) error {
	var fail *funcs.FailureError
	if errors.As(err, &fail) {
		return functionFailure(fail)
	}
	var fe *funcs.Error
	if errors.As(err, &fe) {
		return &Error{Code: wire.CodeInvalid, Message: fe.Msg, Cause: err}
	}
	return err
}
