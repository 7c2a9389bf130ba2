package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/loadgen"
)

// TestBenchCeiling runs `sediment bench -ceiling -ceiling-commitlog` end to
// end: the null server syncing its writes, the driver, the progress and the
// JSON report.
func TestBenchCeiling(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{
		"-ceiling", "-ceiling-commitlog", t.TempDir(), "-workload", "mixed", "-read-ratio", "0.5", "-count", "400",
		"-concurrency", "8", "-connections", "1", "-partitions", "50", "-json",
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if rep.Ops != 400 || rep.Errors != 0 || rep.Misses != 0 || !rep.Ceiling || !rep.DurableCeiling || rep.Workload != "mixed" || len(rep.ByOp) != 2 {
		t.Fatalf("report %+v", rep)
	}
}

func TestBenchText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := benchMain(context.Background(), []string{"-ceiling", "-workload", "read", "-count", "50", "-concurrency", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ops       50 (") || !strings.Contains(stdout.String(), "p99.9") {
		t.Fatalf("text report:\n%s", stdout.String())
	}
}

func TestBenchFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-workload", "nope"}, `unknown workload "nope"`},
		{[]string{"-concurrency", "x"}, "invalid value"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-hosts", " , "}, "no hosts"},
	} {
		var stdout, stderr bytes.Buffer
		if code := benchMain(context.Background(), c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var out bytes.Buffer
	if code := benchMain(context.Background(), []string{"-help"}, &out, &out); code != 0 || !strings.Contains(out.String(), "-read-ratio") {
		t.Fatalf("-help: exit %d\n%s", code, out.String())
	}
	cfg, asJSON, err := parseBenchFlags([]string{"-hosts", "a:1, b:2", "-count", "5", "-json"}, &out)
	if err != nil || asJSON != true || len(cfg.Hosts) != 2 || cfg.Hosts[1] != "b:2" || cfg.Duration != 0 || cfg.Count != 5 {
		t.Fatalf("%+v %v %v", cfg, asJSON, err)
	}
	if cfg, _, _ := parseBenchFlags(nil, &out); cfg.Duration != benchDefaultDuration {
		t.Fatalf("default duration %v", cfg.Duration)
	}
}

// TestBenchUnreachable: a run that cannot connect fails with exit code 1.
func TestBenchUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{"-hosts", "127.0.0.1:1", "-count", "1", "-timeout", "2s"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "connecting to") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// benchRounds is how many times BenchmarkCQL measures each side of a ratio,
// taking turns, keeping the best: sides that alternate share the machine's
// disturbances. -short measures once.
const benchRounds = 3

// BenchmarkCQL measures the all-in-one server, run in this process as
// `sediment` runs it, with the workloads of `sediment bench`, and compares
// it with the protocol ceiling of the same client against loadgen's null
// server. Each side runs b.N operations with the bench defaults (64 in
// flight on 2 connections, 100-byte rows) over 10,000 partitions, filled
// first so that reads find their rows.
func BenchmarkCQL(b *testing.B) {
	nRounds, halfRate := benchRounds, 3*time.Second
	if testing.Short() {
		nRounds, halfRate = 1, time.Second
	}
	addr := startAllInOne(b)
	base := loadgen.DefaultConfig()
	base.Hosts = []string{addr}
	base.Partitions = 10_000
	base.Duration = 0
	fill := base
	fill.Distribution, fill.Count = loadgen.Sequential, base.Partitions
	if rep := benchRun(b, fill); rep.Errors > 0 {
		b.Fatalf("filling: %d errors: %s", rep.Errors, rep.FirstError)
	}

	// rounds runs each configuration as a sub-benchmark, in turns, and
	// returns the throughput of each round of each.
	rounds := func(names []string, cfgs ...loadgen.Config) [][]float64 {
		out := make([][]float64, len(cfgs))
		for round := range nRounds {
			for i, c := range cfgs {
				// The last run of a sub-benchmark is its largest: short
				// trial runs say little about throughput.
				var last float64
				b.Run(fmt.Sprintf("%s/round=%d", names[i], round), func(b *testing.B) {
					c.Count = int64(b.N)
					rep := benchRun(b, c)
					b.ReportMetric(rep.OpsPerSec, "ops/s")
					b.ReportMetric(rep.Latency.P99, "p99-ms")
					last = rep.OpsPerSec
				})
				out[i] = append(out[i], last)
			}
		}
		return out
	}
	// best returns the highest throughput of each configuration.
	best := func(names []string, cfgs ...loadgen.Config) []float64 {
		out := make([]float64, len(cfgs))
		for i, r := range rounds(names, cfgs...) {
			out[i] = slices.Max(r)
		}
		return out
	}
	ceiling := func(c loadgen.Config) loadgen.Config {
		c.Ceiling = true
		return c
	}
	write, read := base, base
	read.Workload = loadgen.Read
	// The same writes acknowledged before their fsync, against a second
	// server: Cassandra's and ScyllaDB's default commitlog_sync (periodic),
	// which their published write figures use.
	periodic := write
	periodic.Hosts = []string{startAllInOne(b, "-ingest.commitlog.sync-mode=periodic")}
	// The null server syncing each write to one commitlog per core, on the
	// disk of the server's data: the most that durable writes can give on
	// this machine, whatever the engine.
	durable := ceiling(write)
	durable.CeilingCommitlog = b.TempDir()
	ops := best([]string{"write", "write/periodic-sync", "ceiling/write", "ceiling/write-durable", "read", "ceiling/read"},
		write, periodic, ceiling(write), durable, read, ceiling(read))
	benchfig.Report("cql.write_ops_s", ops[0], "ops/s")
	benchfig.Report("cql.write.vs_ceiling", ratio(ops[0], ops[2]), "x")
	benchfig.Report("cql.write.durable_ceiling.vs_ceiling", ratio(ops[3], ops[2]), "x")
	benchfig.Report("cql.write.vs_durable_ceiling", ratio(ops[0], ops[3]), "x")
	benchfig.Report("cql.write_ops_s.periodic_sync", ops[1], "ops/s")
	benchfig.Report("cql.write.periodic_sync.vs_ceiling", ratio(ops[1], ops[2]), "x")
	benchfig.Report("cql.read_ops_s", ops[4], "ops/s")
	benchfig.Report("cql.read.vs_ceiling", ratio(ops[4], ops[5]), "x")

	// Latency at half of the throughput measured above, for 3 s each
	// (1 s under -short).
	for _, c := range []struct {
		name string
		cfg  loadgen.Config
		max  float64
	}{{"write", write, ops[0]}, {"read", read, ops[4]}} {
		if c.max == 0 {
			continue
		}
		var p99 float64
		b.Run(c.name+"/half-rate", func(b *testing.B) {
			cfg := c.cfg
			cfg.Count, cfg.Duration, cfg.Rate = 0, halfRate, c.max/2
			for range b.N {
				rep := benchRun(b, cfg)
				p99 = rep.Latency.P99
				b.ReportMetric(rep.OpsPerSec, "ops/s")
				b.ReportMetric(p99, "p99-ms")
			}
		})
		benchfig.Report("cql."+c.name+"_p99_ms", p99, "ms")
	}

	// One connection against eight, with the same 64 operations in flight:
	// the median of the rounds' ratios, as the two sides take turns and a
	// round's disk and neighbours move both (the best of each side would
	// make one lucky round the figure).
	one, eight := write, write
	one.Connections, eight.Connections = 1, 8
	conns := rounds([]string{"write/conns=1", "write/conns=8"}, one, eight)
	ratios := make([]float64, nRounds)
	for i := range ratios {
		ratios[i] = ratio(conns[0][i], conns[1][i])
	}
	slices.Sort(ratios)
	benchfig.Report("cql.single_conn.vs_many", ratios[nRounds/2], "x")
}

// ratio returns a/b, or 0 when either side did not run.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// benchRun runs c, failing b if it cannot or if any operation fails.
func benchRun(b *testing.B, c loadgen.Config) *loadgen.Report {
	b.Helper()
	rep, err := loadgen.Run(context.Background(), c, nil)
	if err != nil {
		b.Fatal(err)
	}
	if rep.Errors > 0 {
		b.Fatalf("%s: %d errors: %s", c.Workload, rep.Errors, rep.FirstError)
	}
	return rep
}

// startAllInOne runs sediment with every role and its defaults, changed by
// extra flags, on a fresh data directory and free ports of 127.0.0.1 until
// b ends, and returns its CQL address once it is ready.
func startAllInOne(b *testing.B, extra ...string) string {
	b.Helper()
	port := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	httpAddr, cqlAddr := fmt.Sprintf("127.0.0.1:%d", port()), fmt.Sprintf("127.0.0.1:%d", port())
	var cfg Config
	err := cfg.Load(append([]string{
		"-data.dir=" + b.TempDir(),
		"-http.listen-address=" + httpAddr,
		"-cql.listen-address=" + cqlAddr,
		fmt.Sprintf("-manifest.embedded-port=%d", port()),
		"-ingest.rpc-address=127.0.0.1:0",
	}, extra...), func(string) string { return "" })
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- newSediment(&cfg, slog.New(slog.DiscardHandler)).run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("sediment stopped with %v", err)
		}
	})
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			b.Fatalf("sediment stopped before it was ready: %v", err)
		default:
		}
		resp, err := http.Get("http://" + httpAddr + "/ready")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return cqlAddr
		}
	}
	b.Fatal("sediment not ready after a minute")
	return ""
}
