package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sedimentdb/sediment/internal/loadgen"
)

// benchDefaultDuration is how long `sediment bench` runs without -duration
// or -count.
const benchDefaultDuration = 10 * time.Second

// benchCommand runs `sediment bench` with args until it ends or the process
// is interrupted, and returns the exit code.
func benchCommand(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return benchMain(ctx, args, os.Stdout, os.Stderr)
}

// benchMain parses the flags of `sediment bench`, runs the load and writes
// the report to stdout and the progress lines to stderr. It returns 0 on
// success, 2 for bad flags and 1 when the run could not start.
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, asJSON, err := parseBenchFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment bench: %v\nRun 'sediment bench -help' for the flags.\n", err)
		return 2
	}
	rep, err := loadgen.Run(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sediment bench: %v\n", err)
		return 1
	}
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment bench: %v\n", err)
		return 1
	}
	return 0
}

// parseBenchFlags returns the run that args describe and whether the report
// is JSON.
func parseBenchFlags(args []string, output io.Writer) (loadgen.Config, bool, error) {
	c := loadgen.DefaultConfig()
	f := subcommandFlags("sediment bench", "Usage: sediment bench [flags]\n\nRuns a CQL workload against -hosts (or, with -ceiling, against an in-process\nserver that does no work) and reports throughput and latency percentiles.\nA progress line goes to stderr each second, the report to stdout.\n\n", output)
	var hosts string
	var asJSON bool
	f.StringVar(&c.Workload, "workload", c.Workload, "Workload: write, read, mixed, scan or counter.")
	f.Float64Var(&c.ReadRatio, "read-ratio", c.ReadRatio, "Share of reads in the mixed workload, in [0, 1].")
	f.StringVar(&c.Distribution, "dist", c.Distribution, "Key distribution: uniform, sequential or zipfian.")
	f.Float64Var(&c.ZipfS, "zipf-s", c.ZipfS, "Exponent of the zipfian distribution (> 1; larger is more skewed).")
	f.IntVar(&c.RowSize, "row-size", c.RowSize, "Bytes of the blob written in each row.")
	f.IntVar(&c.ClusteringRows, "clustering-rows", c.ClusteringRows, "Rows per partition.")
	f.Int64Var(&c.Partitions, "partitions", c.Partitions, "Partitions of the key space.")
	f.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "Operations in flight.")
	f.IntVar(&c.Connections, "connections", c.Connections, "Connections per host (gocql NumConns).")
	f.DurationVar(&c.Duration, "duration", 0, fmt.Sprintf("How long to run (default %v unless -count is given).", benchDefaultDuration))
	f.Int64Var(&c.Count, "count", 0, "Operations to run (0: no limit); with -duration, whichever comes first.")
	f.Float64Var(&c.Rate, "rate", 0, "Operations per second on a fixed schedule, latency counting from when each was due (0: as fast as possible).")
	f.StringVar(&hosts, "hosts", strings.Join(c.Hosts, ","), "Comma-separated CQL servers, host:port.")
	f.StringVar(&c.Keyspace, "keyspace", c.Keyspace, "Keyspace of the tables.")
	f.StringVar(&c.Table, "table", c.Table, "Table; counters go to <table>_counter.")
	f.BoolVar(&c.Setup, "setup", c.Setup, "Create the keyspace and tables if they do not exist.")
	f.BoolVar(&c.Ceiling, "ceiling", false, "Run against an in-process CQL server that does no work, to measure the protocol ceiling; -hosts is ignored.")
	f.StringVar(&c.CeilingCommitlog, "ceiling-commitlog", "", "With -ceiling, a directory: the null server acknowledges each write only once it is synced to a commitlog there, one per core, as an ingest node does (the durable ceiling of that disk).")
	f.DurationVar(&c.Timeout, "timeout", c.Timeout, "Timeout of one operation.")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "Seed of the random keys and values.")
	f.BoolVar(&asJSON, "json", false, "Write the report as JSON.")
	if err := f.Parse(args); err != nil {
		return c, false, err
	}
	if f.NArg() > 0 {
		return c, false, fmt.Errorf("unexpected arguments %q", f.Args())
	}
	c.Hosts = nil
	for h := range strings.SplitSeq(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.Hosts = append(c.Hosts, h)
		}
	}
	if c.Duration == 0 && c.Count == 0 {
		c.Duration = benchDefaultDuration
	}
	return c, asJSON, nil
}
