package exec

import (
	"fmt"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// receivers are the receivers of a statement's bind markers, by marker
// index, which PREPARE answers and bound values are decoded against. Every
// statement kind records them here while it is planned (SELECT's WHERE,
// selection and limits; INSERT, UPDATE and DELETE with their conditions),
// under the names Cassandra gives them and drivers show:
//
//	marker in                          receiver name
//	---------------------------------  ---------------------------
//	c = ?, SET c = ?                   c (or the marker's own name)
//	[?, ...] / {?, ...} for c          value(c)
//	{?: ?} for map c                   key(c), value(c)
//	(?, ?) for tuple c                 c[0], c[1]
//	{f: ?} for user type c             c.f
//	f(?) for a receiver                arg0(system.f)
//	(a, b) = (?, ?)                    a, b (the columns themselves)
type receivers struct {
	keyspace, table string
	specs           []ColumnSpec
}

func newReceivers(keyspace, table string, markers int) receivers {
	return receivers{keyspace: keyspace, table: table, specs: make([]ColumnSpec, markers)}
}

// recv records the receivers of the markers in term, assigned to a value
// of type t named name: the whole term's, or those of the elements of a
// collection, tuple or user-type literal, or of a function's arguments.
func (r *receivers) recv(term ast.Term, name string, t *cqltype.Type) {
	switch x := term.(type) {
	case *ast.Bind:
		if x.Index >= 0 && x.Index < len(r.specs) {
			if x.Name != "" {
				name = x.Name
			}
			r.specs[x.Index] = ColumnSpec{Keyspace: r.keyspace, Table: r.table, Name: name, Type: t}
		}
	case *ast.List:
		if t.Kind == cqltype.List || t.Kind == cqltype.Set {
			for _, el := range x.Elems {
				r.recv(el, "value("+name+")", t.Elems[0])
			}
		}
	case *ast.Set:
		if t.Kind == cqltype.Set || t.Kind == cqltype.List {
			for _, el := range x.Elems {
				r.recv(el, "value("+name+")", t.Elems[0])
			}
		}
	case *ast.Map:
		switch t.Kind {
		case cqltype.Map:
			for i := range x.Keys {
				r.recv(x.Keys[i], "key("+name+")", t.Elems[0])
				r.recv(x.Values[i], "value("+name+")", t.Elems[1])
			}
		case cqltype.UDT:
			for i, k := range x.Keys {
				id, ok := k.(*ast.Ident)
				if !ok {
					continue
				}
				for j, f := range t.Fields {
					if f == id.Name {
						r.recv(x.Values[i], name+"."+f, t.Elems[j])
					}
				}
			}
		}
	case *ast.Tuple:
		if t.Kind == cqltype.Tuple {
			for i, el := range x.Elems {
				if i < len(t.Elems) {
					r.recv(el, fmt.Sprintf("%s[%d]", name, i), t.Elems[i])
				}
			}
		}
	case *ast.Hint:
		if ht := hintType(x); ht != nil {
			t = ht
		}
		r.recv(x.Term, name, t)
	case *ast.Call:
		f, err := lookupCall(x, t)
		if err != nil {
			return // executing the call reports it
		}
		for i, a := range x.Args {
			r.recv(a, fmt.Sprintf("arg%d(system.%s)", i, f.Name), f.Args[i]) // Cassandra names the function in full
		}
	}
}

// recvColumns records the receivers of a multi-column relation's tuple:
// its components' are the columns themselves, a whole-tuple marker's is
// the tuple (a,b) of their types.
func (r *receivers) recvColumns(term ast.Term, cols []*column) {
	if tup, ok := term.(*ast.Tuple); ok && len(tup.Elems) == len(cols) {
		for i, el := range tup.Elems {
			r.recv(el, cols[i].name, cols[i].typ)
		}
		return
	}
	r.recv(term, tupleName(cols), tupleOf(cols))
}

// tupleName names a tuple of columns as Cassandra's receivers do: (a,b).
func tupleName(cols []*column) string {
	s := "("
	for i, c := range cols {
		if i > 0 {
			s += ","
		}
		s += c.name
	}
	return s + ")"
}

// tupleOf is the type of a tuple of the columns' values.
func tupleOf(cols []*column) *cqltype.Type {
	ts := make([]*cqltype.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.typ
	}
	return cqltype.TupleOf(ts...)
}
