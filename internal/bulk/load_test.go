package bulk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/google/uuid"
	"github.com/grafana/dskit/services"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/internal/bulk"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

var vfsDefault = vfs.Default

// minioStore returns a store in a new bucket of a MinIO server.
func minioStore(t *testing.T, m *testserver.MinIOServer) objectstore.Store { return minioStoreB(t, m) }

func minioStoreB(t testing.TB, m *testserver.MinIOServer) objectstore.Store {
	cfg := objectstore.DefaultConfig()
	cfg.Backend = objectstore.BackendMinIO
	cfg.Endpoint = m.Endpoint
	cfg.Insecure = true
	cfg.PathStyle = true
	cfg.Region = "us-east-1"
	cfg.AccessKeyID = m.AccessKey
	cfg.SecretAccessKey = m.SecretKey
	cfg.Bucket = m.NewBucket(t)
	cfg.PartSize = 5 << 20
	cfg.Timeout = 30 * time.Second
	s, err := objectstore.New(t.Context(), cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type env struct {
	srv  *cqltest.Server
	sess *gocql.Session
}

func newEnv(t *testing.T, store objectstore.Store) *env {
	srv := cqltest.Start(t, cqltest.Options{Store: store, Ranges: 8})
	sess := srv.Session(t, "ks")
	cqltest.Exec(t, sess, `CREATE TABLE t (
		id int, c text, name text, n bigint, at timestamp, tags set<int>, attrs map<text, int>, ok boolean, data blob,
		PRIMARY KEY (id, c))`)
	if err := srv.View.WaitFor(t.Context(), func(v *manifest.View) bool { return v.Table("ks", "t") != nil }); err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, sess: sess}
}

func (e *env) deps() bulk.Deps {
	return bulk.Deps{Manifest: e.srv.Manifest, View: e.srv.View, Store: e.srv.Store, FS: vfs.Default}
}

func writeFile(t *testing.T, name, text string) bulk.Input {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ins, err := bulk.Inputs(t.Context(), nil, []string{p})
	if err != nil {
		t.Fatal(err)
	}
	return ins[0]
}

// goodRows returns n CSV records of table t, after a header.
func goodCSV(n int) string {
	var b strings.Builder
	b.WriteString("id,c,name,n,at,tags,attrs,ok,data\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,c%d,\"name, %d \"\"q\"\"\",%d,2024-01-02 03:04:05Z,\"[%d,%d]\",\"{\"\"k\"\": %d}\",%t,%x\n",
			i, i%3, i, int64(i)*1000, i, i+1, i, i%2 == 0, []byte{byte(i), 1})
	}
	return b.String()
}

func readRejects(t *testing.T, buf *bytes.Buffer) []bulk.Reject {
	var out []bulk.Reject
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var r bulk.Reject
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reject %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func count(t *testing.T, s *gocql.Session) int {
	var n int
	if err := s.Query("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLoadMinIO(t *testing.T) {
	ms := testserver.MinIO(t)
	t.Run("CSV", func(t *testing.T) { testLoadCSV(t, minioStore(t, ms)) })
	t.Run("JSON", func(t *testing.T) { testLoadJSON(t, minioStore(t, ms)) })
	t.Run("TooManyErrors", func(t *testing.T) { testTooManyErrors(t, minioStore(t, ms)) })
	t.Run("Interrupted", func(t *testing.T) { testInterrupted(t, minioStore(t, ms)) })
	t.Run("Unload", func(t *testing.T) { testUnload(t, minioStore(t, ms)) })
	t.Run("RacingCompaction", func(t *testing.T) { testRacingCompaction(t, minioStore(t, ms)) })
}

func testLoadCSV(t *testing.T, store objectstore.Store) {
	e := newEnv(t, store)
	const n = 3000
	bad := []struct{ line, reason string }{
		{`9001,c,"unclosed, 1,2024-01-02,"[1]","{}",true,00` + "\n", ""},
		{`9002,c,x,notanumber,2024-01-02,"[1]","{}",true,00` + "\n", "column n"},
		{"9003,c,\xff\xfe,1,2024-01-02,\"[1]\",\"{}\",true,00\n", "invalid UTF-8"},
		{"9004,c," + strings.Repeat("x", 5000) + ",1,2024-01-02,\"[1]\",\"{}\",true,00\n", "longer than"},
		{`9005,c,x,1` + "\n", "4 fields"},
		{`9006,c,x"y,1,2024-01-02,"[1]","{}",true,00` + "\n", "quote"},
		{`9007,c,"x"y,1,2024-01-02,"[1]","{}",true,00` + "\n", "after a closing quote"},
	}
	text := goodCSV(n)
	// The bad records go in the middle, each on a known line.
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	wantLine := map[int]string{}
	for i, l := range lines[:n/2+1] {
		_ = i
		b.WriteString(l)
	}
	line := n/2 + 2
	for _, r := range bad {
		wantLine[line] = r.reason
		b.WriteString(r.line)
		line++
	}
	for _, l := range lines[n/2+1:] {
		b.WriteString(l)
	}
	// The unclosed quote swallows the rest of its record's line only: the
	// reader resynchronises at the next line, so nothing after it is lost.
	var rejects bytes.Buffer
	st, err := bulk.Load(t.Context(), e.deps(), bulk.Options{
		Keyspace: "ks", Table: "t", Header: true, WriteTime: 1_700_000_000_000_000, TTL: 86400,
		MaxErrors: 100, CSV: bulk.CSVOptions{MaxRecordBytes: 4096}, Memory: 64 << 10, Workers: 2,
		Rejects: bulk.NewRejects(&rejects),
	}, []bulk.Input{writeFile(t, "in.csv", b.String())})
	if err != nil {
		t.Fatal(err)
	}
	rj := readRejects(t, &rejects)
	t.Logf("stats %+v", st) // WriteSeconds: the merge and upload part
	for _, r := range rj {
		t.Logf("reject %s:%d %s", r.Source, r.Line, r.Reason)
	}
	if st.State != manifest.LoadCommitted || st.Rows != n || st.Rejected != int64(len(bad)) || len(rj) != len(bad) {
		t.Fatalf("stats %+v, %d rejects", st, len(rj))
	}
	for _, r := range rj {
		want, ok := wantLine[r.Line]
		if !ok || !strings.Contains(r.Reason, want) {
			t.Errorf("reject at line %d: %q, want a reason with %q", r.Line, r.Reason, want)
		}
	}
	if st.SSTables == 0 || st.SSTables > 8 {
		t.Errorf("%d SSTables for 8 ranges", st.SSTables)
	}
	if got := count(t, e.sess); got != n {
		t.Fatalf("count %d, want %d", got, n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		var (
			name  string
			num   int64
			at    time.Time
			tags  []int
			attrs map[string]int
			ok    bool
			data  []byte
			wt    int64
			ttl   int
		)
		err := e.sess.Query(`SELECT name, n, at, tags, attrs, ok, data, writetime(name), ttl(name) FROM t WHERE id = ? AND c = ?`,
			i, fmt.Sprintf("c%d", i%3)).Scan(&name, &num, &at, &tags, &attrs, &ok, &data, &wt, &ttl)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if name != fmt.Sprintf(`name, %d "q"`, i) || num != int64(i)*1000 || !at.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) ||
			!slices.Equal(tags, []int{i, i + 1}) || attrs["k"] != i || ok != (i%2 == 0) || !bytes.Equal(data, []byte{byte(i), 1}) {
			t.Errorf("row %d: %q %d %v %v %v %v %x", i, name, num, at, tags, attrs, ok, data)
		}
		if wt != 1_700_000_000_000_000 || ttl <= 86000 || ttl > 86400 {
			t.Errorf("row %d: writetime %d, ttl %d", i, wt, ttl)
		}
	}
}

func testLoadJSON(t *testing.T, store objectstore.Store) {
	e := newEnv(t, store)
	var b strings.Builder
	const n = 500
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "c": "j", "name": "n%d", "tags": [%d], "attrs": {"a": 1}, "at": "2024-01-02 03:04:05Z", "ok": true}`+"\n", i, i, i)
		if i == 100 {
			b.WriteString("\n") // blank lines are skipped
			b.WriteString(`{"id": 1000, "c": "j", "name": 5}` + "\n")
			b.WriteString(`{"id": 1001, "c": "j", "nope": 5}` + "\n")
			b.WriteString(`{"id": 1002, "c": ` + "\n")
			b.WriteString(`{"c": "j", "name": "no key"}` + "\n")
		}
	}
	var rejects bytes.Buffer
	st, err := bulk.Load(t.Context(), e.deps(), bulk.Options{
		Keyspace: "ks", Table: "t", Format: "json", MaxErrors: 10, Rejects: bulk.NewRejects(&rejects),
	}, []bulk.Input{writeFile(t, "in.json", b.String())})
	rj := readRejects(t, &rejects)
	if err != nil {
		t.Fatal(err, rj[:3])
	}
	// The reader rejects what it cannot parse at once, workers the rest.
	slices.SortFunc(rj, func(a, b bulk.Reject) int { return a.Line - b.Line })
	if st.Rows != n || len(rj) != 4 {
		t.Fatalf("stats %+v, rejects %+v", st, rj)
	}
	for i, r := range rj {
		if r.Line != 103+i || r.Reason == "" {
			t.Errorf("reject %+v, want line %d", r, 103+i)
		}
	}
	if got := count(t, e.sess); got != n {
		t.Fatalf("count %d", got)
	}
	var name string
	var tags []int
	var ttl *int
	if err := e.sess.Query(`SELECT name, tags, ttl(name) FROM t WHERE id = 7 AND c = 'j'`).Scan(&name, &tags, &ttl); err != nil || name != "n7" || !slices.Equal(tags, []int{7}) {
		t.Fatalf("row 7: %q %v %v", name, tags, err)
	}
	if ttl != nil {
		t.Errorf("a load without a TTL wrote one: %d", *ttl)
	}
	// Without a TTL of its own, a load takes the table's default.
	cqltest.Exec(t, e.sess, `CREATE TABLE d (id int PRIMARY KEY, v text) WITH default_time_to_live = 1000`)
	if err := e.srv.View.WaitFor(t.Context(), func(v *manifest.View) bool { return v.Table("ks", "d") != nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := bulk.Load(t.Context(), e.deps(), bulk.Options{Keyspace: "ks", Table: "d", Format: "json"},
		[]bulk.Input{writeFile(t, "d.json", `{"id": 1, "v": "x"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.sess.Query(`SELECT ttl(v) FROM d WHERE id = 1`).Scan(&ttl); err != nil || ttl == nil || *ttl <= 0 || *ttl > 1000 {
		t.Fatalf("ttl of a row loaded into a table with a default TTL: %v, %v", ttl, err)
	}
}

func testTooManyErrors(t *testing.T, store objectstore.Store) {
	e := newEnv(t, store)
	text := goodCSV(100) + "x,c\ny,c\nz,c\n"
	var rejects bytes.Buffer
	st, err := bulk.Load(t.Context(), e.deps(), bulk.Options{
		Keyspace: "ks", Table: "t", Header: true, MaxErrors: 2, Rejects: bulk.NewRejects(&rejects),
	}, []bulk.Input{writeFile(t, "in.csv", text)})
	if !errors.Is(err, bulk.ErrTooManyErrors) || st.State != manifest.LoadAbandoned {
		t.Fatalf("load: %+v, %v", st, err)
	}
	if got := count(t, e.sess); got != 0 {
		t.Fatalf("an abandoned load shows %d rows", got)
	}
	if l, err := e.srv.Manifest.GetLoad(t.Context(), st.Load); err != nil || l.State != manifest.LoadAbandoned {
		t.Fatalf("record %+v, %v", l, err)
	}
}

// failingStore fails the uploads of loaded SSTables after the first ok.
type failingStore struct {
	objectstore.Store
	ok atomic.Int64
}

var errInjected = errors.New("injected upload failure")

func (s *failingStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	if strings.HasPrefix(key, "sst/load/") && s.ok.Add(-1) < 0 {
		return nil, errInjected
	}
	return s.Store.NewWriter(ctx, key)
}

// An interrupted load shows nothing; resumed, it writes only the ranges it
// had not and then shows everything; abandoned, its parts become garbage.
func testInterrupted(t *testing.T, store objectstore.Store) {
	e := newEnv(t, store)
	const n = 2000
	in := writeFile(t, "in.csv", goodCSV(n))
	opts := bulk.Options{Keyspace: "ks", Table: "t", Header: true}
	fs := &failingStore{Store: store}
	fs.ok.Store(3)
	d := e.deps()
	d.Store = fs
	st, err := bulk.Load(t.Context(), d, opts, []bulk.Input{in})
	if !errors.Is(err, errInjected) || st.State != manifest.LoadPending || st.SSTables != 3 {
		t.Fatalf("interrupted load: %+v, %v", st, err)
	}
	if got := count(t, e.sess); got != 0 {
		t.Fatalf("a pending load shows %d rows", got)
	}
	opts.Resume = st.Load
	st2, err := bulk.Load(t.Context(), e.deps(), opts, []bulk.Input{in})
	if err != nil || st2.State != manifest.LoadCommitted || st2.Skipped != 3 || st2.SSTables+3 != 8 {
		t.Fatalf("resumed load: %+v, %v", st2, err)
	}
	if got := count(t, e.sess); got != n {
		t.Fatalf("count %d, want %d", got, n)
	}

	// A second interrupted load, abandoned.
	fs.ok.Store(2)
	opts.Resume = uuid.Nil
	st3, err := bulk.Load(t.Context(), d, opts, []bulk.Input{writeFile(t, "more.csv", strings.Replace(strings.ReplaceAll(goodCSV(n), ",c", ",d"), "id,d,", "id,c,", 1))})
	if !errors.Is(err, errInjected) {
		t.Fatalf("second load: %+v, %v", st3, err)
	}
	parts, err := e.srv.Manifest.LoadParts(t.Context(), st3.Load)
	if err != nil || len(parts) != 2 {
		t.Fatalf("parts %v, %v", parts, err)
	}
	if err := e.srv.Manifest.AbandonLoad(t.Context(), st3.Load); err != nil {
		t.Fatal(err)
	}
	gs, err := e.srv.Manifest.Garbage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var garbage []string
	for _, g := range gs {
		garbage = append(garbage, g.Key)
	}
	for _, ps := range parts {
		for _, p := range ps {
			if !slices.Contains(garbage, p.Key) {
				t.Errorf("abandoned part %s is not garbage (%v)", p.Key, garbage)
			}
		}
	}
	if got := count(t, e.sess); got != n {
		t.Fatalf("count %d after the abandoned load, want %d", got, n)
	}
}

// waitCompacted asks for a major compaction of the table and waits until
// the planner finds every range compacted.
func waitCompacted(t *testing.T, e *env) {
	t.Helper()
	tbl := e.srv.View.Table("ks", "t")
	req, err := e.srv.Manifest.RequestCompaction(t.Context(), tbl.ID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cur, err := e.srv.Manifest.CompactionRequest(t.Context(), tbl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.ID == req.ID && cur.Done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("compaction request %+v not done", cur)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A load whose SSTables are written while compaction merges the table's
// flushed SSTables, and while more flushes come, loses nothing, and
// neither do the compactions that merge its SSTables afterwards.
func testRacingCompaction(t *testing.T, store objectstore.Store) {
	e := newEnv(t, store)
	ctx := t.Context()
	var cc compactor.Config
	var gcc gc.Config
	fs := flag.NewFlagSet("compactor", flag.ContinueOnError)
	cc.RegisterFlags(fs)
	gcc.RegisterFlags(fs)
	cc.Planner.Interval = 50 * time.Millisecond
	gcc.OrphanInterval = 0
	comp, err := compactor.New(ctx, cc, gcc, compactor.Deps{
		JetStream: e.srv.JetStream, Manifest: e.srv.Manifest, View: e.srv.View, Store: store,
		NodeID: "c1", HeartbeatInterval: 10 * time.Second, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := services.StartAndAwaitRunning(ctx, comp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = services.StopAndAwaitTerminated(context.Background(), comp) })

	// Flushed rows have c = "f<round>", loaded ones c0..c2: no overlap.
	flushed := 0
	flushRound := func(round int) {
		for i := range 50 {
			if err := e.sess.Query(`INSERT INTO t (id, c, name) VALUES (?, ?, 'flushed')`, i, fmt.Sprintf("f%d", round)).Exec(); err != nil {
				t.Error(err)
				return
			}
			flushed++
		}
		if err := e.srv.Node.Flush(ctx); err != nil {
			t.Error(err)
		}
	}
	for round := range 3 {
		flushRound(round)
	}
	tbl := e.srv.View.Table("ks", "t")
	if _, err := e.srv.Manifest.RequestCompaction(ctx, tbl.ID); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for round := 3; round < 6; round++ {
			flushRound(round)
		}
	}()
	st, err := bulk.Load(ctx, e.deps(), bulk.Options{Keyspace: "ks", Table: "t", Header: true, Memory: 64 << 10},
		[]bulk.Input{writeFile(t, "in.csv", goodCSV(n))})
	<-done
	if err != nil || st.State != manifest.LoadCommitted {
		t.Fatalf("load: %+v, %v", st, err)
	}
	if got := count(t, e.sess); got != n+flushed {
		t.Fatalf("count %d, want %d", got, n+flushed)
	}
	waitCompacted(t, e)
	for _, s := range e.srv.View.SSTables(tbl.ID) {
		if s.Load == st.Load {
			t.Errorf("loaded SSTable %s not compacted", s.Key)
		}
	}
	if got := count(t, e.sess); got != n+flushed {
		t.Fatalf("count %d after compaction, want %d", got, n+flushed)
	}
}

// An unload reads back what a load wrote, as CSV and as JSON lines, and
// loading the unloaded text into another table gives the same rows.
func testUnload(t *testing.T, store objectstore.Store) {
	e := newEnv(t, store)
	cqltest.Exec(t, e.sess, `CREATE TABLE t2 (
		id int, c text, name text, n bigint, at timestamp, tags set<int>, attrs map<text, int>, ok boolean, data blob,
		PRIMARY KEY (id, c))`, `CREATE TABLE t3 (
		id int, c text, name text, n bigint, at timestamp, tags set<int>, attrs map<text, int>, ok boolean, data blob,
		PRIMARY KEY (id, c))`)
	if err := e.srv.View.WaitFor(t.Context(), func(v *manifest.View) bool { return v.Table("ks", "t3") != nil }); err != nil {
		t.Fatal(err)
	}
	const n = 1500
	if _, err := bulk.Load(t.Context(), e.deps(), bulk.Options{Keyspace: "ks", Table: "t", Header: true},
		[]bulk.Input{writeFile(t, "in.csv", goodCSV(n))}); err != nil {
		t.Fatal(err)
	}
	// Written after the snapshot would be: an unload sees SSTables only,
	// and this row stays in the memtable.
	cqltest.Exec(t, e.sess, `INSERT INTO t (id, c, name) VALUES (99999, 'mem', 'in the memtable')`)
	for _, format := range []string{"csv", "json"} {
		var out bytes.Buffer
		st, err := bulk.Unload(t.Context(), e.deps(), bulk.UnloadOptions{Keyspace: "ks", Table: "t", Format: format, Header: true, PageSize: 100}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != n || st.Ranges != 8 {
			t.Fatalf("%s unload: %+v", format, st)
		}
		table := map[string]string{"csv": "t2", "json": "t3"}[format]
		var rejects bytes.Buffer
		lst, err := bulk.Load(t.Context(), e.deps(), bulk.Options{Keyspace: "ks", Table: table, Header: true, Format: format, Rejects: bulk.NewRejects(&rejects)},
			[]bulk.Input{writeFile(t, "out."+format, out.String())})
		if err != nil || lst.Rows != n {
			t.Fatalf("%s reload: %+v, %v, rejects %s", format, lst, err, rejects.String())
		}
		// Every column of every row is the same in both tables.
		sel := `SELECT JSON id, c, name, n, at, tags, attrs, ok, data FROM `
		want := map[string]bool{}
		it := e.sess.Query(sel + "t").Iter()
		var js string
		for it.Scan(&js) {
			want[js] = true
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		it = e.sess.Query(sel + table).Iter()
		got := 0
		for it.Scan(&js) {
			if !want[js] {
				t.Errorf("%s: row %s not in the source", format, js)
			}
			got++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if got != n || len(want) != n+1 {
			t.Fatalf("%s: %d rows reloaded, %d in the source", format, got, len(want))
		}
	}
}
