package exec

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/manifest"
)

// BenchmarkDescribeSchema measures DESCRIBE SCHEMA's work per execution —
// every page repeats it — over schemas of growing size: listing the
// elements and writing every CREATE statement.
func BenchmarkDescribeSchema(b *testing.B) {
	for _, tables := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("tables=%d", tables), func(b *testing.B) {
			ks := &manifest.Keyspace{
				Name:        "bench",
				Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"},
				Tables:      map[string]*manifest.Table{},
				Types:       map[string]*manifest.UserType{"pt": {Name: "pt", Fields: []manifest.Field{{Name: "x", Type: "int"}}}},
			}
			for i := range tables {
				t := &manifest.Table{
					ID:   uuid.New(),
					Name: fmt.Sprintf("t%04d", i),
					Columns: []manifest.Column{
						{ID: 1, Name: "pk", Type: "text", Kind: manifest.KindPartitionKey},
						{ID: 2, Name: "ck", Type: "timeuuid", Kind: manifest.KindClustering},
						{ID: 3, Name: "v", Type: "blob", Kind: manifest.KindRegular},
						{ID: 4, Name: "tags", Type: "set<text>", Kind: manifest.KindRegular},
						{ID: 5, Name: "at", Type: "frozen<pt>", Kind: manifest.KindRegular},
					},
					PartitionKey: []uint32{1},
					Clustering:   []manifest.ClusteringKey{{ID: 2, Desc: true}},
					Options:      manifest.DefaultTableOptions(),
				}
				ks.Tables[t.Name] = t
			}
			schema := &manifest.Schema{Keyspaces: map[string]*manifest.Keyspace{ks.Name: ks}}
			p := &describePlan{st: &ast.Describe{Kind: ast.DescribeSchema}}
			b.ReportAllocs()
			var size int
			for b.Loop() {
				elems, err := p.elements(schema)
				if err != nil {
					b.Fatal(err)
				}
				size = 0
				for _, el := range elems {
					size += len(el.cql(false))
				}
			}
			b.SetBytes(int64(size))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tables), "ns/table")
		})
	}
}
