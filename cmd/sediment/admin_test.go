package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// runAdmin runs `sediment admin args...` against the catalog on NATS port
// natsPort and the file bucket under dataDir.
func runAdmin(t *testing.T, natsPort int, dataDir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(slices.Clone(args), fmt.Sprintf("-manifest.embedded-port=%d", natsPort), "-data.dir="+dataDir)
	code = adminMain(context.Background(), args, &out, &errOut, false)
	return code, out.String(), errOut.String()
}

// adminJSON runs an admin subcommand with -json, which must succeed, and
// decodes its output into v.
func adminJSON(t *testing.T, natsPort int, dataDir string, v any, args ...string) {
	t.Helper()
	code, out, errOut := runAdmin(t, natsPort, dataDir, append(args, "-json")...)
	if code != 0 {
		t.Fatalf("admin %v: exit %d\n%s%s", args, code, out, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("admin %v: %v\n%s", args, err, out)
	}
}

func TestAdmin(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	p := startProcess(t, dataDir,
		"-node.heartbeat-interval=50ms",
		"-ingest.shards=1", "-ingest.ranges=2",
		"-ingest.flush-age=50ms",
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE a WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE a.kv (k int PRIMARY KEY, v text)",
		"CREATE TABLE a.empty (k int PRIMARY KEY)",
	)
	before := gathered(t, p.s.reg, "sediment_ingest_flushes_total")
	for k := range 50 {
		if err := s.Query("INSERT INTO a.kv (k, v) VALUES (?, ?)", k, fmt.Sprintf("v%d", k)).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := openManifest(t, p, dataDir)
	kv, empty := p.s.view.Table("a", "kv"), p.s.view.Table("a", "empty")
	if kv == nil || empty == nil {
		t.Fatal("tables not in the view")
	}
	var ssts []manifest.SSTable
	deadline := time.Now().Add(20 * time.Second)
	for gathered(t, p.s.reg, "sediment_ingest_flushes_total") == before || len(ssts) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no flush into both ranges within 20s: %d SSTables\n%s", len(ssts), p.log)
		}
		time.Sleep(20 * time.Millisecond)
		var err error
		if ssts, err = m.SSTables(ctx, kv.ID); err != nil {
			t.Fatal(err)
		}
	}
	// The last writes may still be in a memtable: wait until a flush age
	// passes with no flush, then take the SSTables as they stay.
	for last := -1.0; ; {
		cur := gathered(t, p.s.reg, "sediment_ingest_flushes_total")
		if cur == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flushes do not stop\n%s", p.log)
		}
		last = cur
		time.Sleep(500 * time.Millisecond)
	}
	ssts, err := m.SSTables(ctx, kv.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := p.natsPort

	t.Run("status", func(t *testing.T) {
		var st StatusReport
		adminJSON(t, n, dataDir, &st, "status")
		if st.Cluster != "sediment" || st.SchemaVersion != p.s.view.SchemaVersion() {
			t.Errorf("cluster %q schema %s, want sediment %s", st.Cluster, st.SchemaVersion, p.s.view.SchemaVersion())
		}
		i := slices.IndexFunc(st.Members, func(m MemberStatus) bool { return m.ID == p.s.ingester.NodeID() })
		if i < 0 {
			t.Fatalf("node %s not among the members %+v", p.s.ingester.NodeID(), st.Members)
		}
		if mem := st.Members[i]; !mem.Healthy || mem.Addr != p.s.ingester.RPCAddr() || !slices.Contains(mem.Roles, Ingest) || mem.HeartbeatAge > 15 {
			t.Errorf("node member %+v", mem)
		}
		var want []RangeStatus
		for r := range 2 {
			first, last := manifest.RangeBounds(r, 2)
			o, err := m.Ownership(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, RangeStatus{Range: r, FirstToken: first, LastToken: last, Owner: p.s.ingester.NodeID(), Epoch: o.Epoch})
		}
		if !slices.Equal(st.Ranges, want) {
			t.Errorf("ranges %+v, want %+v", st.Ranges, want)
		}
		code, out, _ := runAdmin(t, n, dataDir, "status")
		if code != 0 || !strings.Contains(out, "schema version "+st.SchemaVersion.String()) || !strings.Contains(out, p.s.ingester.NodeID()) || !strings.Contains(out, "healthy") {
			t.Errorf("text status (exit %d):\n%s", code, out)
		}
	})

	var tables TablesReport
	t.Run("tables", func(t *testing.T) {
		adminJSON(t, n, dataDir, &tables, "tables")
		var bytes int64
		for _, s := range ssts {
			bytes += s.Size
		}
		want := []TableStatus{
			{Keyspace: "a", Table: "empty", ID: empty.ID},
			{Keyspace: "a", Table: "kv", ID: kv.ID, SSTables: len(ssts), Bytes: bytes},
		}
		// Other tests' keyspaces do not exist here, but system tables
		// might: keep keyspace a.
		got := slices.DeleteFunc(slices.Clone(tables.Tables), func(t TableStatus) bool { return t.Keyspace != "a" })
		if !slices.Equal(got, want) {
			t.Errorf("tables %+v, want %+v", got, want)
		}
		code, out, _ := runAdmin(t, n, dataDir, "tables")
		if code != 0 || !strings.Contains(out, kv.ID.String()) || !strings.HasPrefix(out, "KEYSPACE  TABLE") {
			t.Errorf("text tables (exit %d):\n%s", code, out)
		}
	})

	t.Run("sstables", func(t *testing.T) {
		var rep SSTablesReport
		adminJSON(t, n, dataDir, &rep, "sstables", "-table", "a.kv")
		if len(rep.Tables) != 1 || rep.Tables[0].ID != kv.ID {
			t.Fatalf("sstables of %+v, want a.kv only", rep.Tables)
		}
		var got []manifest.SSTable
		for i, g := range rep.Tables[0].Groups {
			if g.Level != 0 || g.Range != i || g.Count != len(g.SSTables) {
				t.Errorf("group %d: level %d range %d count %d of %d", i, g.Level, g.Range, g.Count, len(g.SSTables))
			}
			var bytes int64
			for _, s := range g.SSTables {
				bytes += s.Size
				if manifest.RangeOf(s.MinToken, 2) != g.Range || manifest.RangeOf(s.MaxToken, 2) != g.Range {
					t.Errorf("SSTable %s tokens %d..%d outside range %d", s.Key, s.MinToken, s.MaxToken, g.Range)
				}
			}
			if bytes != g.Bytes {
				t.Errorf("group %d: %d bytes, SSTables sum to %d", i, g.Bytes, bytes)
			}
			got = append(got, g.SSTables...)
		}
		key := func(s manifest.SSTable) string { return s.Key }
		if gk, wk := mapKeys(got, key), mapKeys(ssts, key); !slices.Equal(gk, wk) {
			t.Errorf("SSTables %v, want %v", gk, wk)
		}
		if code, _, errOut := runAdmin(t, n, dataDir, "sstables", "-table", "a.nope"); code != 1 || !strings.Contains(errOut, `no table "a.nope"`) {
			t.Errorf("unknown table: exit %d, %s", code, errOut)
		}
		code, out, _ := runAdmin(t, n, dataDir, "sstables")
		if code != 0 || !strings.Contains(out, "a.kv ("+kv.ID.String()+")") || !strings.Contains(out, ssts[0].Key) || !strings.Contains(out, "level 0, range 0:") {
			t.Errorf("text sstables (exit %d):\n%s", code, out)
		}
	})

	t.Run("manifest", func(t *testing.T) {
		var hist HistoryReport
		adminJSON(t, n, dataDir, &hist, "manifest", "history", "-limit=0")
		i := slices.IndexFunc(hist.Versions, func(v ArchivedVersion) bool { return v.Bucket == "sediment_schema" && v.Key == "ks.a" })
		if i < 0 {
			t.Fatalf("no version of keyspace a in %+v", hist.Versions)
		}
		// Newest first: keyspace a's last version (two tables added)
		// comes before its first.
		v := hist.Versions[i]
		if v.Version < 3 {
			t.Errorf("newest version of ks.a is %d, want at least 3", v.Version)
		}
		var limited HistoryReport
		adminJSON(t, n, dataDir, &limited, "manifest", "history", "-limit=2")
		if len(limited.Versions) != 2 || limited.Versions[0] != hist.Versions[0] {
			t.Errorf("-limit=2 gave %+v", limited.Versions)
		}
		var show ShowReport
		adminJSON(t, n, dataDir, &show, "manifest", "show", fmt.Sprintf("sediment_schema/ks.a/%d", v.Version))
		if show.ArchivedVersion != v || show.Deleted {
			t.Errorf("show %+v, want %+v", show.ArchivedVersion, v)
		}
		var ks manifest.Keyspace
		if err := json.Unmarshal(show.Data, &ks); err != nil || ks.Name != "a" || ks.Tables["kv"] == nil || ks.Tables["kv"].ID != kv.ID {
			t.Errorf("shown keyspace %+v: %v", ks, err)
		}
		code, out, _ := runAdmin(t, n, dataDir, "manifest", "show", v.Object)
		if code != 0 || !strings.Contains(out, "version  "+fmt.Sprint(v.Version)) || !strings.Contains(out, `"name": "a"`) {
			t.Errorf("text show (exit %d):\n%s", code, out)
		}
		if code, _, errOut := runAdmin(t, n, dataDir, "manifest", "show", "sediment_schema/ks.a/999999"); code != 1 || !strings.Contains(errOut, "999999") {
			t.Errorf("show of a missing version: exit %d, %s", code, errOut)
		}
		if code, _, _ := runAdmin(t, n, dataDir, "manifest", "show", "nonsense"); code != 1 {
			t.Errorf("show nonsense: exit %d", code)
		}
	})

	t.Run("verify", func(t *testing.T) {
		var rep VerifyReport
		adminJSON(t, n, dataDir, &rep, "verify")
		if rep.SSTables != len(ssts) || len(rep.Problems) != 0 || rep.Bytes == 0 {
			t.Fatalf("verify of good data: %+v", rep)
		}
		var out, errOut bytes.Buffer
		args := []string{"verify", fmt.Sprintf("-manifest.embedded-port=%d", n), "-data.dir=" + dataDir}
		if code := adminMain(ctx, args, &out, &errOut, true); code != 0 {
			t.Fatalf("verify: exit %d\n%s%s", code, &out, &errOut)
		}
		if want := fmt.Sprintf("\rverify: %d/%d SSTables", len(ssts), len(ssts)); !strings.Contains(errOut.String(), want) {
			t.Errorf("progress %q does not show %q", errOut.String(), want)
		}

		// Corrupt one SSTable's bytes and delete another.
		bad, gone := ssts[0].Key, ssts[1].Key
		path := filepath.Join(dataDir, "objects", filepath.FromSlash(bad))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := 8; i < len(b)/2; i++ {
			b[i] ^= 0x5a
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dataDir, "objects", filepath.FromSlash(gone))); err != nil {
			t.Fatal(err)
		}
		code, text, _ := runAdmin(t, n, dataDir, "verify", "-json")
		if code != 1 {
			t.Fatalf("verify of damaged data: exit %d\n%s", code, text)
		}
		rep = VerifyReport{}
		if err := json.Unmarshal([]byte(text), &rep); err != nil {
			t.Fatal(err)
		}
		objs := mapKeys(rep.Problems, func(p VerifyProblem) string { return p.Object })
		if want := mapKeys([]string{bad, gone}, func(s string) string { return s }); !slices.Equal(objs, want) {
			t.Fatalf("problems %+v, want %v", rep.Problems, want)
		}
		for _, p := range rep.Problems {
			if p.Table != "a.kv" || p.Error == "" {
				t.Errorf("problem %+v", p)
			}
		}
		code, text, _ = runAdmin(t, n, dataDir, "verify")
		if code != 1 || !strings.Contains(text, "2 problems") || !strings.Contains(text, "a.kv "+bad+": ") {
			t.Errorf("text verify (exit %d):\n%s", code, text)
		}
	})

	t.Run("restore", func(t *testing.T) {
		if code, _, errOut := runAdmin(t, n, dataDir, "restore"); code != 1 || !strings.Contains(errOut, "pass -yes") {
			t.Fatalf("restore over live state: exit %d, %s", code, errOut)
		}
		p.stop(t)
		// A new, empty NATS: the catalog comes back from the bucket.
		embDir := t.TempDir()
		emb, err := manifest.StartEmbedded(embDir, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer emb.Shutdown()
		n2 := emb.Port()
		var rep RestoreReport
		adminJSON(t, n2, dataDir, &rep, "restore", "-manifest.embedded-dir="+embDir)
		if rep.Buckets == 0 || rep.Keys == 0 || rep.Present != 0 {
			t.Fatalf("restore: %+v", rep)
		}
		var after TablesReport
		adminJSON(t, n2, dataDir, &after, "tables", "-manifest.embedded-dir="+embDir)
		if !slices.Equal(after.Tables, tables.Tables) {
			t.Errorf("tables after restore %+v, want %+v", after.Tables, tables.Tables)
		}
		if code, _, errOut := runAdmin(t, n2, dataDir, "restore", "-manifest.embedded-dir="+embDir); code != 1 || !strings.Contains(errOut, "pass -yes") {
			t.Fatalf("second restore: exit %d, %s", code, errOut)
		}
		var again RestoreReport
		adminJSON(t, n2, dataDir, &again, "restore", "-yes", "-manifest.embedded-dir="+embDir)
		if again.Keys != 0 || again.Present != rep.Keys {
			t.Errorf("restore -yes over the restored state: %+v, want %d present", again, rep.Keys)
		}
	})
}

// mapKeys returns the sorted keys of xs.
func mapKeys[T any](xs []T, key func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, key(x))
	}
	slices.Sort(out)
	return out
}

func TestAdminUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage: sediment admin"},
		{[]string{"-help"}, 0, "Subcommands:"},
		{[]string{"frobnicate"}, 2, `unknown subcommand "frobnicate"`},
		{[]string{"manifest"}, 2, "manifest needs 'history' or 'show'"},
		{[]string{"status", "-no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"status", "extra"}, 1, `unexpected argument "extra"`},
		{[]string{"manifest", "history", "-limit=-1"}, 2, "-limit -1 is negative"},
		{[]string{"compact", "-timeout=-1s"}, 2, "-timeout -1s is negative"},
		{[]string{"compact", "ks.t"}, 1, `unexpected argument "ks.t"`},
		{[]string{"manifest", "show"}, 1, "want one archive object"},
		{[]string{"status", "-manifest.nats-url=nats://127.0.0.1:1", "-manifest.connect-timeout=1s"}, 1, "nats://127.0.0.1:1"},
	} {
		var out, errOut bytes.Buffer
		code := adminMain(context.Background(), c.args, &out, &errOut, false)
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("admin %q: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut.String(), c.code, c.want)
		}
	}
}

func TestArchiveObject(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sediment_schema/ks.a/3", "manifest/sediment_schema/ks.a/00000000000000000003"},
		{"manifest/sediment_schema/ks.a/00000000000000000003", "manifest/sediment_schema/ks.a/00000000000000000003"},
		{"sediment_schema/ks.a/0", ""},
		{"sediment_schema/ks.a", ""},
		{"a/b/c/4", ""},
		{"a/b/x", ""},
	} {
		got, err := archiveObject(c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("archiveObject(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzArchiveObject checks that any argument either fails cleanly or names
// an object that parses back to itself.
func FuzzArchiveObject(f *testing.F) {
	f.Add("sediment_schema/ks.a/3")
	f.Add("manifest/c_sstables/t.x.00001/00000000000000000012")
	f.Add("manifest//x/1")
	f.Add("a/b/18446744073709551615")
	f.Fuzz(func(t *testing.T, in string) {
		obj, err := archiveObject(in)
		if err != nil {
			return
		}
		v, err := parseArchived(objectstore.Attrs{Key: obj})
		if err != nil {
			// Empty bucket or key names parse as no archive object.
			if strings.Contains(obj, "//") || strings.HasPrefix(obj, adminArchivePrefix+"/") {
				return
			}
			t.Fatalf("archiveObject(%q) = %q, which does not parse: %v", in, obj, err)
		}
		if again, err := archiveObject(v.Object); err != nil || again != obj {
			t.Fatalf("%q: round trip gave %q, %v", obj, again, err)
		}
	})
}

// TestAdminFlushCompact drives `admin flush` and `admin compact` against
// an all-in-one process whose memtables never flush by age: every SSTable
// comes from an admin flush.
func TestAdminFlushCompact(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	p := startProcess(t, dataDir,
		"-node.heartbeat-interval=50ms",
		"-ingest.shards=1", "-ingest.ranges=2",
		"-ingest.flush-age=1h",
		"-compactor.workers=2",
		"-compactor.plan-interval=100ms",
		"-compactor.ack-wait=5s",
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE f WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE f.kv (k int PRIMARY KEY, v text)",
	)
	m, _ := openManifest(t, p, dataDir)
	kv := p.s.view.Table("f", "kv")
	if kv == nil {
		t.Fatal("table f.kv not in the view")
	}
	n := p.natsPort
	sstCount := func() int {
		t.Helper()
		ssts, err := m.SSTables(ctx, kv.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(ssts)
	}
	const rows = 40
	write := func(round int) {
		t.Helper()
		for k := range rows {
			if err := s.Query("INSERT INTO f.kv (k, v) VALUES (?, ?)", k, fmt.Sprintf("v%d-%d", k, round)).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}

	write(0)
	if got := sstCount(); got != 0 {
		t.Fatalf("%d SSTables before any flush", got)
	}
	flushes := gathered(t, p.s.reg, "sediment_ingest_flushes_total")
	var rep FlushReport
	adminJSON(t, n, dataDir, &rep, "flush")
	if len(rep.Nodes) != 1 || rep.Nodes[0].ID != p.s.ingester.NodeID() || rep.Nodes[0].Addr != p.s.ingester.RPCAddr() || !rep.Nodes[0].OK || rep.Nodes[0].Error != "" || len(rep.Skipped) != 0 {
		t.Fatalf("flush report %+v", rep)
	}
	// Flush returns once the flush is committed: no waiting here.
	if got := sstCount(); got != 2 {
		t.Fatalf("%d SSTables after a flush of rows in both ranges, want 2", got)
	}
	if gathered(t, p.s.reg, "sediment_ingest_flushes_total") == flushes {
		t.Fatal("no flush counted")
	}

	// A member that does not answer fails the flush, the others still
	// flush, and a stale one, whose heartbeat an hour-late clock stamps,
	// is skipped.
	dead := manifest.Member{ID: "dead", Roles: []string{Ingest}, Addr: closedAddr(t), Shards: 1}
	if err := m.Heartbeat(ctx, dead); err != nil {
		t.Fatal(err)
	}
	_, js := openManifest(t, p, dataDir)
	store, err := objectstore.NewFile(vfs.Default, filepath.Join(dataDir, "objects"), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	late, err := manifest.Open(ctx, js, store, "sediment", manifest.Options{Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := late.Heartbeat(ctx, manifest.Member{ID: "stale", Roles: []string{Ingest}, Addr: closedAddr(t), Shards: 1}); err != nil {
		t.Fatal(err)
	}
	write(1)
	var out, errOut bytes.Buffer
	args := []string{"flush", "-json", "-timeout=10s", fmt.Sprintf("-manifest.embedded-port=%d", n), "-data.dir=" + dataDir}
	if code := adminMain(ctx, args, &out, &errOut, true); code != 1 {
		t.Fatalf("flush with a dead member: exit %d\n%s%s", code, &out, &errOut)
	}
	rep = FlushReport{}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 2 || !slices.Equal(rep.Skipped, []string{"stale"}) {
		t.Fatalf("flush report %+v, want two nodes and stale skipped", rep)
	}
	for _, nf := range rep.Nodes {
		if ok := nf.ID != "dead"; nf.OK != ok || (nf.Error == "") != ok {
			t.Errorf("node %+v", nf)
		}
	}
	if !strings.Contains(errOut.String(), "\rflush: 2/2 nodes done, 1 failed") {
		t.Errorf("progress %q", errOut.String())
	}
	if got := sstCount(); got != 4 {
		t.Fatalf("%d SSTables after the second flush, want 4", got)
	}
	if code, _, errOut := runAdmin(t, n, dataDir, "flush", "-max-heartbeat-age=1ns"); code != 1 || !strings.Contains(errOut, "no live ingest node") {
		t.Errorf("flush with only stale members: exit %d, %s", code, errOut)
	}
	for _, id := range []string{"dead", "stale"} {
		if err := m.Leave(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	code, text, _ := runAdmin(t, n, dataDir, "flush")
	if code != 0 || !strings.Contains(text, p.s.ingester.RPCAddr()) || !strings.Contains(text, "ok") {
		t.Errorf("text flush (exit %d):\n%s", code, text)
	}
	if code, _, errOut := runAdmin(t, n, dataDir, "flush", "f.kv"); code != 1 || !strings.Contains(errOut, "whole nodes") {
		t.Errorf("flush of a table: exit %d, %s", code, errOut)
	}

	// A third flush leaves three L0 SSTables per range, below the
	// strategy's threshold of four: only a major compaction merges them.
	write(2)
	adminJSON(t, n, dataDir, &rep, "flush")
	ssts, err := m.SSTables(ctx, kv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var beforeBytes int64
	for _, sst := range ssts {
		beforeBytes += sst.Size
		if sst.Level != 0 {
			t.Fatalf("SSTable %s in L%d before the major compaction", sst.Key, sst.Level)
		}
	}
	if len(ssts) != 6 {
		t.Fatalf("%d SSTables before the major compaction, want 6", len(ssts))
	}
	out.Reset()
	errOut.Reset()
	args = []string{"compact", "-table", "f.kv", "-json", "-timeout=60s", fmt.Sprintf("-manifest.embedded-port=%d", n), "-data.dir=" + dataDir}
	if code := adminMain(ctx, args, &out, &errOut, true); code != 0 {
		t.Fatalf("compact: exit %d\n%s%s\n%s", code, &out, &errOut, p.log)
	}
	var crep CompactReport
	if err := json.Unmarshal(out.Bytes(), &crep); err != nil {
		t.Fatal(err)
	}
	if len(crep.Tables) != 1 {
		t.Fatalf("compact report %+v", crep)
	}
	tc := crep.Tables[0]
	if tc.ID != kv.ID || tc.Before != (SSTableTotals{6, beforeBytes}) || tc.After == nil || tc.After.SSTables != 2 || tc.DoneAt.IsZero() {
		t.Fatalf("compaction of f.kv: %+v (after %+v)", tc, tc.After)
	}
	if !strings.Contains(errOut.String(), "\rcompact: 1/1 tables done, 2/2 ranges compacted, 0 SSTables left") {
		t.Errorf("progress %q", errOut.String())
	}
	req, err := m.CompactionRequest(ctx, kv.ID)
	if err != nil || req.ID != tc.Request || !req.Done() {
		t.Fatalf("request %+v, %v; want %s done", req, err, tc.Request)
	}
	// Each range holds its data in one level, L0 empty.
	ssts, err = m.SSTables(ctx, kv.ID)
	if err != nil {
		t.Fatal(err)
	}
	byRange := map[int][]manifest.SSTable{}
	for _, sst := range ssts {
		byRange[manifest.RangeOf(sst.MinToken, 2)] = append(byRange[manifest.RangeOf(sst.MinToken, 2)], sst)
	}
	for r := range 2 {
		ts := byRange[r]
		if len(ts) == 0 {
			t.Fatalf("range %d holds nothing after the compaction", r)
		}
		for _, sst := range ts {
			if sst.Level == 0 || sst.Level != ts[0].Level {
				t.Errorf("range %d: SSTable %s in L%d after the major compaction (first in L%d)", r, sst.Key, sst.Level, ts[0].Level)
			}
		}
	}
	for k := range rows {
		var v string
		if err := s.Query("SELECT v FROM f.kv WHERE k = ?", k).Scan(&v); err != nil || v != fmt.Sprintf("v%d-2", k) {
			t.Fatalf("SELECT k=%d: %q %v", k, v, err)
		}
	}
	if got := s.Query("SELECT k FROM f.kv").Iter().NumRows(); got != rows {
		t.Fatalf("%d rows, want %d", got, rows)
	}

	// Every table, without waiting: the requests are written, and the
	// planner finishes them.
	execCQL(t, s, "CREATE TABLE f.empty (k int PRIMARY KEY)")
	var nowait CompactReport
	adminJSON(t, n, dataDir, &nowait, "compact", "-wait=false")
	if len(nowait.Tables) != 2 || nowait.Tables[0].Table != "empty" || nowait.Tables[1].Table != "kv" {
		t.Fatalf("compact of every table: %+v", nowait)
	}
	for _, tc := range nowait.Tables {
		if tc.After != nil || !tc.DoneAt.IsZero() || tc.Request == uuid.Nil {
			t.Errorf("request without waiting: %+v", tc)
		}
	}
	code, text, _ = runAdmin(t, n, dataDir, "compact", "-timeout=60s")
	if code != 0 || !strings.Contains(text, "f.kv") || !strings.Contains(text, "f.empty") || strings.Count(text, "done") != 2 {
		t.Errorf("text compact (exit %d):\n%s", code, text)
	}
	if code, _, errOut := runAdmin(t, n, dataDir, "compact", "-table", "f.kv", "-timeout=1ns"); code != 1 || !strings.Contains(errOut, "deadline exceeded") {
		t.Errorf("compact that gives up: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runAdmin(t, n, dataDir, "compact", "-table", "f.nope"); code != 1 || !strings.Contains(errOut, `no table "f.nope"`) {
		t.Errorf("compact of an unknown table: exit %d, %s", code, errOut)
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
