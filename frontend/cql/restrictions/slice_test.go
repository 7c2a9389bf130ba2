package restrictions

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
)

func intValue(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(i))) }

// TestSliceRanges checks Ranges against the definition: over a grid of
// three int clustering columns, in every mix of orders and behind a prefix
// of 0 to 2 columns, a row key falls in a range exactly when the row's
// values after the prefix compare with each bound as tuples do.
func TestSliceRanges(t *testing.T) {
	types := []*cqltype.Type{cqltype.IntType, cqltype.IntType, cqltype.IntType}
	part := keys.AppendPartitionPrefix(nil, 7, []byte("pk"))
	const n = 3
	var grid [][]int
	for a := range n {
		for b := range n {
			for c := range n {
				grid = append(grid, []int{a, b, c})
			}
		}
	}
	rng := rand.New(rand.NewPCG(17, 3))
	for mask := range 8 {
		desc := []bool{mask&1 != 0, mask&2 != 0, mask&4 != 0}
		key := func(ck [][]byte, kind keys.BoundKind) ([]byte, error) {
			return keys.AppendBound(nil, part, ck, types[:len(ck)], desc[:len(ck)], kind)
		}
		for range 200 {
			plen := rng.IntN(3)
			prefixVals := make([]int, plen)
			var prefix [][]byte
			for i := range prefixVals {
				prefixVals[i] = rng.IntN(n)
				prefix = append(prefix, intValue(prefixVals[i]))
			}
			type side struct {
				vals      []int
				inclusive bool
			}
			pick := func() *side {
				if rng.IntN(4) == 0 {
					return nil
				}
				vals := make([]int, 1+rng.IntN(3-plen))
				for i := range vals {
					vals[i] = rng.IntN(n+2) - 1 // -1..n: also beyond the data
				}
				return &side{vals: vals, inclusive: rng.IntN(2) == 0}
			}
			lo, hi := pick(), pick()
			var s Slice
			if lo != nil {
				s.Lower = &Bound{Inclusive: lo.inclusive}
				for _, v := range lo.vals {
					s.Lower.Values = append(s.Lower.Values, intValue(v))
				}
			}
			if hi != nil {
				s.Upper = &Bound{Inclusive: hi.inclusive}
				for _, v := range hi.vals {
					s.Upper.Values = append(s.Upper.Values, intValue(v))
				}
			}
			ranges, err := s.Ranges(key, prefix, desc[plen:])
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(ranges); i++ {
				if bytes.Compare(ranges[i-1].End, ranges[i].Start) >= 0 {
					t.Fatalf("ranges out of order or touching: %x", ranges)
				}
			}
			for _, row := range grid {
				ck := make([][]byte, 3)
				for i, v := range row {
					ck[i] = intValue(v)
				}
				rk, err := keys.RowKey(nil, 7, []byte("pk"), ck, types, desc)
				if err != nil {
					t.Fatal(err)
				}
				want := slices.Equal(row[:plen], prefixVals)
				rest := row[plen:]
				if lo != nil {
					cmp := slices.Compare(rest[:len(lo.vals)], lo.vals)
					want = want && (cmp > 0 || cmp == 0 && lo.inclusive)
				}
				if hi != nil {
					cmp := slices.Compare(rest[:len(hi.vals)], hi.vals)
					want = want && (cmp < 0 || cmp == 0 && hi.inclusive)
				}
				got := slices.ContainsFunc(ranges, func(r Range) bool {
					return bytes.Compare(r.Start, rk) <= 0 && bytes.Compare(rk, r.End) < 0
				})
				if got != want {
					t.Fatalf("orders %v, prefix %v, lower %v, upper %v: row %v selected %v, want %v", desc, prefixVals, lo, hi, row, got, want)
				}
			}
		}
	}
}

// TestSliceRangesOneOrder: over columns of one order a slice is one range,
// as a comparison of keys gives, so a read of it is one scan.
func TestSliceRangesOneOrder(t *testing.T) {
	types := []*cqltype.Type{cqltype.IntType, cqltype.IntType}
	part := keys.AppendPartitionPrefix(nil, 1, []byte("k"))
	for _, desc := range [][]bool{{false, false}, {true, true}} {
		key := func(ck [][]byte, kind keys.BoundKind) ([]byte, error) {
			return keys.AppendBound(nil, part, ck, types[:len(ck)], desc[:len(ck)], kind)
		}
		s := Slice{
			Lower: &Bound{Values: [][]byte{intValue(1), intValue(2)}},
			Upper: &Bound{Values: [][]byte{intValue(5)}, Inclusive: true},
		}
		ranges, err := s.Ranges(key, nil, desc)
		if err != nil {
			t.Fatal(err)
		}
		if len(ranges) != 1 {
			t.Fatalf("%v: %d ranges, want 1", desc, len(ranges))
		}
	}
}
