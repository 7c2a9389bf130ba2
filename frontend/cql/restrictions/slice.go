// Package restrictions holds what every statement kind shares of its WHERE
// clause once the values are known: SELECT reads, and DELETE removes, the
// rows a clustering slice selects, and both turn the slice into storage key
// ranges here, so that a read and a deletion of the same WHERE clause cover
// the same rows.
//
// A bound (c1, ..., cm) > (v1, ..., vm) compares in value order, whatever
// each column's clustering order: it holds the rows with
//
//	c1 > v1
//	c1 = v1 and c2 > v2
//	...
//	c1..cm-1 = v1..vm-1 and cm > vm
//	c1..cm = v1..vm            (>= only)
//
// Each line is one interval of row keys whatever the columns' orders (a
// descending column only swaps which side of vi it takes), and the lines
// are disjoint. A slice is the union of the intersections of a lower line
// with an upper line; intersections that touch are joined, so a slice over
// columns of one order is a single range, as a plain key comparison would
// give.
package restrictions

import (
	"bytes"
	"slices"

	"github.com/sedimentdb/sediment/internal/keys"
)

// Bound is one side of a clustering slice, its values known: one per
// column from the slice's first column on.
type Bound struct {
	Values [][]byte
	// Inclusive is >= or <=.
	Inclusive bool
}

// Slice bounds the clustering columns that follow an = prefix: Lower is
// > or >=, Upper < or <=, either nil when open.
type Slice struct {
	Lower, Upper *Bound
}

// BoundKey encodes the key bound of a clustering prefix within one
// partition (keys.AppendBound with the table's types and orders).
type BoundKey func(clustering [][]byte, kind keys.BoundKind) ([]byte, error)

// Range is the row keys from Start (included) to End (excluded).
type Range struct{ Start, End []byte }

// Ranges returns the key ranges, in key order, of the rows under the
// clustering prefix that s selects; desc gives the clustering order of
// each column after the prefix. No range is empty; none when s selects no
// row.
func (s Slice) Ranges(key BoundKey, prefix [][]byte, desc []bool) ([]Range, error) {
	all, err := interval(key, prefix, prefix, keys.Before, keys.After)
	if err != nil {
		return nil, err
	}
	lows, highs := []Range{all}, []Range{all}
	if s.Lower != nil {
		if lows, err = s.Lower.pieces(key, prefix, desc, true); err != nil {
			return nil, err
		}
	}
	if s.Upper != nil {
		if highs, err = s.Upper.pieces(key, prefix, desc, false); err != nil {
			return nil, err
		}
	}
	var out []Range
	for _, lo := range lows {
		for _, hi := range highs {
			r := Range{Start: keys.Max(lo.Start, hi.Start), End: keys.Min(lo.End, hi.End)}
			if bytes.Compare(r.Start, r.End) < 0 {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b Range) int { return bytes.Compare(a.Start, b.Start) })
	joined := out[:0]
	for _, r := range out {
		if n := len(joined); n > 0 && bytes.Equal(joined[n-1].End, r.Start) {
			joined[n-1].End = r.End
			continue
		}
		joined = append(joined, r)
	}
	return joined, nil
}

// pieces returns the key intervals of the rows under prefix that satisfy
// b: the lines of the package comment.
func (b *Bound) pieces(key BoundKey, prefix [][]byte, desc []bool, lower bool) ([]Range, error) {
	var out []Range
	for i := range b.Values {
		// The columns before i equal, column i strictly beyond v_i.
		eq := append(prefix[:len(prefix):len(prefix)], b.Values[:i]...)
		at := append(eq[:len(eq):len(eq)], b.Values[i])
		var r Range
		var err error
		if lower != desc[i] {
			// Later in key order: after v_i, to the end of eq.
			r, err = interval(key, at, eq, keys.After, keys.After)
		} else {
			r, err = interval(key, eq, at, keys.Before, keys.Before)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if b.Inclusive {
		full := append(prefix[:len(prefix):len(prefix)], b.Values...)
		r, err := interval(key, full, full, keys.Before, keys.After)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// interval returns the row keys from the bound of clustering a to that of b.
func interval(key BoundKey, a, b [][]byte, ka, kb keys.BoundKind) (Range, error) {
	var r Range
	var err error
	if r.Start, err = key(a, ka); err != nil {
		return r, err
	}
	if r.End, err = key(b, kb); err != nil {
		return r, err
	}
	return r, nil
}
