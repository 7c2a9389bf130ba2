package main

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/status"
)

// statusPage fetches /status from p and returns its figures.
func statusPage(t *testing.T, p *process) map[string]string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/status", p.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /status: %s %v\n%s", resp.Status, err, body)
	}
	out, err := status.Figures(string(body))
	if err != nil {
		t.Error(err)
	}
	return out
}

// requestCount sums sediment_objectstore_requests_total for operation op.
func requestCount(t *testing.T, reg prometheus.Gatherer, op string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "sediment_objectstore_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == op {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return uint64(n)
}

// TestStatusPage runs every role in one process, writes flushes until a
// compaction has run, and checks the status page against the process's
// own catalog and registry.
func TestStatusPage(t *testing.T) {
	p := startProcess(t, t.TempDir(),
		"-node.heartbeat-interval=50ms",
		"-ingest.shards=1", "-ingest.ranges=2",
		"-ingest.flush-age=50ms",
		"-compactor.workers=1",
		"-compactor.plan-interval=100ms",
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE c WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE c.kv (k int PRIMARY KEY, v text)",
	)
	reg := p.s.reg
	for f := range 5 {
		before := gathered(t, reg, "sediment_ingest_flushes_total")
		for k := range 40 {
			if err := s.Query("INSERT INTO c.kv (k, v) VALUES (?, ?)", k, fmt.Sprintf("v%d-%d", k, f)).Exec(); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for gathered(t, reg, "sediment_ingest_flushes_total") == before {
			if time.Now().After(deadline) {
				t.Fatalf("no flush within 20s\n%s", p.log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for gathered(t, reg, "sediment_compaction_jobs_committed_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction within 60s\n%s", p.log)
		}
		time.Sleep(50 * time.Millisecond)
	}

	view := p.s.view
	table := view.Table("c", "kv")
	// The catalog may still move (a second compaction): read the page
	// between two equal SSTables revisions.
	for attempt := 0; ; attempt++ {
		rev := view.SSTablesRevision()
		putsBefore := requestCount(t, reg, "put")
		got := statusPage(t, p)
		putsAfter := requestCount(t, reg, "put")
		if view.SSTablesRevision() != rev {
			if attempt == 20 {
				t.Fatal("the catalog never held still")
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		want := map[string]string{"queue/jobs": got["queue/jobs"]}
		if got["queue/jobs"] == "" {
			t.Error("no compaction queue on the page")
		}
		var total int64
		levels := map[int][2]int64{}
		for _, sst := range view.SSTables(table.ID) {
			total += sst.Size
			l := levels[sst.Level]
			levels[sst.Level] = [2]int64{l[0] + 1, l[1] + sst.Size}
		}
		if levels[1][0] == 0 {
			t.Errorf("no SSTable in L1 after a compaction: %v", levels)
		}
		want["tables/c.kv/sstables"] = strconv.Itoa(len(view.SSTables(table.ID)))
		want["tables/c.kv/bytes"] = strconv.FormatInt(total, 10)
		for l, cb := range levels {
			want[fmt.Sprintf("sstables/c.kv/L%d/count", l)] = strconv.FormatInt(cb[0], 10)
			want[fmt.Sprintf("sstables/c.kv/L%d/bytes", l)] = strconv.FormatInt(cb[1], 10)
		}
		want["revision/sstables"] = strconv.FormatUint(rev, 10)
		mems := nodeMembers(view.Members())
		if len(mems) == 0 {
			t.Error("no members")
		}
		for _, mem := range mems {
			want["members/"+mem.ID+"/health"] = "healthy"
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s = %q, want %q", name, got[name], w)
			}
		}
		puts, err := strconv.ParseUint(got["requests/put"], 10, 64)
		if err != nil || puts < putsBefore || puts > putsAfter {
			t.Errorf("requests/put = %q, want between %d and %d", got["requests/put"], putsBefore, putsAfter)
		}
		if got["cost/total"] == "" || got["tables/c.kv/unflushed"] == "" || got["ranges/0/owner"] != p.s.ingester.NodeID() {
			t.Error("no cost, unflushed writes or range owner")
		}
		t.Logf("figures: %v", got)
		return
	}
}
