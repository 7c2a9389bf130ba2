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
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/bulk"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// loadConfig is the configuration of `sediment load`.
type loadConfig struct {
	adminConfig
	csvDialect
	Opts                      bulk.Options
	Columns, Mapping, Rejects string
	Abandon                   string
	Resume                    string
	Progress                  bool
}

// loadCommand runs `sediment load` with args and returns the exit code.
func loadCommand(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return loadMain(ctx, args, os.Getenv, os.Stdout, os.Stderr, isTerminal(os.Stderr))
}

const loadUsage = `Usage: sediment load [flags] -table keyspace.table INPUT...

Loads CSV or JSON lines into a table by writing SSTables straight to the
bucket, committed in one step. INPUT is a file, a directory, a glob, "-" for
standard input, or bucket:<prefix> for objects of the object store. The
node's flags, -config.file and SEDIMENT_* variables apply as for a node.

`

func parseLoadFlags(args []string, getenv func(string) string, output io.Writer) (loadConfig, []string, error) {
	var c loadConfig
	o := &c.Opts
	f := subcommandFlags("sediment load", loadUsage, output)
	f.BoolVar(&c.JSON, "json", false, "Print the summary as JSON.")
	var table string
	f.StringVar(&table, "table", "", "The table to load: keyspace.table.")
	f.StringVar(&o.Format, "format", "csv", "Input format: csv or json (JSON lines).")
	f.BoolVar(&o.Header, "header", true, "The first CSV record names the fields (cqlsh HEADER, DSBulk -header).")
	f.StringVar(&c.Delimiter, "delimiter", ",", "CSV field delimiter (cqlsh DELIMITER, DSBulk -delim).")
	f.StringVar(&c.Quote, "quote", `"`, "CSV quote character (cqlsh QUOTE, DSBulk -quote).")
	f.StringVar(&c.Escape, "escape", `\`, "CSV escape character inside quotes (cqlsh ESCAPE, DSBulk -escape).")
	f.StringVar(&o.Text.Null, "null", "", "Text of a null value (cqlsh NULL, DSBulk -nullValue); a quoted empty field is the empty string.")
	f.StringVar(&o.Text.TimestampFormat, "timestamp-format", "", "strftime format of timestamps (cqlsh DATETIMEFORMAT), tried before Cassandra's formats.")
	f.StringVar(&o.Text.DateFormat, "date-format", "", "strftime format of dates, tried before yyyy-mm-dd.")
	f.StringVar(&o.Text.TimeFormat, "time-format", "", "strftime format of times, tried before hh:mm:ss.")
	f.StringVar(&c.Columns, "columns", "", "Comma-separated columns of the CSV fields, in order (cqlsh COPY's column list); default the header, or the table's columns.")
	f.StringVar(&c.Mapping, "mapping", "", "Comma-separated field=column renames (DSBulk -m).")
	f.Int64Var(&o.WriteTime, "write-time", 0, "Write timestamp of every row, µs since the epoch (default the load's start).")
	f.StringVar(&o.WriteTimeField, "write-time-field", "", "Input field holding each row's write timestamp (µs, or a timestamp); it must be the last CSV field.")
	var ttl time.Duration
	f.DurationVar(&ttl, "ttl", 0, "Time to live of the loaded cells (0: forever).")
	f.IntVar(&o.MaxErrors, "max-errors", 100, "Rejected records after which the load stops and commits nothing (cqlsh MAXPARSEERRORS, DSBulk -maxErrors); -1: no limit.")
	f.IntVar(&o.CSV.MaxRecordBytes, "max-record-bytes", 1<<20, "Longest record or line; longer ones are rejected.")
	f.StringVar(&c.Rejects, "rejects", "", "File for the rejected records, as JSON lines with source, line and reason (default sediment-load-<load ID>.rejects.json, written only if one is rejected).")
	f.IntVar(&o.Workers, "workers", 0, "Rows converted in parallel (0: one per CPU).")
	f.Int64Var(&o.Memory, "memory", 256<<20, "Bytes of rows held for sorting before they spill to -tmp-dir.")
	f.StringVar(&o.TempDir, "tmp-dir", os.TempDir(), "Directory for spilled sorted runs.")
	f.StringVar(&o.ObjectPrefix, "object-prefix", "sst/load", "Key prefix of the SSTables written; keep it under one of -gc.orphan-prefixes so that abandoned objects are collected.")
	f.StringVar(&c.Resume, "resume", "", "Continue the pending load with this ID, with the same input: ranges already written are skipped.")
	f.StringVar(&c.Abandon, "abandon", "", "Abandon the pending load with this ID: nothing of it shows, and its objects are collected.")
	f.BoolVar(&c.Progress, "progress", true, "Draw progress on standard error: a bar on a terminal, a line every 10s otherwise.")
	// Configured as a node is: its flags, -config.file and SEDIMENT_*
	// variables (Config.LoadFlags).
	pos, err := c.LoadFlags(f, args, getenv)
	if err != nil {
		return c, nil, err
	}
	if o.Keyspace, o.Table, err = parseTableFlag(table); err != nil && c.Abandon == "" {
		return c, nil, err
	}
	o.TTL = int32(ttl / time.Second)
	if err := c.csvDialect.apply(&o.CSV); err != nil {
		return c, nil, err
	}
	if o.CSV.Delimiter == o.CSV.Quote {
		return c, nil, errors.New("-delimiter and -quote must differ")
	}
	if o.Format != "csv" && o.Format != "json" {
		return c, nil, fmt.Errorf("-format %q: want csv or json", o.Format)
	}
	if c.Columns != "" {
		o.Columns = strings.Split(c.Columns, ",")
	}
	if c.Mapping != "" {
		o.Mapping = map[string]string{}
		for _, m := range strings.Split(c.Mapping, ",") {
			field, col, ok := strings.Cut(m, "=")
			if !ok || field == "" || col == "" {
				return c, nil, fmt.Errorf("-mapping %q: want field=column", m)
			}
			o.Mapping[field] = col
		}
	}
	for _, id := range []string{c.Resume, c.Abandon} {
		if id != "" {
			if _, err := uuid.Parse(id); err != nil {
				return c, nil, fmt.Errorf("load ID %q: %w", id, err)
			}
		}
	}
	if c.Resume != "" {
		o.Resume = uuid.MustParse(c.Resume)
	}
	if c.Abandon == "" && len(pos) == 0 {
		return c, nil, errors.New("no input")
	}
	return c, pos, c.Config.Validate()
}

// loadMain runs `sediment load`: 0 when the load committed, 1 when it
// failed, 2 for bad usage.
func loadMain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, terminal bool) int {
	cfg, inputs, err := parseLoadFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment load: %v\n", err)
		return 2
	}
	a := &admin{cfg: cfg.adminConfig, stdout: stdout, stderr: stderr, now: time.Now}
	defer a.close()
	st, err := runLoad(ctx, a, cfg, inputs, terminal)
	if err := printLoad(a, cfg, st, err); err != nil {
		fmt.Fprintf(stderr, "sediment load: %v\n", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment load: %v\n", err)
		if st.State == "pending" {
			fmt.Fprintf(stderr, "sediment load: the load is pending: continue it with -resume %s, or drop it with -abandon %s\n", st.Load, st.Load)
		}
		return 1
	}
	return 0
}

func runLoad(ctx context.Context, a *admin, cfg loadConfig, args []string, terminal bool) (bulk.Stats, error) {
	m, err := a.open(ctx)
	if err != nil {
		return bulk.Stats{}, err
	}
	if cfg.Abandon != "" {
		id := uuid.MustParse(cfg.Abandon)
		return bulk.Stats{Load: id, State: "abandoned"}, m.AbandonLoad(ctx, id)
	}
	v, err := m.Watch(ctx)
	if err != nil {
		return bulk.Stats{}, err
	}
	defer v.Close()
	inputs, err := bulk.Inputs(ctx, a.store, args)
	if err != nil {
		return bulk.Stats{}, err
	}
	o := cfg.Opts
	// The rejects file is opened at the first reject, so a clean load
	// leaves none.
	if o.Resume == uuid.Nil {
		o.ID = uuid.New()
	}
	rf := &lazyFile{path: cfg.Rejects}
	if rf.path == "" {
		rf.path = fmt.Sprintf("sediment-load-%s.rejects.json", cmpID(o.Resume, o.ID))
	}
	defer rf.Close()
	o.Rejects = bulk.NewRejects(rf)
	if cfg.Progress {
		p := bulk.NewProgress(a.stderr, terminal)
		o.Progress = p.Show
		defer p.Done()
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := bulk.Load(ctx, bulk.Deps{Manifest: m, View: v, Store: a.store, FS: vfs.Default, Logger: logger}, o, inputs)
	if rf.f != nil {
		fmt.Fprintf(a.stderr, "sediment load: %d rejected records are in %s\n", st.Rejected, rf.path)
	}
	return st, err
}

func cmpID(a, b uuid.UUID) uuid.UUID {
	if a != uuid.Nil {
		return a
	}
	return b
}

// lazyFile creates its file at the first write.
type lazyFile struct {
	path string
	f    *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.Create(l.path)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}

func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// printLoad prints the summary.
func printLoad(a *admin, cfg loadConfig, st bulk.Stats, loadErr error) error {
	if cfg.JSON {
		out := struct {
			bulk.Stats
			Error string `json:"error,omitempty"`
		}{Stats: st}
		if loadErr != nil {
			out.Error = loadErr.Error()
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	mb := float64(st.InputBytes) / 1e6
	_, err := fmt.Fprintf(a.stdout, "load %s %s: %d records, %d rows loaded, %d rejected; %.1f MB read in %.1fs (%.1f MB/s, %.0f rows/s); %d SSTables, %.1f MB written\n",
		st.Load, st.State, st.Records, st.Rows, st.Rejected, mb, st.Seconds, mb/max(st.Seconds, 1e-9),
		float64(st.Rows)/max(st.Seconds, 1e-9), st.SSTables, float64(st.SSTableBytes)/1e6)
	return err
}

// csvDialect is the CSV dialect of `sediment load` and `unload` as flags
// give it: -delimiter, -quote and -escape, one character each.
type csvDialect struct {
	Delimiter, Quote, Escape string
}

// apply sets the dialect's characters in o, or says which flag is not one
// character other than a line break.
func (d csvDialect) apply(o *bulk.CSVOptions) error {
	for _, ch := range []struct {
		name string
		s    string
		dst  *rune
	}{{"delimiter", d.Delimiter, &o.Delimiter}, {"quote", d.Quote, &o.Quote}, {"escape", d.Escape, &o.Escape}} {
		if utf8.RuneCountInString(ch.s) != 1 || ch.s == "\n" || ch.s == "\r" {
			return fmt.Errorf("-%s %q: want one character other than a line break", ch.name, ch.s)
		}
		*ch.dst, _ = utf8.DecodeRuneInString(ch.s)
	}
	return nil
}

// parseTableFlag splits the -table flag's keyspace.table; with an error it
// still returns what it split.
func parseTableFlag(table string) (keyspace, name string, err error) {
	keyspace, name, ok := strings.Cut(table, ".")
	if !ok || keyspace == "" || name == "" {
		return keyspace, name, fmt.Errorf("-table %q: want keyspace.table", table)
	}
	return keyspace, name, nil
}
