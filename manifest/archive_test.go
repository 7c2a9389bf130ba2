package manifest

import (
	"context"
	"errors"
	"os"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/objectstore"
)

// flakyStore fails conditional puts while down is set.
type flakyStore struct {
	objectstore.Store
	down atomic.Bool
}

var errStoreDown = errors.New("test: store down")

func (s *flakyStore) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (string, error) {
	if s.down.Load() {
		return "", errStoreDown
	}
	return s.Store.PutIf(ctx, key, data, cond)
}

func TestRetryAfterArchiveFailure(t *testing.T) {
	e := newEnv(t)
	fs := &flakyStore{Store: e.store}
	e.store = fs
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()
	c := Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("x", 0, 1)}}

	fs.down.Store(true)
	if _, err := m.CommitSSTables(ctx, c); !errors.Is(err, ErrNotArchived) || !errors.Is(err, errStoreDown) {
		t.Fatalf("commit with the store down: %v", err)
	}
	fs.down.Store(false)
	got, err := m.CommitSSTables(ctx, c)
	if err != nil || len(got) != 1 {
		t.Fatalf("retry: %v %v", got, err)
	}
	if _, err := readObject(ctx, e.store, archiveKey(m.sstables.name, sstablesKey(tbl, testRange), 1)); err != nil {
		t.Fatalf("retry did not archive the committed version: %v", err)
	}
	// The retry changed nothing: still version 1.
	if _, err := readObject(ctx, e.store, archiveKey(m.sstables.name, sstablesKey(tbl, testRange), 2)); !objectstore.IsNotFound(err) {
		t.Fatalf("version 2: %v", err)
	}
}

func TestArchiveConflict(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()
	// Someone else's version 1 is already archived.
	if _, err := e.store.Put(ctx, archiveKey(m.sstables.name, sstablesKey(tbl, testRange), 1), []byte(`{"version":1,"deleted":true}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("x", 0, 1)}}); !errors.Is(err, ErrArchiveConflict) {
		t.Fatalf("commit over a different archived version: %v", err)
	}
}

func TestRestore(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	other := e.open("c2")
	ctx := ctxT(t)

	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "gone", simple, true); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateType(ctx, "ks", UserType{Name: "addr", Fields: []Field{{"street", "text"}}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, usersSpec("ks", "users"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AlterTable(ctx, "ks", "users", func(t *Table) error { return t.DropColumn("note", 5) }); err != nil {
		t.Fatal(err)
	}
	if err := m.DropKeyspace(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, 4); err != nil {
		t.Fatal(err)
	}
	o, err := m.Assign(ctx, 1, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Assign(ctx, 2, "n2"); err != nil {
		t.Fatal(err)
	}
	lo, hi := RangeBounds(1, 4)
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl.ID, Range: 1, Add: []SSTable{sst("a", lo, hi), sst("b", lo, lo)}, Epoch: o.Epoch}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl.ID, Range: 1, Add: []SSTable{sst("c", lo, hi)}, Remove: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if err := other.CreateKeyspace(ctx, "elsewhere", simple, false); err != nil {
		t.Fatal(err)
	}
	if err := m.Heartbeat(ctx, Member{ID: "n1", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}

	wantSchema, _ := m.Schema(ctx)
	wantOther, _ := other.Schema(ctx)
	wantSST, _ := m.SSTables(ctx, tbl.ID)
	wantOwn := []Ownership{}
	for r := range 4 {
		o, err := m.Ownership(ctx, r)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		wantOwn = append(wantOwn, o)
	}

	// Lose NATS entirely.
	e.stop()
	if err := os.RemoveAll(e.natsDir); err != nil {
		t.Fatal(err)
	}
	e.start(0)
	js := e.connect()
	st, err := Restore(ctx, e.store, js)
	if err != nil {
		t.Fatal(err)
	}
	if st.Buckets != 4 || st.Keys == 0 || st.Present != 0 {
		t.Fatalf("restore stats %+v", st)
	}
	// Running it again finds everything in place.
	st2, err := Restore(ctx, e.store, js)
	if err != nil || st2.Keys != 0 || st2.Present != st.Keys {
		t.Fatalf("second restore: %+v %v", st2, err)
	}

	m2, err := Open(ctx, js, e.store, "c1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	gotSchema, _ := m2.Schema(ctx)
	if !reflect.DeepEqual(gotSchema, wantSchema) {
		t.Fatalf("schema after restore:\n%+v\nwant\n%+v", gotSchema, wantSchema)
	}
	if _, ok := gotSchema.Keyspaces["gone"]; ok {
		t.Fatal("dropped keyspace came back")
	}
	other2, _ := Open(ctx, js, e.store, "c2", Options{})
	if gotOther, _ := other2.Schema(ctx); !reflect.DeepEqual(gotOther, wantOther) {
		t.Fatalf("other cluster after restore: %+v", gotOther)
	}
	gotSST, _ := m2.SSTables(ctx, tbl.ID)
	if !reflect.DeepEqual(gotSST, wantSST) || len(gotSST) != 2 {
		t.Fatalf("sstables after restore: %+v, want %+v", gotSST, wantSST)
	}
	var gotOwn []Ownership
	for r := range 4 {
		o, err := m2.Ownership(ctx, r)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		gotOwn = append(gotOwn, o)
	}
	if !reflect.DeepEqual(gotOwn, wantOwn) {
		t.Fatalf("ownership after restore: %+v, want %+v", gotOwn, wantOwn)
	}
	if ms, _ := m2.Members(ctx); len(ms) != 0 {
		t.Fatalf("members are live state and are not restored: %+v", ms)
	}
	// Fencing and versions carry on: the restored epoch is current, and the
	// next change gets the next archive version.
	if _, err := m2.CommitSSTables(ctx, Commit{Table: tbl.ID, Range: 1, Add: []SSTable{sst("d", lo, hi)}, Epoch: o.Epoch}); err != nil {
		t.Fatal(err)
	}
	if err := m2.DropKeyspace(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("drop of a dropped keyspace: %v", err)
	}
	if err := m2.CreateKeyspace(ctx, "gone", simple, true); err != nil {
		t.Fatalf("re-create after restore: %v", err)
	}

	// A NATS value that differs from the archive is reported, not overwritten.
	if _, err := m2.Assign(ctx, 1, "n9"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, archiveKey(m2.ownership.name, rangeKey(1), 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, e.store, js); !errors.Is(err, ErrRestoreConflict) {
		t.Fatalf("restore over a different value: %v", err)
	}
}

func TestRestoreRejectsForeignObjects(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	for _, key := range []string{"manifest/c1_schema/ks.a/12", "manifest/c1_members/m.x/00000000000000000001", "manifest/c_1_schema/x/00000000000000000001"} {
		if _, err := e.store.Put(ctx, key, []byte(`{"version":1,"deleted":true}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := Restore(ctx, e.store, e.connect()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v", key, err)
		}
		if err := e.store.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
}

// archivedEnvelope returns the archived version v of key in b.
func archivedEnvelope(t *testing.T, ctx context.Context, m *Manifest, b *bucket, key string, v uint64) envelope {
	t.Helper()
	raw, err := readObject(ctx, m.store, archiveKey(b.name, key, v))
	if err != nil {
		t.Fatalf("version %d of %s/%s is not archived: %v", v, b.name, key, err)
	}
	env, err := decodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// A retried DDL statement whose first attempt was applied but not archived
// answers as the applied state demands (ErrExists, ErrNotFound), and only
// after writing the missing copy.
func TestRetriedDDLArchivesAppliedChange(t *testing.T) {
	e := newEnv(t)
	fs := &flakyStore{Store: e.store}
	e.store = fs
	m := e.open("c1")
	ctx := ctxT(t)
	ksKey := keyspaceKey("ks")

	fs.down.Store(true)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("create with the store down: %v", err)
	}
	// Still down: the retry must not claim ErrExists over a missing copy.
	if err := m.CreateKeyspace(ctx, "ks", simple, true); !errors.Is(err, ErrNotArchived) || errors.Is(err, ErrExists) {
		t.Fatalf("retried create with the store down: %v", err)
	}
	fs.down.Store(false)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); !errors.Is(err, ErrExists) {
		t.Fatalf("retried create: %v, want ErrExists", err)
	}
	if env := archivedEnvelope(t, ctx, m, m.schema, ksKey, 1); env.Deleted {
		t.Fatalf("archived create is a tombstone: %+v", env)
	}

	fs.down.Store(true)
	if _, err := m.CreateTable(ctx, usersSpec("ks", "users")); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("create table with the store down: %v", err)
	}
	fs.down.Store(false)
	if _, err := m.CreateTable(ctx, usersSpec("ks", "users")); !errors.Is(err, ErrExists) {
		t.Fatalf("retried create table: %v, want ErrExists", err)
	}
	var ks Keyspace
	if err := decodeDoc(archivedEnvelope(t, ctx, m, m.schema, ksKey, 2).Data, &ks); err != nil || ks.Tables["users"] == nil {
		t.Fatalf("archived version 2 lacks the table: %+v %v", ks, err)
	}

	fs.down.Store(true)
	if err := m.DropKeyspace(ctx, "ks"); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("drop with the store down: %v", err)
	}
	fs.down.Store(false)
	if err := m.DropKeyspace(ctx, "ks"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retried drop: %v, want ErrNotFound", err)
	}
	if env := archivedEnvelope(t, ctx, m, m.schema, ksKey, 3); !env.Deleted {
		t.Fatalf("archived drop is not a tombstone: %+v", env)
	}
}

// Deleting a key whose tombstone is already in NATS writes nothing, but
// archives the tombstone if its copy is missing.
func TestDeleteOfTombstoneArchivesIt(t *testing.T) {
	e := newEnv(t)
	fs := &flakyStore{Store: e.store}
	e.store = fs
	m := e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	fs.down.Store(true)
	if err := m.DropKeyspace(ctx, "ks"); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("drop with the store down: %v", err)
	}
	fs.down.Store(false)
	del := func([]byte) ([]byte, error) { return nil, nil }
	if err := m.update(ctx, m.schema, keyspaceKey("ks"), del); err != nil {
		t.Fatal(err)
	}
	if env := archivedEnvelope(t, ctx, m, m.schema, keyspaceKey("ks"), 2); !env.Deleted {
		t.Fatalf("archived drop is not a tombstone: %+v", env)
	}
	// Deleting a key that never existed writes nothing at all.
	if err := m.update(ctx, m.schema, keyspaceKey("never"), del); err != nil {
		t.Fatal(err)
	}
	if _, err := m.schema.kv.Get(ctx, keyspaceKey("never")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("delete of an absent key wrote it: %v", err)
	}
}

// A fenced commit that was applied but not archived is retried after its
// range moved to another owner: the change is in, so the retry succeeds and
// writes the missing copy, while a new change under that epoch is fenced.
func TestRetryAfterReassignment(t *testing.T) {
	e := newEnv(t)
	fs := &flakyStore{Store: e.store}
	e.store = fs
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	old, err := m.Assign(ctx, testRange, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	tbl := uuid.New()
	c := Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("x", 0, 1)}, Epoch: old.Epoch}
	fs.down.Store(true)
	if _, err := m.CommitSSTables(ctx, c); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("commit with the store down: %v", err)
	}
	fs.down.Store(false)
	if _, err := m.Assign(ctx, testRange, "node-b"); err != nil {
		t.Fatal(err)
	}
	got, err := m.CommitSSTables(ctx, c)
	if err != nil || len(got) != 1 || got[0].Key != "x" {
		t.Fatalf("retry of an applied commit after reassignment: %+v %v", got, err)
	}
	if env := archivedEnvelope(t, ctx, m, m.sstables, sstablesKey(tbl, testRange), 1); env.Deleted {
		t.Fatalf("archived commit is a tombstone: %+v", env)
	}
	c.Add = []SSTable{sst("y", 0, 1)}
	if _, err := m.CommitSSTables(ctx, c); !errors.Is(err, ErrFenced) {
		t.Fatalf("new change under the old epoch: %v, want ErrFenced", err)
	}
}
