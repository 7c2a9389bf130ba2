package status

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// figures returns the page's figures by name (Figures); an error fails t.
func figures(t *testing.T, page string) map[string]string {
	t.Helper()
	out, err := Figures(page)
	if err != nil {
		t.Error(err)
	}
	return out
}

// fixture is an in-process Sediment after writes and a flush, with a
// process registry whose counters the test knows exactly.
type fixture struct {
	srv      *cqltest.Server
	src      Source
	want     map[string]string
	archived []Version // every archived version, newest first
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int PRIMARY KEY, v text)")
	for i := range 50 {
		cqltest.Exec(t, s, fmt.Sprintf("INSERT INTO t (k, v) VALUES (%d, 'value %d')", i, i))
	}
	srv.Flush(t, "ks", "t")
	for i := range 20 {
		cqltest.Exec(t, s, fmt.Sprintf("INSERT INTO t (k, v) VALUES (%d, 'again %d')", i, i))
	}
	srv.Flush(t, "ks", "t")

	// A member whose heartbeat the test sets, so its age is exact; it
	// reports unflushed writes of ks.t.
	tbl := srv.View.Table("ks", "t")
	unflushed := map[string]int64{ingest.UnflushedKey(storage.TableIDOf(tbl.ID)): time.Now().UnixMicro()}
	if err := srv.Manifest.Heartbeat(ctx, manifest.Member{ID: "node-a", Roles: []string{"ingest"}, Addr: "127.0.0.1:1", Unflushed: unflushed}); err != nil {
		t.Fatal(err)
	}
	var beat time.Time
	if err := srv.View.WaitFor(ctx, func(v *manifest.View) bool {
		i := slices.IndexFunc(v.Members(), func(m manifest.Member) bool { return m.ID == "node-a" })
		if i >= 0 {
			beat = v.Members()[i].Heartbeat
		}
		return i >= 0
	}); err != nil {
		t.Fatal(err)
	}

	// The process registry: a store of its own making known requests, and a
	// cache with known lookups.
	reg := prometheus.NewRegistry()
	st, err := objectstore.NewFile(vfs.Default, t.TempDir(), reg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.Put(ctx, fmt.Sprintf("o%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		rc, err := st.Get(ctx, "o0")
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	if err := st.List(ctx, "", func(objectstore.Attrs) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "o1"); err != nil {
		t.Fatal(err)
	}
	mem := cache.NewMemory(1<<20, cache.Options{Name: "blocks", Registerer: reg})
	load := func(context.Context) ([]byte, error) { return []byte("block"), nil }
	for _, k := range []string{"a", "a", "a", "b"} { // 2 misses, 2 hits
		if _, err := mem.Get(ctx, cache.Key{Object: k, Length: 5}, load); err != nil {
			t.Fatal(err)
		}
	}

	// Two samples ten minutes apart, with ten PUTs and two lookups (a hit
	// and a miss) between them.
	now := beat.Add(90 * time.Second)
	hist := NewHistory(reg, 0, 0)
	hist.Sample(now.Add(-10 * time.Minute))
	for i := range 10 {
		if _, err := st.Put(ctx, fmt.Sprintf("p%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "c"} {
		if _, err := mem.Get(ctx, cache.Key{Object: k, Length: 5}, load); err != nil {
			t.Fatal(err)
		}
	}
	hist.Sample(now)
	f := &fixture{srv: srv, src: Source{
		Process: "test", Roles: []string{"all"}, Started: now.Add(-time.Hour),
		Gatherer: reg, History: hist,
		Catalog: func() Catalog { return Catalog{View: srv.View, Store: srv.Store, Cluster: srv.Manifest.Cluster()} },
		Now:     func() time.Time { return now }, ArchiveLimit: 5,
	}}

	// The figures, worked out from the catalog by hand rather than by the
	// page's code.
	w := map[string]string{
		"members/node-a/heartbeat-age":  "90.0",
		"members/node-a/health":         "stale", // DefaultMaxAge is 30s
		"tables/ks.t/unflushed":         "yes",
		"requests/put":                  "13",
		"requests/get":                  "2",
		"requests/list":                 "1",
		"requests/delete":               "1",
		"cache/memory/blocks/hits":      "3",
		"cache/memory/blocks/misses":    "3",
		"cache/memory/blocks/hit-ratio": "50.0",
		"cost/total":                    "$0.000071", // 14 PUT/LIST × $0.005/1000 + 2 GET × $0.0004/1000 = $0.0000708
		"cost/window":                   "10m0s",
		"cost/hourly":                   "$0.000300", // 10 PUTs × $0.005/1000 in 10 minutes, × 6
		"chart/requests/requests":       "0.0166667", // 10 requests in 600 s
		"chart/cost/cost":               "0.0003",
		"chart/cache/memory":            "50",
		"chart/ops/requests":            "0", // no CQL server in this registry
		"chart/latency/p99":             "",  // no requests: no value
		"revision/schema":               srv.View.SchemaVersion().String(),
		"revision/sstables":             strconv.FormatUint(srv.View.SSTablesRevision(), 10),
		"revision/roles":                strconv.FormatUint(srv.View.RolesRevision(), 10),
	}
	n, err := srv.Manifest.RangeCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for r := range n {
		o, err := srv.Manifest.Ownership(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		w[fmt.Sprintf("ranges/%d/owner", r)] = o.Owner
	}
	ssts := srv.View.SSTables(tbl.ID)
	if len(ssts) < 2 {
		t.Fatalf("%d SSTables after two flushes", len(ssts))
	}
	var bytes, l0Bytes int64
	l0 := 0
	perRange := map[int]int{}
	for _, s := range ssts {
		bytes += s.Size
		if s.Level == 0 {
			l0++
			l0Bytes += s.Size
			perRange[manifest.RangeOf(s.MinToken, srv.View.RangeCount())]++
		} else {
			t.Fatalf("SSTable %s in level %d before any compaction", s.Key, s.Level)
		}
	}
	w["tables/ks.t/sstables"] = strconv.Itoa(len(ssts))
	w["tables/ks.t/bytes"] = strconv.FormatInt(bytes, 10)
	w["sstables/ks.t/L0/count"] = strconv.Itoa(l0)
	w["sstables/ks.t/L0/bytes"] = strconv.FormatInt(l0Bytes, 10)
	// Below the L0 threshold nothing else is due: the backlog is all of L0.
	w["backlog/ks.t/bytes"] = strconv.FormatInt(l0Bytes, 10)
	w["backlog/ks.t/l0"] = strconv.Itoa(l0)
	maxL0 := 0
	for _, n := range perRange {
		maxL0 = max(maxL0, n)
	}
	w["backlog/ks.t/max-l0"] = strconv.Itoa(maxL0)

	err = srv.Store.List(ctx, "manifest/", func(a objectstore.Attrs) error {
		p := strings.Split(a.Key, "/")
		v, err := strconv.ParseUint(p[3], 10, 64)
		if err != nil {
			return err
		}
		f.archived = append(f.archived, Version{Object: a.Key, Version: v, Archived: a.ModTime})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.archived) < 5 {
		t.Fatalf("%d archived versions", len(f.archived))
	}
	f.want = w
	return f
}

// check compares the page's figures with the fixture's.
func (f *fixture) check(t *testing.T, page string) {
	t.Helper()
	got := figures(t, page)
	for name, want := range f.want {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	// The five newest archived versions, each with its version number.
	shown := 0
	for name, val := range got {
		obj, ok := strings.CutPrefix(name, "manifest/")
		if !ok {
			continue
		}
		shown++
		i := slices.IndexFunc(f.archived, func(v Version) bool { return v.Object == obj })
		if i < 0 {
			t.Errorf("page shows %s, not in the archive", obj)
			continue
		}
		if want := strconv.FormatUint(f.archived[i].Version, 10); val != want {
			t.Errorf("%s: version %s, want %s", obj, val, want)
		}
		// Nothing older than it may be left out for it.
		for _, v := range f.archived {
			if v.Archived.After(f.archived[i].Archived) && got["manifest/"+v.Object] == "" {
				t.Errorf("page shows %s but not the newer %s", obj, v.Object)
			}
		}
	}
	if shown != 5 {
		t.Errorf("page shows %d archived versions, want 5", shown)
	}
	if !strings.Contains(page, `<meta http-equiv="refresh" content="10">`) {
		t.Error("no meta refresh")
	}
}

// get fetches url and returns its body.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	return string(body)
}

func TestHandler(t *testing.T) {
	f := newFixture(t)
	ts := httptest.NewServer(Handler(f.src))
	defer ts.Close()
	f.check(t, get(t, ts.URL+"/status"))
}
