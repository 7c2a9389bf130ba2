package exec

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/manifest"
)

// literalEval evaluates literal terms only, as a statement without markers.
func literalEval(t ast.Term, typ *cqltype.Type, _ string) ([]byte, bool, error) {
	v, err := values.Encode(typ, t, nil)
	return v, false, err
}

func intLit(i int) ast.Term { return &ast.Literal{Kind: ast.LitInteger, Text: strconv.Itoa(i)} }

// benchInsert plans INSERT INTO t (k, c, v0..vn-1) VALUES (...) on a table
// of n text columns.
func benchInsert(b *testing.B, n int) *modPlan {
	cols := []manifest.Column{
		{ID: 0, Name: "k", Type: "int", Kind: manifest.KindPartitionKey},
		{ID: 1, Name: "c", Type: "int", Kind: manifest.KindClustering},
	}
	for i := range n {
		cols = append(cols, manifest.Column{ID: uint32(2 + i), Name: fmt.Sprint("v", i), Type: "text", Kind: manifest.KindRegular})
	}
	l, err := newTableLayout(&manifest.Keyspace{Name: "ks"}, &manifest.Table{
		ID: uuid.New(), Name: "t", Columns: cols,
		PartitionKey: []uint32{0}, Clustering: []manifest.ClusteringKey{{ID: 1}},
	})
	if err != nil {
		b.Fatal(err)
	}
	p := (&Executor{cfg: Config{Guardrails: DefaultGuardrails()}}).newModPlan(writeInsert, l, 0)
	if err := p.where([]ast.Relation{
		{Columns: []string{"k"}, Op: ast.OpEq, Value: intLit(1)},
		{Columns: []string{"c"}, Op: ast.OpEq, Value: intLit(2)},
	}); err != nil {
		b.Fatal(err)
	}
	for _, c := range l.regular {
		p.ops = append(p.ops, &operation{col: c, kind: opSet, valueType: c.typ,
			value: &ast.Literal{Kind: ast.LitString, Text: "a value of some thirty bytes.."}})
	}
	if err := p.checkClustering(); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkWriteBuild measures turning an evaluated INSERT into the engine
// mutation: cells, the row value's encoding and the write set.
func BenchmarkWriteBuild(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("columns=%d", n), func(b *testing.B) {
			p := benchInsert(b, n)
			ctx := context.Background()
			w := writeTimes{ts: 1_700_000_000_000_000, now: 1_700_000_000}
			b.ReportAllocs()
			for b.Loop() {
				parts, err := p.build(ctx, literalEval, w, nil)
				if err != nil {
					b.Fatal(err)
				}
				ws := newWriteSet()
				for _, part := range parts {
					if err := ws.addPartition(part); err != nil {
						b.Fatal(err)
					}
				}
				if ms := ws.mutations(); len(ms) != 1 {
					b.Fatalf("%d mutations", len(ms))
				}
			}
		})
	}
}
