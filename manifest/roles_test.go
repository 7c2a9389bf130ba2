package manifest

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
)

func TestRoles(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	v, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	if err := m.CreateRole(ctx, Role{Name: "alice", Login: true, SaltedHash: "h1", MemberOf: []string{"b", "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateRole(ctx, Role{Name: "alice"}); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := m.CreateRole(ctx, Role{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
	if err := m.CreateRole(ctx, Role{Name: "odd name.é"}); err != nil {
		t.Fatal(err)
	}
	r, err := m.Role(ctx, "alice")
	if err != nil || !r.Login || r.SaltedHash != "h1" || !slices.Equal(r.MemberOf, []string{"a", "b"}) {
		t.Fatalf("role %+v, %v", r, err)
	}

	if err := m.AlterRole(ctx, "alice", func(r *Role) error {
		r.Grant("data/ks", "SELECT", "MODIFY")
		r.Grant("data/ks/t", "ALTER")
		r.RemoveMember("a")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rev, err := m.RolesRevision(ctx)
	if err != nil || rev == 0 {
		t.Fatalf("revision %d, %v", rev, err)
	}
	// An unchanged role writes nothing: the revision stays.
	if err := m.AlterRole(ctx, "alice", func(r *Role) error { r.Grant("data/ks", "SELECT"); return nil }); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.RolesRevision(ctx); again != rev {
		t.Fatalf("unchanged role moved the revision %d → %d", rev, again)
	}
	boom := errors.New("boom")
	if err := m.AlterRole(ctx, "alice", func(*Role) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed mutation: %v", err)
	}
	if err := m.AlterRole(ctx, "nobody", func(*Role) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("alter missing: %v", err)
	}
	if err := m.AlterRole(ctx, "alice", func(r *Role) error { r.Name = "bob"; return nil }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rename: %v", err)
	}

	if err := v.WaitFor(ctx, func(v *View) bool { return v.RolesRevision() >= rev }); err != nil {
		t.Fatal(err)
	}
	vr := v.Role("alice")
	if vr == nil || !slices.Equal(vr.Permissions["data/ks"], []string{"MODIFY", "SELECT"}) || !slices.Equal(vr.MemberOf, []string{"b"}) {
		t.Fatalf("view role %+v", vr)
	}
	all, vrev := v.Roles()
	if len(all) != 2 || all[0].Name != "alice" || all[1].Name != "odd name.é" || vrev != rev {
		t.Fatalf("view roles %v at %d, want 2 at %d", all, vrev, rev)
	}

	if err := m.DropRole(ctx, "odd name.é"); err != nil {
		t.Fatal(err)
	}
	if err := m.DropRole(ctx, "odd name.é"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second drop: %v", err)
	}
	if _, err := m.Role(ctx, "odd name.é"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read dropped: %v", err)
	}
	rev, _ = m.RolesRevision(ctx)
	if err := v.WaitFor(ctx, func(v *View) bool { return v.RolesRevision() >= rev }); err != nil {
		t.Fatal(err)
	}
	if v.Role("odd name.é") != nil {
		t.Fatal("view still holds the dropped role")
	}
	roles, err := m.Roles(ctx)
	if err != nil || len(roles) != 1 || roles[0].Name != "alice" {
		t.Fatalf("roles %v, %v", roles, err)
	}
}

func TestRolePermissionEdits(t *testing.T) {
	r := &Role{Name: "r"}
	if !r.Grant("data/ks", "SELECT") || r.Grant("data/ks", "SELECT") {
		t.Fatal("grant reports")
	}
	r.Grant("data/ks/t", "MODIFY", "ALTER")
	r.Grant("data/ks2", "DROP")
	c := r.Clone()
	if !slices.Equal(r.Permissions["data/ks/t"], []string{"ALTER", "MODIFY"}) {
		t.Fatalf("sorted %v", r.Permissions["data/ks/t"])
	}
	if !r.Revoke("data/ks/t", "ALTER") || r.Revoke("data/ks/t", "ALTER") {
		t.Fatal("revoke reports")
	}
	if !r.Revoke("data/ks/t", "MODIFY") {
		t.Fatal("revoke last")
	}
	if _, ok := r.Permissions["data/ks/t"]; ok {
		t.Fatal("an empty permission list is kept")
	}
	r.Grant("data/ks/t", "SELECT")
	if !r.RevokeOn("data/ks") || len(r.Permissions) != 1 || r.Permissions["data/ks2"] == nil {
		t.Fatalf("revoke on keyspace left %v", r.Permissions)
	}
	if r.RevokeOn("data/ks") {
		t.Fatal("second RevokeOn reports a change")
	}
	// The clone is independent.
	if len(c.Permissions["data/ks/t"]) != 2 || len(c.Permissions) != 3 {
		t.Fatalf("clone changed: %v", c.Permissions)
	}
	if !r.AddMember("b") || !r.AddMember("a") || r.AddMember("a") || !slices.Equal(r.MemberOf, []string{"a", "b"}) {
		t.Fatalf("members %v", r.MemberOf)
	}
	if !r.RemoveMember("a") || r.RemoveMember("a") || !slices.Equal(r.MemberOf, []string{"b"}) {
		t.Fatalf("members %v", r.MemberOf)
	}
}

func TestRoleDecoderChecksKey(t *testing.T) {
	doc := []byte(`{"name":"a b","login":true,"superuser":false,"permissions":{"data":["SELECT"]}}`)
	if _, err := decoders[kindRoles](roleKey("a b"), doc); err != nil {
		t.Fatal(err)
	}
	if _, err := decoders[kindRoles](roleKey("a"), doc); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("foreign key: %v", err)
	}
	if _, err := decoders[kindRoles](roleKey("a b"), []byte(`{"name":"a b","pwd":"x"}`)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown field: %v", err)
	}
}

// TestRestoreRoles loses NATS and rebuilds it from the archive: roles,
// their grants and a dropped role's absence come back.
func TestRestoreRoles(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateRole(ctx, Role{Name: "cassandra", Login: true, Superuser: true, SaltedHash: "$2a$10$x"}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateRole(ctx, Role{Name: "reader", Options: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateRole(ctx, Role{Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	if err := m.AlterRole(ctx, "reader", func(r *Role) error { r.Grant("data/ks/t", "SELECT"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.AlterRole(ctx, "cassandra", func(r *Role) error { r.AddMember("reader"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.DropRole(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	want, err := m.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}

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
	if st.Buckets != 1 || st.Keys != 3 {
		t.Fatalf("restore stats %+v, want the roles bucket with 3 keys", st)
	}
	m2, err := Open(ctx, js, e.store, "c1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("restored %d roles, want %d", len(got), len(want))
	}
	for i := range want {
		if !rolesEqual(got[i], want[i]) {
			t.Fatalf("restored %+v, want %+v", got[i], want[i])
		}
	}
	// Changes go on from the restored versions.
	if err := m2.CreateRole(ctx, Role{Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	if err := m2.AlterRole(ctx, "reader", func(r *Role) error { r.Login = true; return nil }); err != nil {
		t.Fatal(err)
	}
}

// FuzzRoleDoc decodes role documents as the View does: a document decodes
// or fails with ErrCorrupt, and one that decodes survives a round trip.
func FuzzRoleDoc(f *testing.F) {
	f.Add([]byte(`{"name":"a","login":true,"superuser":false}`))
	f.Add([]byte(`{"name":"a","salted_hash":"$2a$10$x","login":false,"superuser":true,"options":{"k":"v"},"member_of":["b"],"permissions":{"data/ks":["SELECT"]}}`))
	f.Add([]byte(`{"name":"a","permissions":{"data":null}}`))
	f.Add([]byte(`{"name":"b"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := decoders[kindRoles](roleKey("a"), doc)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		r := v.(*Role)
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := decoders[kindRoles](roleKey("a"), again)
		if err != nil || !rolesEqual(r, v2.(*Role)) {
			t.Fatalf("round trip of %s: %s, %v", doc, again, err)
		}
	})
}
