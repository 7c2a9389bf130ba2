package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/model"
)

// opKind is what an operation does to its column.
type opKind uint8

const (
	opSet         opKind = iota // c = v (and every INSERT value)
	opAppend                    // c = c + v: list append, set and map add
	opPrepend                   // c = v + c: list prepend
	opDiscard                   // c = c - v: list, set and map removal
	opSetElem                   // c[k] = v: list index or map key
	opSetField                  // c.f = v: field of a non-frozen user type
	opCounter                   // c = c + n, c = c - n on a counter
	opDelete                    // DELETE c
	opDeleteElem                // DELETE c[k]
	opDeleteField               // DELETE c.f
)

// operation is one resolved assignment or deletion of a column.
type operation struct {
	col  *column
	kind opKind
	// key is the list index or map key of opSetElem and opDeleteElem,
	// typed keyType.
	key     ast.Term
	keyType *cqltype.Type
	// field is the user-type field of opSetField and opDeleteField.
	field int
	// value is the assigned term, typed valueType; nil for deletions.
	value     ast.Term
	valueType *cqltype.Type
	// negate subtracts a counter's operand (c = c - n).
	negate bool
	// literalErr replaces the error of a literal operand that is not the
	// value the operation takes: Cassandra words m = m + x and m = m - x
	// that way when x does not prepare.
	literalErr string
}

// termEval evaluates a term as a value of type typ for the receiver named
// recv (for messages): nil is null, unset is an unset bound value.
type termEval func(t ast.Term, typ *cqltype.Type, recv string) (v []byte, unset bool, err error)

// needsRead reports whether the operation reads the column's current cells:
// list operations by index and list removal by value, as in Cassandra.
func (o *operation) needsRead() bool {
	if o.col.typ.Kind != cqltype.List {
		return false
	}
	switch o.kind {
	case opDiscard, opSetElem, opDeleteElem:
		return true
	}
	return false
}

// operandError words an error of the operand's evaluation.
func (o *operation) operandError(err error) error {
	var e *Error
	if err != nil && o.literalErr != "" && errors.As(err, &e) && e.Code == wire.CodeInvalid {
		return &Error{Code: wire.CodeInvalid, Message: o.literalErr, Cause: err}
	}
	return err
}

// apply writes the operation into dst, the row (or static row) being built.
// cur is the live view of the same row before the write, for operations that
// need it (nil when none was read or the row does not exist).
func (o *operation) apply(eval termEval, w writeTimes, dst *model.Row, cur *model.Row) error {
	col, t := o.col, o.col.typ
	switch o.kind {
	case opSet:
		v, unset, err := eval(o.value, o.valueType, col.name)
		if err != nil || unset {
			return err
		}
		return setColumn(dst, w, col, v)
	case opAppend, opPrepend:
		v, unset, err := eval(o.value, o.valueType, col.name)
		if err != nil || unset || v == nil {
			return o.operandError(err)
		}
		return addElements(dst, w, col, v, o.kind == opPrepend)
	case opDiscard:
		v, unset, err := eval(o.value, o.valueType, col.name)
		if err != nil || unset || v == nil {
			return o.operandError(err)
		}
		return discardElements(dst, w, col, v, cur)
	case opSetElem, opDeleteElem:
		recv := "key(" + col.name + ")"
		if t.Kind == cqltype.List {
			recv = "idx(" + col.name + ")"
		}
		k, unset, err := eval(o.key, o.keyType, recv)
		if err != nil {
			return err
		}
		var v []byte
		if o.kind == opSetElem {
			var vunset bool
			if v, vunset, err = eval(o.value, o.valueType, "value("+col.name+")"); err != nil {
				return err
			}
			if vunset {
				return nil
			}
		}
		if t.Kind == cqltype.List {
			return o.listElem(dst, w, k, unset, v, cur)
		}
		if unset {
			return invalidf("Invalid unset map key")
		}
		if k == nil {
			return invalidf("Invalid null map key")
		}
		path, err := elementPath(t.Elems[0], k)
		if err != nil {
			return invalidf("Invalid map key for column %s: %v", col.name, err)
		}
		if v == nil {
			dst.Cells = append(dst.Cells, w.tombstone(col.id, path))
		} else {
			dst.Cells = append(dst.Cells, w.cell(col.id, path, v))
		}
		return nil
	case opSetField:
		v, unset, err := eval(o.value, o.valueType, col.name+"."+t.Fields[o.field])
		if err != nil || unset {
			return err
		}
		if v == nil {
			dst.Cells = append(dst.Cells, w.tombstone(col.id, fieldPath(o.field)))
		} else {
			dst.Cells = append(dst.Cells, w.cell(col.id, fieldPath(o.field), v))
		}
		return nil
	case opDeleteField:
		dst.Cells = append(dst.Cells, w.tombstone(col.id, fieldPath(o.field)))
		return nil
	case opDelete:
		if t.MultiCell() {
			dst.ColumnDeletions = append(dst.ColumnDeletions, model.ColumnDeletion{Column: col.id, Deletion: w.deletion()})
		} else {
			dst.Cells = append(dst.Cells, w.tombstone(col.id, nil))
		}
		return nil
	case opCounter:
		return fmt.Errorf("exec: counter operations are applied by the counter writer")
	}
	return fmt.Errorf("exec: unknown operation %d", o.kind)
}

// listElem sets (v non-nil), deletes (v nil) or, for opDeleteElem, deletes
// the element at index k of a list, found among cur's cells.
func (o *operation) listElem(dst *model.Row, w writeTimes, k []byte, unset bool, v []byte, cur *model.Row) error {
	if unset {
		return invalidf("Invalid unset value for list index")
	}
	if k == nil {
		return invalidf("Invalid null value for list index")
	}
	if len(k) != 4 {
		return invalidf("Expected 4 bytes for an int list index, got %d", len(k))
	}
	idx := int64(int32(binary.BigEndian.Uint32(k)))
	cells := columnCells(cur, o.col.id)
	if len(cells) == 0 {
		if o.kind == opDeleteElem {
			return invalidf("Attempted to delete an element from a list which is null")
		}
		return invalidf("Attempted to set an element on a list which is null")
	}
	if idx < 0 || idx >= int64(len(cells)) {
		return invalidf("List index %d out of bound, list has size %d", idx, len(cells))
	}
	path := cells[idx].Path
	if o.kind == opDeleteElem || v == nil {
		dst.Cells = append(dst.Cells, w.tombstone(o.col.id, path))
	} else {
		dst.Cells = append(dst.Cells, w.cell(o.col.id, path, v))
	}
	return nil
}

// columnCells returns the cells of column id in the live row r, in path
// order (a normal row's cells are sorted by column, then path).
func columnCells(r *model.Row, id uint32) []model.Cell {
	if r == nil {
		return nil
	}
	i, _ := slices.BinarySearchFunc(r.Cells, id, func(c model.Cell, id uint32) int { return cmpUint32(c.Column, id) })
	j := i
	for j < len(r.Cells) && r.Cells[j].Column == id {
		j++
	}
	return r.Cells[i:j]
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// setColumn writes v (nil: null) as the whole value of col.
func setColumn(dst *model.Row, w writeTimes, col *column, v []byte) error {
	if !col.typ.MultiCell() {
		if v == nil {
			dst.Cells = append(dst.Cells, w.tombstone(col.id, nil))
		} else {
			dst.Cells = append(dst.Cells, w.cell(col.id, nil, v))
		}
		return nil
	}
	// Overwriting a multi-cell value deletes the old cells just before the
	// new ones.
	dst.ColumnDeletions = append(dst.ColumnDeletions, model.ColumnDeletion{Column: col.id, Deletion: w.overwrite()})
	if v == nil {
		return nil
	}
	if col.typ.Kind == cqltype.UDT {
		fields, err := splitUDT(col.typ, v)
		if err != nil {
			return err
		}
		for i, f := range fields {
			if f != nil {
				dst.Cells = append(dst.Cells, w.cell(col.id, fieldPath(i), f))
			}
		}
		return nil
	}
	return addElements(dst, w, col, v, false)
}

// addElements writes the elements of the serialized collection v into the
// non-frozen collection col: list elements at new paths after (or, prepend,
// before) every existing one, set elements, map entries.
func addElements(dst *model.Row, w writeTimes, col *column, v []byte, prepend bool) error {
	t := col.typ
	elems, err := splitCollection(v, t.Kind == cqltype.Map)
	if err != nil {
		return err
	}
	switch t.Kind {
	case cqltype.List:
		paths := listPathGen.paths(len(elems), prepend)
		for i, e := range elems {
			dst.Cells = append(dst.Cells, w.cell(col.id, paths[i], e))
		}
	case cqltype.Set:
		for _, e := range elems {
			path, err := elementPath(t.Elems[0], e)
			if err != nil {
				return invalidf("Invalid set element for column %s: %v", col.name, err)
			}
			dst.Cells = append(dst.Cells, w.cell(col.id, path, []byte{}))
		}
	case cqltype.Map:
		for i := 0; i < len(elems); i += 2 {
			path, err := elementPath(t.Elems[0], elems[i])
			if err != nil {
				return invalidf("Invalid map key for column %s: %v", col.name, err)
			}
			dst.Cells = append(dst.Cells, w.cell(col.id, path, elems[i+1]))
		}
	default:
		return fmt.Errorf("exec: adding elements to %s", t)
	}
	return nil
}

// discardElements removes from col the elements of v: for a list every
// element of cur equal to one of v (a read before the write, as Cassandra),
// for a set the elements, for a map the keys (v is then a set of keys).
func discardElements(dst *model.Row, w writeTimes, col *column, v []byte, cur *model.Row) error {
	t := col.typ
	elems, err := splitCollection(v, false)
	if err != nil {
		return err
	}
	if t.Kind == cqltype.List {
		for _, c := range columnCells(cur, col.id) {
			if slices.ContainsFunc(elems, func(e []byte) bool { return bytes.Equal(e, c.Value) }) {
				dst.Cells = append(dst.Cells, w.tombstone(col.id, c.Path))
			}
		}
		return nil
	}
	for _, e := range elems {
		path, err := elementPath(t.Elems[0], e)
		if err != nil {
			return invalidf("Invalid element for column %s: %v", col.name, err)
		}
		dst.Cells = append(dst.Cells, w.tombstone(col.id, path))
	}
	return nil
}
