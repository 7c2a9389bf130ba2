package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sedimentdb/sediment/internal/bulk"
)

// unloadCommand runs `sediment unload` with args and returns the exit code.
func unloadCommand(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return unloadMain(ctx, args, os.Getenv, os.Stdout, os.Stderr)
}

const unloadUsage = `Usage: sediment unload [flags] -table keyspace.table

Writes every row of a table as CSV or JSON lines, reading its token ranges in
parallel from the SSTables of one manifest version. Rows still in memtables
are not read: -flush asks the ingest nodes to flush first. The node's
flags, -config.file and SEDIMENT_* variables apply as for a node.

`

type unloadConfig struct {
	adminConfig
	csvDialect
	Opts  bulk.UnloadOptions
	Out   string
	Flush bool
}

func parseUnloadFlags(args []string, getenv func(string) string, output io.Writer) (unloadConfig, error) {
	var c unloadConfig
	o := &c.Opts
	f := subcommandFlags("sediment unload", unloadUsage, output)
	f.BoolVar(&c.JSON, "json", false, "Print the summary as JSON.")
	var table string
	f.StringVar(&table, "table", "", "The table to unload: keyspace.table.")
	f.StringVar(&o.Format, "format", "csv", "Output format: csv or json (JSON lines).")
	f.BoolVar(&o.Header, "header", true, "Write the column names first (CSV).")
	f.StringVar(&c.Delimiter, "delimiter", ",", "CSV field delimiter.")
	f.StringVar(&c.Quote, "quote", `"`, "CSV quote character.")
	f.StringVar(&c.Escape, "escape", `\`, "CSV escape character inside quotes.")
	f.StringVar(&o.Null, "null", "", "Text of a null value (CSV).")
	f.IntVar(&o.Workers, "workers", 2, "Token ranges read in parallel.")
	f.IntVar(&o.PageSize, "page-size", 5000, "Rows per page of a range's scan.")
	f.StringVar(&o.TempDir, "tmp-dir", os.TempDir(), "Directory for the ranges' output before it is joined.")
	f.StringVar(&c.Out, "out", "-", `Output file; "-" is standard output.`)
	f.BoolVar(&c.Flush, "flush", false, "Ask every live ingest node to flush first, so that the unload holds every write acknowledged before it started.")
	f.DurationVar(&c.Timeout, "flush-timeout", 5*time.Minute, "How long each node may take to flush.")
	// Configured as a node is: its flags, -config.file and SEDIMENT_*
	// variables (Config.LoadFlags).
	pos, err := c.LoadFlags(f, args, getenv)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, fmt.Errorf("unexpected argument %q", pos[0])
	}
	c.MaxAge = 15 * time.Second
	if o.Keyspace, o.Table, err = parseTableFlag(table); err != nil {
		return c, err
	}
	if o.Format != "csv" && o.Format != "json" {
		return c, fmt.Errorf("-format %q: want csv or json", o.Format)
	}
	if err := c.csvDialect.apply(&o.CSV); err != nil {
		return c, err
	}
	return c, c.Config.Validate()
}

// unloadMain runs `sediment unload`: 0 on success, 1 on failure, 2 for bad
// usage. The summary goes to standard error when the rows go to standard
// output.
func unloadMain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseUnloadFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment unload: %v\n", err)
		return 2
	}
	a := &admin{cfg: cfg.adminConfig, stdout: stdout, stderr: stderr, now: time.Now}
	defer a.close()
	st, err := runUnload(ctx, a, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sediment unload: %v\n", err)
		return 1
	}
	summary := stdout
	if cfg.Out == "-" {
		summary = stderr
	}
	if cfg.JSON {
		_ = json.NewEncoder(summary).Encode(st)
	} else {
		fmt.Fprintf(summary, "unloaded %d rows (%.1f MB) of %d ranges as of sstables revision %d in %.1fs\n",
			st.Rows, float64(st.Bytes)/1e6, st.Ranges, st.Revision, st.Seconds)
	}
	return 0
}

func runUnload(ctx context.Context, a *admin, cfg unloadConfig) (bulk.UnloadStats, error) {
	if cfg.Flush {
		if _, err := adminFlush(ctx, a, nil); err != nil {
			return bulk.UnloadStats{}, fmt.Errorf("flush: %w", err)
		}
	}
	m, err := a.open(ctx)
	if err != nil {
		return bulk.UnloadStats{}, err
	}
	v, err := m.Watch(ctx)
	if err != nil {
		return bulk.UnloadStats{}, err
	}
	defer v.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := bulk.Deps{Manifest: m, View: v, Store: a.store, Logger: logger}
	if cfg.Out == "-" {
		return bulk.Unload(ctx, d, cfg.Opts, a.stdout)
	}
	f, err := os.Create(cfg.Out)
	if err != nil {
		return bulk.UnloadStats{}, err
	}
	st, err := bulk.Unload(ctx, d, cfg.Opts, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", cfg.Out, cerr)
	}
	return st, err
}
