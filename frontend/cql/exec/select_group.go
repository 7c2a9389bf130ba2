package exec

import (
	"bytes"
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// grouper folds rows into groups for aggregates and GROUP BY: rows come in
// primary key order, so a group is a run of rows that agree on the first n
// primary key columns (n = 0: one group of every row).
type grouper struct {
	sel  *selection
	n    int
	key  [][]byte
	accs []accumulator
	rows [][][]byte
	// With GROUP BY, LIMIT counts groups and PER PARTITION LIMIT groups of
	// a partition, as Cassandra's group-by DataLimits (0: none).
	limit, perPart int
	part           string   // the partition of the current group
	parts          []string // the partition of each row of rows
	// order, when set, sorts the groups by their first rows' clustering
	// values (ORDER BY over several partitions), before LIMIT.
	order func(a, b [][]byte) int
	ck    [][]byte   // the clustering values of the current group's first row
	cks   [][][]byte // those of each row of rows
}

func (g *grouper) add(x *execCtx, r *rowCtx) error {
	key := make([][]byte, 0, g.n)
	for i := 0; i < g.n; i++ {
		if i < len(r.pk) {
			key = append(key, r.pk[i])
		} else if j := i - len(r.pk); j < len(r.ck) {
			key = append(key, r.ck[j])
		} else {
			key = append(key, nil) // a static row alone
		}
	}
	if g.accs == nil || !sameKey(g.key, key) {
		if err := g.flush(); err != nil {
			return err
		}
		g.key = key
		g.part, g.ck = partitionOf(r), r.ck
		g.accs = make([]accumulator, len(g.sel.items))
		for i, it := range g.sel.items {
			g.accs[i] = it.(aggSelector).start()
		}
	}
	for _, a := range g.accs {
		if err := a.add(x, r); err != nil {
			return err
		}
	}
	return nil
}

func sameKey(a, b [][]byte) bool {
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// flush closes the current group.
func (g *grouper) flush() error {
	if g.accs == nil {
		return nil
	}
	row := make([][]byte, len(g.accs))
	for i, a := range g.accs {
		v, err := a.result()
		if err != nil {
			return err
		}
		row[i] = v
	}
	g.rows = append(g.rows, row)
	g.parts = append(g.parts, g.part)
	g.cks = append(g.cks, g.ck)
	g.accs = nil
	return nil
}

// partitionOf identifies a row's partition by its key values.
func partitionOf(r *rowCtx) string {
	var b []byte
	for _, v := range r.pk {
		b = appendBytes(b, v)
	}
	return string(b)
}

// finish returns a row per group. Without GROUP BY, an aggregate over no
// rows still returns one row (count 0, nulls), as Cassandra.
func (g *grouper) finish() ([][][]byte, error) {
	if g.accs == nil && len(g.rows) == 0 && g.n == 0 {
		g.accs = make([]accumulator, len(g.sel.items))
		for i, it := range g.sel.items {
			g.accs[i] = it.(aggSelector).start()
		}
	}
	if err := g.flush(); err != nil {
		return nil, err
	}
	idx := make([]int, 0, len(g.rows))
	seen := map[string]int{}
	for i := range g.rows {
		if seen[g.parts[i]]++; g.perPart == 0 || seen[g.parts[i]] <= g.perPart {
			idx = append(idx, i)
		}
	}
	if g.order != nil {
		slices.SortStableFunc(idx, func(a, b int) int { return g.order(g.cks[a], g.cks[b]) })
	}
	rows := make([][][]byte, len(idx))
	for i, j := range idx {
		rows[i] = g.rows[j]
	}
	if g.limit > 0 && len(rows) > g.limit {
		rows = rows[:g.limit]
	}
	return rows, nil
}

// toJSON turns a computed row into SELECT JSON's one column: an object of
// the selectors' names, quoted as CQL identifiers when they need it.
func (s *selection) toJSON(row [][]byte) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range row {
		if i > 0 {
			b.WriteString(", ")
		}
		name := s.names[i]
		if name != strings.ToLower(name) {
			name = `"` + name + `"`
		}
		writeJSONString(&b, name)
		b.WriteString(": ")
		j, err := values.ToJSON(s.items[i].typ(), v)
		if err != nil {
			return nil, serverError(err)
		}
		b.Write(j)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// writeJSONString writes s as a JSON string.
func writeJSONString(b *strings.Builder, s string) {
	j, _ := values.ToJSON(cqltype.TextType, []byte(s))
	b.Write(j)
}
