package manifest

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestFreshIDAvoidsTakenShortIDs(t *testing.T) {
	a := uuid.MustParse("00000001-0000-4000-8000-000000000001")
	b := uuid.MustParse("00000001-ffff-4fff-bfff-ffffffffffff") // a's ShortID
	c := uuid.MustParse("00000002-0000-4000-8000-000000000001")
	taken := map[uint32]bool{ShortID(a): true}
	gen := []uuid.UUID{b, c}
	got := freshID(taken, a, func() uuid.UUID { id := gen[0]; gen = gen[1:]; return id })
	if got != c {
		t.Fatalf("got %v, want %v", got, c)
	}
	if got := freshID(taken, c, nil); got != c {
		t.Fatalf("a free ID changed to %v", got)
	}
}

// TestSchemaIndex checks the lookups by ID against the keyspaces they index,
// in a schema read from NATS and in a View, which must agree, and that an
// altered table is found afresh.
func TestSchemaIndex(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	v, err := e.open("c1").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var made []*Table
	for _, ks := range []string{"b", "a"} {
		if err := m.CreateKeyspace(ctx, ks, simple, true); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"y", "x"} {
			tbl, err := m.CreateTable(ctx, usersSpec(ks, name))
			if err != nil {
				t.Fatal(err)
			}
			if tbl.Keyspace != ks {
				t.Fatalf("created table names keyspace %q, want %q", tbl.Keyspace, ks)
			}
			made = append(made, tbl)
		}
	}
	if err := m.AlterTable(ctx, "a", "x", func(t *Table) error { return t.AddColumn("extra", "int", false) }); err != nil {
		t.Fatal(err)
	}
	want, err := m.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.WaitFor(ctx, func(v *View) bool { return v.SchemaVersion() == want.Version }); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Schema{"manifest": want, "view": v.Schema()} {
		var order []string
		for _, tbl := range s.Tables() {
			order = append(order, tbl.Keyspace+"."+tbl.Name)
			if ks := s.Keyspaces[tbl.Keyspace]; ks == nil || ks.Tables[tbl.Name] != tbl {
				t.Fatalf("%s: table %s.%s is not its keyspace's", name, tbl.Keyspace, tbl.Name)
			}
		}
		if got := strings.Join(order, " "); got != "a.x a.y b.x b.y" {
			t.Fatalf("%s: tables in order %s", name, got)
		}
		for _, tbl := range made {
			got := s.TableByID(tbl.ID)
			if got == nil || got.Keyspace != tbl.Keyspace || got.Name != tbl.Name {
				t.Fatalf("%s: TableByID(%v) = %+v, want %s.%s", name, tbl.ID, got, tbl.Keyspace, tbl.Name)
			}
			if short := s.TablesByShortID(tbl.ShortID()); len(short) != 1 || short[0] != got {
				t.Fatalf("%s: TablesByShortID(%08x) = %v", name, tbl.ShortID(), short)
			}
		}
		if _, ok := s.TableByID(made[3].ID).Column("extra"); !ok {
			t.Fatalf("%s: the index holds the table as it was before ALTER", name)
		}
		if s.TableByID(uuid.New()) != nil {
			t.Fatalf("%s: an unknown ID is found", name)
		}
	}
	if v.TableByID(made[0].ID) != v.Schema().TableByID(made[0].ID) {
		t.Fatal("View.TableByID disagrees with its Schema")
	}
}

// TestSchemaIndexShortIDCollision checks that both tables of a ShortID
// collision, which CreateTable avoids but cannot exclude, are listed.
func TestSchemaIndexShortIDCollision(t *testing.T) {
	a := &Table{ID: uuid.MustParse("00000001-0000-4000-8000-000000000001"), Name: "t"}
	b := &Table{ID: uuid.MustParse("00000001-ffff-4fff-bfff-ffffffffffff"), Name: "t"}
	ks1 := &Keyspace{Name: "k1", Tables: map[string]*Table{"t": a}}
	ks2 := &Keyspace{Name: "k2", Tables: map[string]*Table{"t": b}}
	ks1.named()
	ks2.named()
	s := NewSchema(map[string]*Keyspace{"k1": ks1, "k2": ks2})
	if got := s.TablesByShortID(a.ShortID()); len(got) != 2 {
		t.Fatalf("TablesByShortID = %v, want both tables", got)
	}
	if s.TableByID(a.ID) != a || s.TableByID(b.ID) != b {
		t.Fatal("TableByID mixes up tables that share a ShortID")
	}
}
