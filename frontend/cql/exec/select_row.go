package exec

import (
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/model"
)

// rowCtx is one row being read: its primary key values and its live static
// and regular cells, from which the selectors and filters take columns.
type rowCtx struct {
	token  int64
	pk     [][]byte
	ck     [][]byte   // nil for a partition's static row alone
	static *model.Row // the partition's live static row, or nil
	row    *model.Row // the live row, or nil
	// key is the row's storage key, or the partition's end key for a
	// static row alone: where a page that ends here resumes.
	key []byte
}

// value returns column c's value in the row: a key value, a cell's value,
// or a non-frozen collection assembled from its element cells; nil is null.
func (r *rowCtx) value(c *column) ([]byte, error) {
	switch c.kind {
	case kindPartition:
		return r.pk[c.pos], nil
	case kindClustering:
		if r.ck == nil {
			return nil, nil
		}
		return r.ck[c.pos], nil
	}
	return liveValue(c, r.rowOf(c)), nil
}

// cell returns the cell of a single-cell column, or nil.
func (r *rowCtx) cell(c *column) *model.Cell {
	cells := columnCells(r.rowOf(c), c.id)
	if len(cells) == 0 {
		return nil
	}
	return &cells[0]
}

func (r *rowCtx) rowOf(c *column) *model.Row {
	if c.kind == kindStatic {
		return r.static
	}
	return r.row
}

// collectionElement returns the element of a set (the key itself when
// present) or the value of a map's key, or nil.
func collectionElement(t *cqltype.Type, v, key []byte) ([]byte, error) {
	isMap := t.Kind == cqltype.Map
	es, err := splitCollection(v, isMap)
	if err != nil {
		return nil, err
	}
	step := 1
	if isMap {
		step = 2
	}
	for i := 0; i < len(es); i += step {
		if cqltype.Compare(t.Elems[0], es[i], key) == 0 {
			return es[i+step-1], nil
		}
	}
	return nil, nil
}
