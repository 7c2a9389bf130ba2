package exec

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/manifest"
)

func TestSplitJoinCollection(t *testing.T) {
	elems := [][]byte{[]byte("a"), {}, []byte("ccc")}
	v := joinCollection(elems, false)
	got, err := splitCollection(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, elems, bytes.Equal) {
		t.Fatalf("split = %q, want %q", got, elems)
	}
	m := joinCollection([][]byte{[]byte("k"), []byte("v")}, true)
	if n := int(m[3]); n != 1 {
		t.Fatalf("map of one entry has count %d", n)
	}
	for _, bad := range [][]byte{nil, {0, 0}, {0, 0, 0, 1}, {0xFF, 0xFF, 0xFF, 0xFF}, {0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF}, {0, 0, 0, 1, 0, 0, 0, 2, 'a'}, {0, 0, 0, 0, 1}, {0x7F, 0xFF, 0xFF, 0xFF}} {
		if _, err := splitCollection(bad, false); err == nil {
			t.Errorf("splitCollection(%x) accepted a malformed value", bad)
		}
	}
}

func FuzzSplitCollection(f *testing.F) {
	f.Add(joinCollection([][]byte{[]byte("a"), []byte("bc")}, false), false)
	f.Add(joinCollection([][]byte{[]byte("k"), []byte("v")}, true), true)
	f.Add([]byte{0x7F, 0xFF, 0xFF, 0xFF}, false)
	f.Add([]byte{0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF}, true)
	f.Fuzz(func(t *testing.T, v []byte, isMap bool) {
		elems, err := splitCollection(v, isMap)
		if err != nil {
			return
		}
		if isMap && len(elems)%2 != 0 {
			t.Fatalf("map split into %d parts", len(elems))
		}
		if got := joinCollection(elems, isMap); !bytes.Equal(got, v) {
			t.Fatalf("join(split(%x)) = %x", v, got)
		}
	})
}

func FuzzSplitUDT(f *testing.F) {
	typ := cqltype.UDTOf("ks", "u", []string{"a", "b"}, []*cqltype.Type{cqltype.IntType, cqltype.TextType})
	f.Add(joinUDT([][]byte{{0, 0, 0, 1}, []byte("x")}))
	f.Add(joinUDT([][]byte{nil, []byte("x")}))
	f.Add([]byte{0, 0, 0, 9, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		fields, err := splitUDT(typ, v)
		if err != nil {
			return
		}
		if len(fields) != 2 {
			t.Fatalf("%d fields", len(fields))
		}
		again, err := splitUDT(typ, joinUDT(fields))
		if err != nil || !slices.EqualFunc(again, fields, bytes.Equal) {
			t.Fatalf("split(join(%q)) = %q, %v", fields, again, err)
		}
	})
}

func TestListPathsOrder(t *testing.T) {
	g := newListPaths()
	var appended, prepended [][]byte
	for range 50 {
		appended = append(appended, g.paths(3, false)...)
		// Each prepend goes before the previous ones, its elements in order.
		prepended = append(g.paths(2, true), prepended...)
	}
	all := append(append([][]byte(nil), prepended...), appended...)
	for i := 1; i < len(all); i++ {
		if bytes.Compare(all[i-1], all[i]) >= 0 {
			t.Fatalf("path %d does not sort after path %d", i, i-1)
		}
	}
	// Paths decode to version 1 UUIDs.
	for _, p := range all[:3] {
		v, err := elementFromPath(cqltype.TimeuuidType, p)
		if err != nil {
			t.Fatal(err)
		}
		u, err := uuid.FromBytes(v)
		if err != nil || u.Version() != 1 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("path holds %v (version %d), err %v", u, u.Version(), err)
		}
	}
}

func TestWriteSetMerges(t *testing.T) {
	l := testLayout(t)
	part := &partitionWrite{layout: l, tok: 1, pk: []byte{0, 0, 0, 1}}
	w1 := writeTimes{ts: 10, now: 100}
	w2 := writeTimes{ts: 20, now: 100}
	ws := newWriteSet()
	r, err := part.row([][]byte{{0, 0, 0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	r.row.Liveness = w1.liveness()
	r.row.Cells = append(r.row.Cells, w1.cell(l.column("v").id, nil, []byte("old")))
	if err := ws.addPartition(part); err != nil {
		t.Fatal(err)
	}
	part2 := &partitionWrite{layout: l, tok: 1, pk: part.pk}
	r2, _ := part2.row([][]byte{{0, 0, 0, 2}})
	r2.row.Cells = append(r2.row.Cells, w2.cell(l.column("v").id, nil, []byte("new")))
	part2.header.Deletion = model.Deletion{MarkedForDeleteAt: 5, LocalDeletionTime: 100}
	if err := ws.addPartition(part2); err != nil {
		t.Fatal(err)
	}
	ms := ws.mutations()
	if len(ms) != 1 || len(ms[0].Entries) != 2 {
		t.Fatalf("mutations = %+v", ms)
	}
	if k, _ := keys.EntryKind(ms[0].Entries[0].Key); k != keys.KindHeader {
		t.Fatal("the header does not come first")
	}
	var row model.Row
	if err := model.DecodeRow(ms[0].Entries[1].Value, &row); err != nil {
		t.Fatal(err)
	}
	if !row.Liveness.Present || len(row.Cells) != 1 || string(row.Cells[0].Value) != "new" {
		t.Fatalf("merged row = %+v", row)
	}
}

func TestOverwriteDeletesJustBefore(t *testing.T) {
	w := writeTimes{ts: 1000, ttl: 7, now: 50}
	if d := w.overwrite(); d.MarkedForDeleteAt != 999 || d.LocalDeletionTime != 50 {
		t.Fatalf("overwrite = %+v", d)
	}
	c := w.cell(3, nil, []byte("x"))
	if c.TTL != 7 || c.LocalDeletionTime != 57 {
		t.Fatalf("expiring cell = %+v", c)
	}
	if l := w.liveness(); !l.Present || l.Expires != 57 {
		t.Fatalf("liveness = %+v", l)
	}
}

// testLayout is the layout of t (k int, c int, v text, PRIMARY KEY (k, c)).
func testLayout(t *testing.T) *tableLayout {
	t.Helper()
	ks := &manifest.Keyspace{Name: "ks"}
	tbl := &manifest.Table{
		ID:   uuid.New(),
		Name: "t",
		Columns: []manifest.Column{
			{ID: 0, Name: "k", Type: "int", Kind: "partition_key"},
			{ID: 1, Name: "c", Type: "int", Kind: "clustering"},
			{ID: 2, Name: "v", Type: "text", Kind: "regular"},
		},
		PartitionKey: []uint32{0},
		Clustering:   []manifest.ClusteringKey{{ID: 1}},
	}
	l, err := newTableLayout(ks, tbl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
