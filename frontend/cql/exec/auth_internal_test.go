package exec

import (
	"context"
	"net"
	"reflect"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

func TestResources(t *testing.T) {
	for _, tc := range []struct {
		r     resource
		str   string
		chain []resource
		perms []string
	}{
		{resData, "<all keyspaces>", []resource{resData}, []string{"CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE"}},
		{keyspaceResource("ks"), "<keyspace ks>", []resource{"data/ks", resData}, []string{"CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE"}},
		{tableResource("ks", "t"), "<table ks.t>", []resource{"data/ks/t", "data/ks", resData}, []string{"ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE"}},
		{resRoles, "<all roles>", []resource{resRoles}, []string{"CREATE", "ALTER", "DROP", "AUTHORIZE", "DESCRIBE"}},
		{roleResource("a/b"), "<role a/b>", []resource{"roles/a/b", resRoles}, []string{"ALTER", "DROP", "AUTHORIZE"}},
	} {
		if got := tc.r.String(); got != tc.str {
			t.Errorf("%q: String %q, want %q", tc.r, got, tc.str)
		}
		if got := tc.r.chain(); !reflect.DeepEqual(got, tc.chain) {
			t.Errorf("%q: chain %q, want %q", tc.r, got, tc.chain)
		}
		if got := tc.r.applicable().names(); !reflect.DeepEqual(got, tc.perms) {
			t.Errorf("%q: applicable %q, want %q", tc.r, got, tc.perms)
		}
	}
	if got := permsOf([]string{"SELECT", "FUTURE", "CREATE"}); got != setOf(permSelect, permCreate) {
		t.Errorf("permsOf: %b", got)
	}
}

func TestStatementNeeds(t *testing.T) {
	tbl := ast.TableName{Name: "t"}
	for _, tc := range []struct {
		st   ast.Statement
		want []need
	}{
		{&ast.Select{Table: tbl}, []need{{permSelect, "data/ks/t"}}},
		{&ast.Select{Table: ast.TableName{Keyspace: "system", Name: "local"}}, nil},
		{&ast.Insert{Table: tbl}, []need{{permModify, "data/ks/t"}}},
		{&ast.Insert{Table: tbl, IfNotExists: true}, []need{{permModify, "data/ks/t"}, {permSelect, "data/ks/t"}}},
		{&ast.Delete{Table: ast.TableName{Keyspace: "o", Name: "u"}, IfExists: true}, []need{{permModify, "data/o/u"}, {permSelect, "data/o/u"}}},
		{&ast.Batch{Statements: []ast.Statement{&ast.Update{Table: tbl}, &ast.Delete{Table: tbl}}}, []need{{permModify, "data/ks/t"}, {permModify, "data/ks/t"}}},
		{&ast.Truncate{Table: tbl}, []need{{permModify, "data/ks/t"}}},
		{&ast.CreateKeyspace{Name: "n"}, []need{{permCreate, resData}}},
		{&ast.AlterKeyspace{Name: "n"}, []need{{permAlter, "data/n"}}},
		{&ast.DropKeyspace{Name: "n"}, []need{{permDrop, "data/n"}}},
		{&ast.CreateTable{Table: tbl}, []need{{permCreate, "data/ks"}}},
		{&ast.AlterTable{Table: tbl}, []need{{permAlter, "data/ks/t"}}},
		{&ast.DropTable{Table: tbl}, []need{{permDrop, "data/ks/t"}}},
		{&ast.CreateType{Name: tbl}, []need{{permCreate, "data/ks"}}},
		{&ast.Use{Keyspace: "x"}, nil},
	} {
		if got := statementNeeds("ks", tc.st); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%T: needs %v, want %v", tc.st, got, tc.want)
		}
	}
}

// client is the address logins of the tests come from.
var client = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}

func TestCheckPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, store, "test", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	a := NewAuth(m, view, AuthOptions{BcryptCost: bcrypt.MinCost})
	if err := a.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Setup(ctx); err != nil { // a second start finds the role
		t.Fatal(err)
	}
	check := func(role, pw string, want bool) {
		t.Helper()
		ok, err := a.CheckPassword(ctx, client, role, pw)
		if err != nil || ok != want {
			t.Fatalf("CheckPassword(%s, %s) = %v, %v; want %v", role, pw, ok, err, want)
		}
	}
	check("cassandra", "cassandra", true)
	check("cassandra", "cassandra", true) // remembered
	check("cassandra", "Cassandra", false)
	check("nobody", "cassandra", false)

	// A new password replaces the remembered one.
	hash, err := a.hash("new")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AlterRole(ctx, "cassandra", func(r *manifest.Role) error { r.SaltedHash = hash; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("cassandra", "cassandra", false)
	check("cassandra", "new", true)
	// So does losing LOGIN.
	if err := m.AlterRole(ctx, "cassandra", func(r *manifest.Role) error { r.Login = false; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("cassandra", "wrong", false)
	if ok, err := a.CheckPassword(ctx, client, "cassandra", "new"); ok || err == nil || err.Error() != "cassandra is not permitted to log in" {
		t.Fatalf("CheckPassword of a role without LOGIN = %v, %v; want the error \"cassandra is not permitted to log in\"", ok, err)
	}

	// A stored hash that is not bcrypt is an error, not a wrong password.
	if err := m.CreateRole(ctx, manifest.Role{Name: "odd", Login: true, SaltedHash: "plain"}); err != nil {
		t.Fatal(err)
	}
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CheckPassword(ctx, client, "odd", "plain"); err == nil {
		t.Fatal("no error for a corrupt hash")
	}
	if _, err := a.hash(string(make([]byte, 73))); err == nil {
		t.Fatal("a password over bcrypt's 72 bytes hashed")
	}
}

func TestPrincipalClosure(t *testing.T) {
	s := &authSnapshot{roles: map[string]*manifest.Role{
		"a": {Name: "a", MemberOf: []string{"b", "gone"}, Permissions: map[string][]string{"data/ks": {"SELECT"}}},
		"b": {Name: "b", MemberOf: []string{"c"}},
		"c": {Name: "c", MemberOf: []string{"a"}, Superuser: true, Permissions: map[string][]string{"roles": {"CREATE"}}},
	}}
	if got := s.closure("a", false); !reflect.DeepEqual(got, map[string]bool{"a": true, "b": true}) {
		t.Errorf("direct roles of a: %v", got)
	}
	if got := s.closure("a", true); !reflect.DeepEqual(got, map[string]bool{"a": true, "b": true, "c": true}) {
		t.Errorf("roles of a (a cycle through c): %v", got)
	}
	if got := s.closure("gone", true); len(got) != 0 {
		t.Errorf("roles of a missing role: %v", got)
	}
	p := &principal{name: "x", perms: map[string]permSet{"data/ks": setOf(permSelect)}}
	if !p.has(permSelect, tableResource("ks", "t")) || p.has(permModify, tableResource("ks", "t")) || p.has(permSelect, keyspaceResource("other")) {
		t.Error("permission through the keyspace")
	}
	if err := p.ensure(permModify, tableResource("ks", "t")); err == nil || err.Error() != "User x has no MODIFY permission on <table ks.t> or any of its parents" {
		t.Errorf("ensure: %v", err)
	}
}

// BenchmarkAuthorize measures the check before every statement: a
// non-superuser whose SELECT comes through a granted role, from the
// per-revision cache.
func BenchmarkAuthorize(b *testing.B) {
	ctx := context.Background()
	js, _ := manifesttest.JetStream(b)
	store, err := objectstore.NewFile(vfs.Default, b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, store, "test", manifest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer view.Close()
	reader := manifest.Role{Name: "reader", Permissions: map[string][]string{"data/ks": {"SELECT"}}}
	if err := m.CreateRole(ctx, reader); err != nil {
		b.Fatal(err)
	}
	if err := m.CreateRole(ctx, manifest.Role{Name: "alice", Login: true, MemberOf: []string{"reader"}}); err != nil {
		b.Fatal(err)
	}
	a := NewAuth(m, view, AuthOptions{BcryptCost: bcrypt.MinCost})
	if err := a.sync(ctx); err != nil {
		b.Fatal(err)
	}
	st := &ast.Select{Table: ast.TableName{Name: "t"}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := a.check("alice", "ks", st); err != nil {
				b.Fatal(err)
			}
		}
	})
}
