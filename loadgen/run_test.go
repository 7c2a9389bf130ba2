package loadgen

import (
	"context"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// testConfig is a small run of workload against the null server, or, after
// setting Ceiling false, against hosts.
func testConfig(workload string) Config {
	c := DefaultConfig()
	c.Workload = workload
	c.Ceiling = true
	c.Duration = 0
	c.Count = 300
	c.Concurrency = 8
	c.Connections = 1
	c.Partitions = 20
	c.ClusteringRows = 5
	c.RowSize = 64
	return c
}

func run(t *testing.T, c Config) *Report {
	t.Helper()
	var progress strings.Builder
	rep, err := Run(context.Background(), c, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ops != c.Count {
		t.Fatalf("%s: %d ops, want %d", c.Workload, rep.Ops, c.Count)
	}
	return rep
}

// TestCeiling runs every workload against the null server: each is answered,
// and reads find their row.
func TestCeiling(t *testing.T) {
	for _, w := range []string{Write, Read, Mixed, Scan, Counter} {
		t.Run(w, func(t *testing.T) {
			rep := run(t, testConfig(w))
			if rep.Errors != 0 || rep.Misses != 0 || rep.FirstError != "" {
				t.Fatalf("%d errors, %d misses: %s", rep.Errors, rep.Misses, rep.FirstError)
			}
			var ops int64
			for _, o := range rep.ByOp {
				ops += o.Ops
				if (o.Op == "read" || o.Op == "scan") && o.Rows != o.Ops {
					t.Fatalf("%s: %d rows for %d ops, want one each", o.Op, o.Rows, o.Ops)
				}
			}
			if ops != rep.Ops || !rep.Ceiling || rep.Latency.Max <= 0 || rep.OpsPerSec <= 0 {
				t.Fatalf("inconsistent report %+v", rep)
			}
		})
	}
}

// TestSediment runs the workloads against an in-process Sediment and checks
// what they wrote.
func TestSediment(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	on := func(workload string) Config {
		c := testConfig(workload)
		c.Ceiling = false
		c.Hosts = []string{srv.Addr}
		return c
	}
	// A sequential write of the whole key space.
	w := on(Write)
	w.Distribution = Sequential
	w.Count = w.rows()
	if rep := run(t, w); rep.Errors != 0 {
		t.Fatalf("write: %d errors: %s", rep.Errors, rep.FirstError)
	}
	// Every read finds its row.
	r := on(Read)
	r.Distribution = Zipfian
	if rep := run(t, r); rep.Errors != 0 || rep.Misses != 0 || rep.ByOp[0].Rows != r.Count {
		t.Fatalf("read: %d errors, %d misses, %d rows: %s", rep.Errors, rep.Misses, rep.ByOp[0].Rows, rep.FirstError)
	}
	// Every scan finds the whole partition.
	s := on(Scan)
	s.Count = 40
	if rep := run(t, s); rep.Errors != 0 || rep.ByOp[0].Rows != s.Count*int64(s.ClusteringRows) {
		t.Fatalf("scan: %d errors, %d rows: %s", rep.Errors, rep.ByOp[0].Rows, rep.FirstError)
	}
	m := on(Mixed)
	m.ReadRatio = 0.3
	if rep := run(t, m); rep.Errors != 0 || rep.Misses != 0 || len(rep.ByOp) != 2 {
		t.Fatalf("mixed: %+v", rep)
	}
	// Counters add up to the increments.
	c := on(Counter)
	if rep := run(t, c); rep.Errors != 0 {
		t.Fatalf("counter: %d errors: %s", rep.Errors, rep.FirstError)
	}
	sess := srv.Session(t, c.Keyspace)
	var total, v int64
	it := sess.Query("SELECT c FROM " + c.Table + "_counter").Iter()
	for it.Scan(&v) {
		total += v
	}
	if err := it.Close(); err != nil || total != c.Count {
		t.Fatalf("counters sum to %d, want %d (%v)", total, c.Count, err)
	}
	// Reads of a table nobody wrote miss, and misses are errors.
	e := on(Read)
	e.Table = "empty"
	e.Count = 30
	if rep := run(t, e); rep.Misses != e.Count || rep.Errors != e.Count {
		t.Fatalf("read of an empty table: %d misses, %d errors, want %d", rep.Misses, rep.Errors, e.Count)
	}
}
