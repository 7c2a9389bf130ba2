package manifest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// authorizationConf renders the nats-server authorization block with one
// user per role, password "<role>-pw", and the role's permissions.
func authorizationConf(t *testing.T, cluster string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("authorization {\n  users: [\n")
	for _, role := range []string{manifest.RoleFrontend, manifest.RoleIngest, manifest.RoleCompactor, manifest.RoleAdmin} {
		p, err := manifest.Permissions(cluster, role)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "    {user: %q, password: %q, permissions: {publish: {allow: %s}, subscribe: {allow: %s}}}\n", role, role+"-pw", jsonList(t, p.Publish), jsonList(t, p.Subscribe))
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// jsonList is l as a JSON list, which nats-server's configuration reads,
// with '>' unescaped.
func jsonList(t *testing.T, l []string) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// startNATS runs a nats-server, configured from a configuration file as a
// deployment is, on loopback with JetStream and the per-role users.
func startNATS(t *testing.T, cluster string) string {
	t.Helper()
	dir := t.TempDir()
	conf := fmt.Sprintf("listen: 127.0.0.1:-1\njetstream {\n  store_dir: %q\n}\n%s", filepath.Join(dir, "js"), authorizationConf(t, cluster))
	name := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(name, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(name)
	if err != nil {
		t.Fatalf("%v\n%s", err, conf)
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}

// open connects as role and opens the catalog.
func open(t *testing.T, url, cluster, role string, store objectstore.Store) (*manifest.Manifest, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo(role, role+"-pw"))
	if err != nil {
		t.Fatalf("%s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(context.Background(), js, store, cluster, manifest.Options{MaxAttempts: 2})
	if err != nil {
		t.Fatalf("%s opens the catalog: %v", role, err)
	}
	return m, js
}

// TestRolePermissions runs a nats-server with a user per role, each allowed
// Permissions: each role does its own writes and watches the catalog,
// while its writes to buckets of other roles are refused; a client without
// credentials cannot connect.
func TestRolePermissions(t *testing.T) {
	const cluster = "perm"
	url := startNATS(t, cluster)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("connected without credentials")
	}
	if nc, err := nats.Connect(url, nats.UserInfo(manifest.RoleAdmin, "guess")); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong password")
	}

	admin, _ := open(t, url, cluster, manifest.RoleAdmin, store)
	if err := admin.CreateRole(ctx, manifest.Role{Name: "app", Login: true}); err != nil {
		t.Fatal(err)
	}
	// refused runs a write the role may not make. A refused publish is
	// reported to the client asynchronously, so the write may fail by its
	// deadline rather than at once; either way the state checks at the
	// end show it did not happen.
	refused := func(t *testing.T, what string, write func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := write(ctx); err == nil {
			t.Errorf("%s: allowed", what)
		}
	}
	member := func(id string) manifest.Member {
		return manifest.Member{ID: id, Addr: "127.0.0.1:1", Roles: []string{"x"}}
	}
	superuser := func(r *manifest.Role) error { r.Superuser = true; return nil }

	t.Run("frontend", func(t *testing.T) {
		fe, _ := open(t, url, cluster, manifest.RoleFrontend, store)
		view, err := fe.Watch(ctx)
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer view.Close()
		if err := fe.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
			t.Fatalf("DDL: %v", err)
		}
		if err := fe.CreateRole(ctx, manifest.Role{Name: "by-frontend"}); err != nil {
			t.Fatalf("CREATE ROLE: %v", err)
		}
		if err := fe.Heartbeat(ctx, member("fe-cql")); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		if _, err := fe.DropSSTables(ctx, uuid.New()); err != nil {
			t.Fatalf("TRUNCATE's drop: %v", err)
		}
		refused(t, "a frontend creates the ring's ownership", func(ctx context.Context) error { return fe.InitRanges(ctx, 4) })
		refused(t, "a frontend takes a lease", func(ctx context.Context) error {
			_, err := fe.AcquireLease(ctx, "frontend-lease", "fe", time.Minute)
			return err
		})
	})
	t.Run("ingest", func(t *testing.T) {
		in, _ := open(t, url, cluster, manifest.RoleIngest, store)
		if err := in.InitRanges(ctx, 4); err != nil {
			t.Fatalf("init ranges: %v", err)
		}
		if _, err := in.Assign(ctx, 0, "node-1"); err != nil {
			t.Fatalf("claim: %v", err)
		}
		if err := in.Heartbeat(ctx, member("node-1")); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		if _, err := in.AcquireLease(ctx, "ingest-range-claims", "node-1", time.Minute); err != nil {
			t.Fatalf("lease: %v", err)
		}
		refused(t, "an ingest node makes a role superuser", func(ctx context.Context) error { return in.AlterRole(ctx, "app", superuser) })
		refused(t, "an ingest node changes the schema", func(ctx context.Context) error {
			return in.CreateKeyspace(ctx, "ks2", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true)
		})
	})
	t.Run("compactor", func(t *testing.T) {
		co, js := open(t, url, cluster, manifest.RoleCompactor, store)
		q, err := compactor.OpenQueue(ctx, js, cluster, compactor.QueueOptions{})
		if err != nil {
			t.Fatalf("queue: %v", err)
		}
		if _, err := q.Stats(ctx); err != nil {
			t.Fatalf("queue stats: %v", err)
		}
		if _, err := co.AcquireLease(ctx, "compaction-planner", "c-1", time.Minute); err != nil {
			t.Fatalf("lease: %v", err)
		}
		refused(t, "a compactor claims a range", func(ctx context.Context) error {
			_, err := co.Assign(ctx, 1, "c-1")
			return err
		})
		refused(t, "a compactor makes a role superuser", func(ctx context.Context) error { return co.AlterRole(ctx, "app", superuser) })
	})
	r, err := admin.Role(ctx, "app")
	if err != nil || r.Superuser {
		t.Fatalf("role app after the attempts: %+v %v", r, err)
	}
	if o, err := admin.Ownership(ctx, 1); !errors.Is(err, manifest.ErrNotFound) {
		t.Fatalf("range 1, claimed by a compactor: %+v %v, want unassigned", o, err)
	}
	if o, err := admin.Ownership(ctx, 0); err != nil || o.Owner != "node-1" {
		t.Fatalf("range 0, claimed by the ingest node: %+v %v", o, err)
	}
	if _, err := admin.Lease(ctx, "frontend-lease"); !errors.Is(err, manifest.ErrNotFound) {
		t.Fatalf("the frontend's lease: %v, want none", err)
	}
	if ks, err := admin.Keyspace(ctx, "ks2"); err == nil && ks != nil {
		t.Fatalf("keyspace ks2, made by an ingest node, exists")
	}
}
