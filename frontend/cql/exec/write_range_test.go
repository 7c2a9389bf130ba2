package exec_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// rangeRel is one relation of a range DELETE on clustering columns
// (c1, c2, c3), checked against a model: the tuple of the first len(vals)
// columns compared with vals in value order.
type rangeRel struct {
	width int // columns, from c1 (or from after the = prefix)
	op    string
	vals  []int
	multi bool
}

func (r rangeRel) cql(from int) string {
	names := make([]string, r.width)
	vs := make([]string, r.width)
	for i := range r.width {
		names[i] = fmt.Sprintf("c%d", from+i+1)
		vs[i] = fmt.Sprint(r.vals[i])
	}
	if !r.multi {
		return fmt.Sprintf("%s %s %s", names[0], r.op, vs[0])
	}
	return fmt.Sprintf("(%s) %s (%s)", strings.Join(names, ", "), r.op, strings.Join(vs, ", "))
}

// holds compares the row's columns from position from with the bound.
func (r rangeRel) holds(row []int, from int) bool {
	cmp := slices.Compare(row[from:from+r.width], r.vals)
	switch r.op {
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	case "<":
		return cmp < 0
	}
	return cmp <= 0
}

// TestDeleteMultiColumnRanges selects, then deletes, with single and
// multi-column slices, with and without an = prefix, over every clustering
// order mix: the SELECT returns exactly the rows of the slice, in
// clustering order, across pages, and the DELETE leaves exactly the others.
func TestDeleteMultiColumnRanges(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	orders := []string{"c1 ASC, c2 ASC, c3 ASC", "c1 DESC, c2 DESC, c3 DESC", "c1 ASC, c2 DESC, c3 ASC", "c1 DESC, c2 ASC, c3 DESC"}
	const n = 3 // values 0..2 per column: 27 rows a partition
	var grid [][]int
	for a := range n {
		for b := range n {
			for c := range n {
				grid = append(grid, []int{a, b, c})
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 52))
	cases := 40
	if testing.Short() {
		cases = 15
	}
	for ti, order := range orders {
		tbl := fmt.Sprintf("r%d", ti)
		cqltest.Exec(t, s, fmt.Sprintf("CREATE TABLE %s (k int, c1 int, c2 int, c3 int, v int, PRIMARY KEY (k, c1, c2, c3)) WITH CLUSTERING ORDER BY (%s)", tbl, order))
		ins := fmt.Sprintf("INSERT INTO %s (k, c1, c2, c3, v) VALUES (?, ?, ?, ?, 0)", tbl)
		for k := range cases {
			b := s.NewBatch(0) // logged, one partition
			for _, r := range grid {
				b.Query(ins, k, r[0], r[1], r[2])
			}
			if err := s.ExecuteBatch(b); err != nil {
				t.Fatal(err)
			}
		}
		desc := strings.Split(order, ", ")
		clusteringOrder := func(a, b []int) int {
			for i := range a {
				if c := a[i] - b[i]; c != 0 {
					if strings.HasSuffix(desc[i], "DESC") {
						return -c
					}
					return c
				}
			}
			return 0
		}
		ordered := slices.Clone(grid)
		slices.SortFunc(ordered, clusteringOrder)
		for k := range cases {
			// An = prefix on c1 in some cases, then one or two bounds.
			from := 0
			where := fmt.Sprintf("k = %d", k)
			eq := -1
			if rng.IntN(3) == 0 {
				from, eq = 1, rng.IntN(n)
				where += fmt.Sprintf(" AND c1 = %d", eq)
			}
			var rels []rangeRel
			sides := [][]string{{">", ">="}, {"<", "<="}}
			rng.Shuffle(len(sides), func(i, j int) { sides[i], sides[j] = sides[j], sides[i] })
			nb := 1 + rng.IntN(2)
			multi := rng.IntN(4) != 0
			for _, side := range sides[:nb] {
				w := 1
				if multi {
					w = 1 + rng.IntN(3-from)
				}
				vals := make([]int, w)
				for i := range vals {
					vals[i] = rng.IntN(n+1) - rng.IntN(2) // -1..3: also beyond the data
				}
				rels = append(rels, rangeRel{width: w, op: side[rng.IntN(2)], vals: vals, multi: multi})
			}
			for _, r := range rels {
				where += " AND " + r.cql(from)
			}
			selected := func(row []int) bool {
				in := eq < 0 || row[0] == eq
				for _, r := range rels {
					in = in && r.holds(row, from)
				}
				return in
			}
			var wantSel []string
			for _, row := range ordered {
				if selected(row) {
					wantSel = append(wantSel, fmt.Sprintf("%d|%d|%d", row[0], row[1], row[2]))
				}
			}
			sel := fmt.Sprintf("SELECT c1, c2, c3 FROM %s WHERE %s", tbl, where)
			if got := rowsOf(t, s, 4, sel); !slices.Equal(got, wantSel) {
				t.Fatalf("%s (%s): rows\n  %q\nwant\n  %q", sel, order, got, wantSel)
			}
			stmt := fmt.Sprintf("DELETE FROM %s WHERE %s", tbl, where)
			if err := s.Query(stmt).Exec(); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
			var want []string
			for _, row := range grid {
				if !selected(row) {
					want = append(want, fmt.Sprintf("%d|%d|%d", row[0], row[1], row[2]))
				}
			}
			got := rowsOf(t, s, 10, fmt.Sprintf("SELECT c1, c2, c3 FROM %s WHERE k = %d", tbl, k))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s (%s): rows left\n  %q\nwant\n  %q", stmt, order, got, want)
			}
		}
	}
}

// TestDeleteMultiColumnBinds: range deletes with bound markers (the
// refusals are in testdata/transcripts/delete_ranges.cql).
func TestDeleteMultiColumnBinds(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int, a int, b int, c int, v int, PRIMARY KEY (k, a, b, c))")
	// Bound markers, and a null in a tuple.
	cqltest.Exec(t, s, "INSERT INTO t (k, a, b, c, v) VALUES (1, 1, 1, 1, 0)", "INSERT INTO t (k, a, b, c, v) VALUES (1, 1, 2, 0, 0)", "INSERT INTO t (k, a, b, c, v) VALUES (1, 2, 0, 0, 0)")
	// (gocql cannot bind a whole tuple marker here: it counts a tuple's
	// components as values, then marshals one of them as the tuple.)
	if err := s.Query("DELETE FROM t WHERE k = 1 AND (a, b) >= (?, ?) AND (a, b, c) < (?, ?, ?)", 1, 2, 2, 0, 0).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRows(t, rowsOf(t, s, 10, "SELECT a, b, c FROM t WHERE k = 1"), "1|1|1", "2|0|0")
	if err := s.Query("DELETE FROM t WHERE k = 1 AND (a, b) > (?, ?)", 1, nil).Exec(); err == nil || !strings.Contains(err.Error(), "Invalid null value in condition for column b") {
		t.Fatalf("a null in a tuple bound: %v", err)
	}
	// Multi-column IN names whole rows (or prefixes).
	cqltest.Exec(t, s, "DELETE FROM t WHERE k = 1 AND (a, b, c) IN ((1, 1, 1), (5, 5, 5))")
	wantRows(t, rowsOf(t, s, 10, "SELECT a, b, c FROM t WHERE k = 1"), "2|0|0")
	cqltest.Exec(t, s, "DELETE FROM t WHERE k = 1 AND (a) IN ((2))")
	wantRows(t, rowsOf(t, s, 10, "SELECT a, b, c FROM t WHERE k = 1"))
}
