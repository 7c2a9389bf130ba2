package exec

import (
	"encoding/binary"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// boundRestriction is a filtering restriction with its values evaluated
// for one execution.
type boundRestriction struct {
	r       *restriction
	t       *cqltype.Type // the type values compare as
	vals    [][]byte      // the value, or IN's alternatives
	mapKey  []byte
	emptyIn bool // IN () or IN of only nulls: nothing matches
}

// bindFilters evaluates the filters' values once per execution.
func (p *selectPlan) bindFilters(x *execCtx) ([]*boundRestriction, error) {
	rd := &reader{p: p, x: x}
	out := make([]*boundRestriction, 0, len(p.filters))
	for _, r := range p.filters {
		c := r.cols[0]
		b := &boundRestriction{r: r, t: c.typ}
		switch {
		case r.multi:
			types := make([]*cqltype.Type, len(r.cols))
			for i, c := range r.cols {
				types[i] = c.typ
			}
			b.t = cqltype.TupleOf(types...)
		case r.op == ast.OpContains:
			b.t = c.typ.Elems[len(c.typ.Elems)-1]
		case r.op == ast.OpContainsKey:
			b.t = c.typ.Elems[0]
		case r.mapKey != nil:
			k, unset, err := x.eval(c.typ.Elems[0], r.mapKey, "key("+c.name+")")
			if err != nil {
				return nil, err
			}
			if unset || k == nil {
				return nil, invalidf("Invalid null or unset map key for column %s", c.name)
			}
			b.mapKey, b.t = k, c.typ.Elems[1]
		}
		eq := &restriction{cols: r.cols, op: r.op, value: r.value, in: r.in, multi: r.multi}
		if r.op != ast.OpIn {
			eq.op = ast.OpEq
		}
		if r.mapKey != nil || r.op == ast.OpContains || r.op == ast.OpContainsKey {
			v, unset, err := x.eval(b.t, r.value, c.name)
			if err != nil {
				return nil, err
			}
			if unset || v == nil {
				return nil, invalidf("Unsupported null value for column %s", c.name)
			}
			b.vals = [][]byte{v}
		} else {
			// rd.values evaluates as the column's (or tuple's) type.
			vs, err := rd.values(eq)
			if err != nil {
				return nil, err
			}
			b.vals = vs
			b.emptyIn = r.op == ast.OpIn && len(vs) == 0
		}
		out = append(out, b)
	}
	return out, nil
}

// matches reports whether a row satisfies the restriction. A null never
// does.
func (b *boundRestriction) matches(r *rowCtx) (bool, error) {
	if b.emptyIn {
		return false, nil
	}
	c := b.r.cols[0]
	var v []byte
	if b.r.multi {
		fields := make([][]byte, len(b.r.cols))
		for i, c := range b.r.cols {
			f, err := r.value(c)
			if err != nil {
				return false, err
			}
			fields[i] = f
		}
		v = joinTuple(fields)
	} else {
		var err error
		if v, err = r.value(c); err != nil || v == nil {
			return false, err
		}
	}
	switch {
	case b.r.op == ast.OpContains || b.r.op == ast.OpContainsKey:
		isMap := c.typ.Kind == cqltype.Map
		es, err := splitCollection(v, isMap)
		if err != nil {
			return false, err
		}
		step, off := 1, 0
		if isMap {
			step = 2
			if b.r.op == ast.OpContains {
				off = 1
			}
		}
		for i := off; i < len(es); i += step {
			if cqltype.Compare(b.t, es[i], b.vals[0]) == 0 {
				return true, nil
			}
		}
		return false, nil
	case b.mapKey != nil:
		e, err := collectionElement(c.typ, v, b.mapKey)
		if err != nil || e == nil {
			return false, err
		}
		v = e
	}
	if b.r.op == ast.OpIn {
		for _, w := range b.vals {
			if cqltype.Compare(b.t, v, w) == 0 {
				return true, nil
			}
		}
		return false, nil
	}
	cmp := cqltype.Compare(b.t, v, b.vals[0])
	switch b.r.op {
	case ast.OpEq:
		return cmp == 0, nil
	case ast.OpLt:
		return cmp < 0, nil
	case ast.OpLte:
		return cmp <= 0, nil
	case ast.OpGt:
		return cmp > 0, nil
	case ast.OpGte:
		return cmp >= 0, nil
	}
	return false, invalidf("Unsupported %s restriction on %s", b.r.op, c.name)
}

// joinTuple serializes tuple components, nil for null.
func joinTuple(fields [][]byte) []byte {
	var out []byte
	for _, f := range fields {
		out = appendBytes(out, f)
	}
	return out
}

// appendBytes appends a [bytes]: a 4-byte length, -1 for null, and the
// bytes.
func appendBytes(dst, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
	}
	return append(binary.BigEndian.AppendUint32(dst, uint32(len(v))), v...)
}
