package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

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
		c.Setup = false // the first write sets up
		return c
	}
	// A sequential write of the whole key space.
	w := on(Write)
	w.Setup = true
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
	e.Table, e.Setup = "empty", true
	e.Count = 30
	if rep := run(t, e); rep.Misses != e.Count || rep.Errors != e.Count {
		t.Fatalf("read of an empty table: %d misses, %d errors, want %d", rep.Misses, rep.Errors, e.Count)
	}
}

// TestLimits: a duration, a rate and a cancelled context each end or pace a
// run as documented.
func TestLimits(t *testing.T) {
	c := testConfig(Write)
	c.Count, c.Duration = 0, 300*time.Millisecond
	var progress strings.Builder
	rep, err := Run(context.Background(), c, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ops == 0 || rep.Errors != 0 || rep.Elapsed < c.Duration.Seconds() {
		t.Fatalf("duration run: %d ops, %d errors in %.3fs", rep.Ops, rep.Errors, rep.Elapsed)
	}

	// At 200 operations a second, operation i is due i/200 s after the
	// start, so 40 operations cannot take less than 39/200 s.
	c = testConfig(Write)
	c.Count, c.Rate = 40, 200
	if rep := run(t, c); rep.Elapsed < 39.0/200 {
		t.Fatalf("40 operations at 200/s took %.3fs", rep.Elapsed)
	}

	// Cancelling ends an unbounded count early, with a report of what ran.
	c = testConfig(Read)
	c.Count = 1 << 40
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	rep, err = Run(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ops == 0 || rep.Ops >= c.Count || rep.Errors != 0 {
		t.Fatalf("cancelled run: %d ops, %d errors", rep.Ops, rep.Errors)
	}
}

// TestProgress: a run of a few seconds writes a progress line each second
// (two here, one fewer if the machine delays a tick past the end).
func TestProgress(t *testing.T) {
	c := testConfig(Write)
	c.Count, c.Duration, c.Rate = 0, 2500*time.Millisecond, 400
	var progress strings.Builder
	if _, err := Run(context.Background(), c, &progress); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(progress.String(), "\n"), "\n")
	if len(lines) < 1 || len(lines) > 2 || !strings.HasPrefix(lines[0], "    1s ") {
		t.Fatalf("progress:\n%s", progress.String())
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) != 7 || f[2] != "ops/s" || f[3] != "0" || f[5] != "p99" || !strings.HasSuffix(f[6], "ms") {
			t.Fatalf("progress line %q", l)
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	c := testConfig("nope")
	if _, err := Run(context.Background(), c, nil); err == nil || !strings.Contains(err.Error(), "loadgen: unknown workload") {
		t.Fatalf("got %v", err)
	}
}

// TestSchedule: operations are due at fixed intervals from the start, even
// when the workers are late, and a cancelled context stops the waiting.
func TestSchedule(t *testing.T) {
	start := time.Now().Add(-time.Hour) // every operation is long overdue
	s := &schedule{start: start, interval: float64(time.Millisecond)}
	for i := range 5 {
		due, ok := s.wait(context.Background())
		if !ok || !due.Equal(start.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("operation %d due at %v (%v), want %v", i, due.Sub(start), ok, time.Duration(i)*time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := s.wait(ctx); ok {
		t.Fatal("an overdue operation ran after the context ended")
	}
	s = &schedule{start: time.Now().Add(time.Hour), interval: 1}
	if _, ok := s.wait(ctx); ok {
		t.Fatal("waited for an operation after the context ended")
	}
}
