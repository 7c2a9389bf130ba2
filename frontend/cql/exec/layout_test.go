package exec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/manifest"
)

func testKeyspace() *manifest.Keyspace {
	return &manifest.Keyspace{
		Name: "ks",
		Types: map[string]*manifest.UserType{
			"addr": {Name: "addr", Fields: []manifest.Field{{Name: "street", Type: "text"}, {Name: "zip", Type: "int"}}},
		},
	}
}

// testTable is (a int, b text, c bigint DESC, d text, s int static,
// m map<text,int>, u addr) with PRIMARY KEY ((a, b), c, d).
func testTable() *manifest.Table {
	return &manifest.Table{
		ID: uuid.New(), Name: "t",
		Columns: []manifest.Column{
			{ID: 1, Name: "a", Type: "int", Kind: manifest.KindPartitionKey},
			{ID: 2, Name: "b", Type: "text", Kind: manifest.KindPartitionKey},
			{ID: 3, Name: "c", Type: "bigint", Kind: manifest.KindClustering},
			{ID: 4, Name: "d", Type: "text", Kind: manifest.KindClustering},
			{ID: 5, Name: "s", Type: "int", Kind: manifest.KindStatic},
			{ID: 6, Name: "m", Type: "map<text, int>", Kind: manifest.KindRegular},
			{ID: 7, Name: "u", Type: "addr", Kind: manifest.KindRegular},
		},
		PartitionKey: []uint32{2, 1},
		Clustering:   []manifest.ClusteringKey{{ID: 3, Desc: true}, {ID: 4}},
		NextColumnID: 7,
	}
}

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func TestTableLayout(t *testing.T) {
	l, err := newTableLayout(testKeyspace(), testTable())
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{l.partition[0].name, l.partition[1].name}; !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("partition key %v, want the key order [b a]", got)
	}
	if l.column("c").pos != 0 || !l.column("c").desc || l.column("d").pos != 1 || l.column("d").desc {
		t.Errorf("clustering positions or orders wrong: c %+v d %+v", l.column("c"), l.column("d"))
	}
	if len(l.static) != 1 || l.static[0].name != "s" || len(l.regular) != 2 {
		t.Errorf("static %d, regular %d columns", len(l.static), len(l.regular))
	}
	u := l.column("u").typ
	if u.Kind != cqltype.UDT || u.Keyspace != "ks" || !slices.Equal(u.Fields, []string{"street", "zip"}) {
		t.Errorf("u resolved to %v", u)
	}
	if l.isCounter() {
		t.Error("a table with regular columns is not a counter table")
	}
	if l.byID[6] != l.column("m") {
		t.Error("byID and byName disagree")
	}
}

func TestTableLayoutUnknownType(t *testing.T) {
	tbl := testTable()
	tbl.Columns[6].Type = "nosuch"
	if _, err := newTableLayout(testKeyspace(), tbl); err == nil {
		t.Fatal("a column of an unknown type was accepted")
	}
}

func TestPartitionKey(t *testing.T) {
	l, err := newTableLayout(testKeyspace(), testTable())
	if err != nil {
		t.Fatal(err)
	}
	vals := [][]byte{[]byte("hello"), be32(7)}
	pk, tok, err := l.partitionKey(vals)
	if err != nil {
		t.Fatal(err)
	}
	// CompositeType: 2-byte length, bytes, 00 per component.
	want := []byte{0, 5, 'h', 'e', 'l', 'l', 'o', 0, 0, 4, 0, 0, 0, 7, 0}
	if !bytes.Equal(pk, want) {
		t.Fatalf("pk %x, want %x", pk, want)
	}
	if tok != token.Murmur3(want) {
		t.Errorf("token %d, want %d", tok, token.Murmur3(want))
	}
	back, err := l.partitionValues(pk)
	if err != nil || !bytes.Equal(back[0], vals[0]) || !bytes.Equal(back[1], vals[1]) {
		t.Errorf("partitionValues = %x, %v", back, err)
	}
	if _, _, err := l.partitionKey(vals[:1]); err == nil {
		t.Error("a partial partition key was accepted")
	}

	single := &manifest.Table{ID: uuid.New(), Name: "s", NextColumnID: 1, PartitionKey: []uint32{1},
		Columns: []manifest.Column{{ID: 1, Name: "k", Type: "text", Kind: manifest.KindPartitionKey}}}
	sl, err := newTableLayout(testKeyspace(), single)
	if err != nil {
		t.Fatal(err)
	}
	pk, tok, err = sl.partitionKey([][]byte{[]byte("k1")})
	if err != nil || !bytes.Equal(pk, []byte("k1")) || tok != token.Murmur3([]byte("k1")) {
		t.Errorf("single-column key = %q %d %v", pk, tok, err)
	}
	_, _, err = sl.partitionKey([][]byte{{}})
	if e, ok := err.(*Error); !ok || e.Code != wire.CodeInvalid || e.Message != "Key may not be empty" {
		t.Errorf("empty key: %v", err)
	}
}

func TestRowKeysRoundTrip(t *testing.T) {
	l, err := newTableLayout(testKeyspace(), testTable())
	if err != nil {
		t.Fatal(err)
	}
	pk, tok, err := l.partitionKey([][]byte{[]byte("p"), be32(1)})
	if err != nil {
		t.Fatal(err)
	}
	prefix := l.prefix(tok, pk)
	if !bytes.HasPrefix(l.headerKey(tok, pk), prefix) {
		t.Error("header key lacks the partition prefix")
	}
	// c is DESC: c=5 sorts before c=3; d ASC within.
	rows := [][][]byte{
		{be64(5), []byte("a")}, {be64(5), []byte("b")}, {be64(3), []byte("")}, {be64(3), []byte("a")}, {be64(-1), []byte("z")},
	}
	var prev []byte
	for _, r := range rows {
		k, err := l.rowKey(tok, pk, r)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Errorf("row %x does not sort after the previous one", r)
		}
		prev = k
		back, err := l.clusteringValues(k)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != 2 || !bytes.Equal(back[0], r[0]) || !bytes.Equal(back[1], r[1]) {
			t.Errorf("clustering %x decoded as %x", r, back)
		}
		gotPK, err := keys.PartitionKey(k)
		if err != nil || !bytes.Equal(gotPK, pk) {
			t.Errorf("partition key of row key: %x %v", gotPK, err)
		}
	}
	// Bounds on c = 5 hold the two c=5 rows and nothing else.
	lo, err := l.bound(prefix, [][]byte{be64(5)}, keys.Before)
	if err != nil {
		t.Fatal(err)
	}
	hi, err := l.bound(prefix, [][]byte{be64(5)}, keys.After)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		k, _ := l.rowKey(tok, pk, r)
		in := bytes.Compare(lo, k) < 0 && bytes.Compare(k, hi) < 0
		if in != (i < 2) {
			t.Errorf("row %d in [c=5 bounds] = %v", i, in)
		}
	}
	if _, err := l.rowKey(tok, pk, rows[0][:1]); err == nil {
		t.Error("a row key with a missing clustering value was accepted")
	}
	if _, err := l.bound(prefix, [][]byte{be64(1), {}, {}}, keys.Before); err == nil {
		t.Error("a bound with too many components was accepted")
	}
}

func TestElementPathOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[*cqltype.Type]func() []byte{
		cqltype.IntType: func() []byte { return be32(int32(r.Uint32())) },
		cqltype.TextType: func() []byte {
			b := make([]byte, r.IntN(4))
			for i := range b {
				b[i] = byte(r.IntN(3))
			}
			return b
		},
		cqltype.TimeuuidType: func() []byte {
			u, _ := uuid.NewUUID()
			b := u[:]
			b[0], b[8], b[15] = byte(r.Uint32()), byte(r.Uint32())&0x3f|0x80, byte(r.Uint32())
			return b
		},
		cqltype.DoubleType: func() []byte { return be64(int64(r.Uint64())) },
		cqltype.MustParse("frozen<list<int>>"): func() []byte {
			n := r.IntN(3)
			b := be32(int32(n))
			for range n {
				b = append(append(b, be32(4)...), be32(int32(r.IntN(5)-2))...)
			}
			return b
		},
	}
	for typ, gen := range gens {
		vals := make([][]byte, 200)
		paths := make([][]byte, len(vals))
		for i := range vals {
			vals[i] = gen()
			if err := cqltype.Validate(typ, vals[i]); err != nil {
				t.Fatalf("%s: generated an invalid value %x: %v", typ, vals[i], err)
			}
			p, err := elementPath(typ, vals[i])
			if err != nil {
				t.Fatalf("%s: elementPath(%x): %v", typ, vals[i], err)
			}
			paths[i] = p
			back, err := elementFromPath(typ, p)
			if err != nil {
				t.Fatalf("%s: elementFromPath(%x): %v", typ, p, err)
			}
			if cqltype.Compare(typ, back, vals[i]) != 0 {
				t.Fatalf("%s: %x came back as %x", typ, vals[i], back)
			}
		}
		for i := range vals {
			for j := range vals {
				if got, want := bytes.Compare(paths[i], paths[j]), cqltype.Compare(typ, vals[i], vals[j]); got != want {
					t.Fatalf("%s: paths of %x and %x compare %d, values %d", typ, vals[i], vals[j], got, want)
				}
			}
		}
	}
}

func TestPathType(t *testing.T) {
	m := cqltype.MustParse("map<text, int>")
	if pathType(m) != m.Elems[0] || pathType(cqltype.MustParse("set<int>")).Kind != cqltype.Int ||
		pathType(cqltype.MustParse("list<text>")) != cqltype.TimeuuidType || pathType(cqltype.IntType) != nil {
		t.Error("pathType is wrong")
	}
}

func TestElementFromPathCorrupt(t *testing.T) {
	for _, p := range [][]byte{nil, {0x11}, {0x11, 0, 0}, {0x99, 1, 2, 3, 4}, {0x11, 0x80, 0, 0, 1, 0x11}} {
		if v, err := elementFromPath(cqltype.IntType, p); err == nil {
			t.Errorf("path %x decoded as %x", p, v)
		}
	}
}

// FuzzElementFromPath feeds stored cell paths, which come from disk, to the
// decoder: it must fail cleanly or return a value whose path is canonical.
func FuzzElementFromPath(f *testing.F) {
	p, _ := elementPath(cqltype.TextType, []byte("abc"))
	f.Add(p, uint8(0))
	p, _ = elementPath(cqltype.IntType, be32(-5))
	f.Add(p, uint8(1))
	f.Add([]byte{0x11, 0xff}, uint8(2))
	types := []*cqltype.Type{cqltype.TextType, cqltype.IntType, cqltype.TimeuuidType, cqltype.MustParse("frozen<set<bigint>>")}
	f.Fuzz(func(t *testing.T, path []byte, ti uint8) {
		typ := types[int(ti)%len(types)]
		v, err := elementFromPath(typ, path)
		if err != nil {
			return
		}
		if err := cqltype.Validate(typ, v); err != nil {
			t.Fatalf("decoded an invalid %s %x from %x: %v", typ, v, path, err)
		}
		again, err := elementPath(typ, v)
		if err != nil {
			t.Fatalf("re-encoding %x: %v", v, err)
		}
		back, err := elementFromPath(typ, again)
		if err != nil || cqltype.Compare(typ, back, v) != 0 {
			t.Fatalf("%x -> %x -> %x (%v)", path, v, back, err)
		}
	})
}
