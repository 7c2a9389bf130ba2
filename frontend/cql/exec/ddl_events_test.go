package exec

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/manifest"
)

func TestSchemaChanges(t *testing.T) {
	tbl := func(id uuid.UUID, cols ...string) *manifest.Table {
		t := &manifest.Table{ID: id, Name: "t"}
		for i, c := range cols {
			t.Columns = append(t.Columns, manifest.Column{ID: uint32(i + 1), Name: c, Type: "int"})
		}
		return t
	}
	id1, id2 := uuid.New(), uuid.New()
	before := &manifest.Schema{Keyspaces: map[string]*manifest.Keyspace{
		"a": {Name: "a", Version: uuid.New(), Replication: map[string]string{"class": "x"},
			Tables: map[string]*manifest.Table{"t1": tbl(id1, "k"), "t2": tbl(id2, "k"), "gone": tbl(uuid.New(), "k")},
			Types: map[string]*manifest.UserType{"u": {Name: "u"},
				"v": {Name: "v", Fields: []manifest.Field{{Name: "x", Type: "int"}}}}},
		"dropped": {Name: "dropped", Version: uuid.New()},
		"same":    {Name: "same", Version: uuid.New()},
	}}
	after := &manifest.Schema{Keyspaces: map[string]*manifest.Keyspace{
		"a": {Name: "a", Version: uuid.New(), Replication: map[string]string{"class": "y"},
			Tables: map[string]*manifest.Table{"t1": tbl(id1, "k"), "t2": tbl(id2, "k", "v"), "new": tbl(uuid.New(), "k")},
			Types:  map[string]*manifest.UserType{"v": {Name: "v", Fields: []manifest.Field{{Name: "x", Type: "int"}, {Name: "y", Type: "text"}}}}},
		"created": {Name: "created", Version: uuid.New()},
		"same":    before.Keyspaces["same"],
	}}
	var got []string
	for _, c := range schemaChanges(before, after) {
		got = append(got, c.Change+" "+c.Target+" "+c.Keyspace+"."+c.Name)
	}
	want := []string{
		"UPDATED KEYSPACE a.",
		"DROPPED TYPE a.u",
		"UPDATED TYPE a.v",
		"DROPPED TABLE a.gone",
		"CREATED TABLE a.new",
		"UPDATED TABLE a.t2",
		"CREATED KEYSPACE created.",
		"DROPPED KEYSPACE dropped.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%q\nwant\n%q", got, want)
	}
}

func TestTopologyEvents(t *testing.T) {
	a, b, c := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.2:1"), netip.MustParseAddrPort("127.0.0.3:1")
	evs := topologyEvents(map[netip.AddrPort]bool{a: true, b: true}, map[netip.AddrPort]bool{b: true, c: true})
	var got []string
	for _, e := range evs {
		got = append(got, e.Type+" "+e.Change+" "+e.Addr.String())
	}
	want := []string{
		wire.TopologyChange + " NEW_NODE 127.0.0.3:1", wire.StatusChange + " UP 127.0.0.3:1",
		wire.StatusChange + " DOWN 127.0.0.1:1", wire.TopologyChange + " REMOVED_NODE 127.0.0.1:1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
