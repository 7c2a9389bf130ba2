package main

// `sediment admin` inspects and repairs a running cluster through its NATS
// catalog and its bucket; see docs/admin.md. Each subcommand gathers a report
// value that prints as text for people or, with -json, as JSON.

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
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// adminArchivePrefix starts every object of the manifest archive
// (manifest/archive.go): manifest/<bucket>/<key>/<%020d version>.
const adminArchivePrefix = "manifest/"

// adminUsage lists the subcommands.
const adminUsage = `Usage: sediment admin <subcommand> [flags]

Subcommands:
  status                 members, token ranges and owners, schema version
  tables                 keyspaces and tables with SSTable counts and bytes
  sstables [-table ks.t] SSTables per table, level and range
  manifest history       recent versions in the bucket's manifest archive
  manifest show <object> one archived version, pretty-printed
  restore [-yes]         rebuild the NATS catalog from the bucket's archive
  verify                 read every live SSTable and check its checksums
  flush [-timeout d]     flush every live ingest node's memtables
  compact [-table ks.t]  major compaction of a table, or of every table

Every subcommand takes -json, and is configured as a node is: the node's
flags, its YAML file (-config.file) and SEDIMENT_* variables (for example
SEDIMENT_MANIFEST_NATS_URL). 'sediment admin <subcommand> -help' lists them.
`

// adminConfig is what the admin subcommands connect with: a node's
// configuration, loaded as a node loads it, and the subcommands' own flags.
type adminConfig struct {
	Config
	JSON    bool
	Yes     bool          // restore: even over existing state
	Table   string        // sstables: ks.table
	Limit   int           // manifest history: versions shown
	MaxAge  time.Duration // status, flush: heartbeat age of a live member
	Timeout time.Duration // flush, compact: how long to wait (0: no bound)
	Wait    bool          // compact: wait until done
	From    string        // tpstats: processes' HTTP addresses
}

// admin holds one subcommand's connections and output.
type admin struct {
	cfg            adminConfig
	stdout, stderr io.Writer
	now            func() time.Time
	// progress says whether long subcommands draw a progress line on
	// stderr.
	progress bool

	nc    *nats.Conn
	js    jetstream.JetStream
	store objectstore.Store
}

// adminCommand runs `sediment admin` with args and returns the exit code.
func adminCommand(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return adminMain(ctx, args, os.Getenv, os.Stdout, os.Stderr, isTerminal(os.Stderr))
}

// isTerminal reports whether f is a character device, such as a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// adminMain runs one admin subcommand. It returns 0 on success, 1 when the
// subcommand failed or found problems, and 2 for bad usage.
func adminMain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, progress bool) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, adminUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	name := args[0]
	args = args[1:]
	if name == "manifest" {
		if len(args) == 0 || (args[0] != "history" && args[0] != "show") {
			fmt.Fprintf(stderr, "sediment admin: manifest needs 'history' or 'show'\n\n%s", adminUsage)
			return 2
		}
		name, args = "manifest "+args[0], args[1:]
	}
	run, ok := adminCommands[name]
	if !ok {
		fmt.Fprintf(stderr, "sediment admin: unknown subcommand %q\n\n%s", name, adminUsage)
		return 2
	}
	cfg, rest, err := parseAdminFlags(name, args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment admin %s: %v\n", name, err)
		return 2
	}
	a := &admin{cfg: cfg, stdout: stdout, stderr: stderr, now: time.Now, progress: progress}
	defer a.close()
	rep, err := run(ctx, a, rest)
	if err == nil {
		err = a.write(rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sediment admin %s: %v\n", name, err)
		return 1
	}
	if f, ok := rep.(interface{ failed() bool }); ok && f.failed() {
		return 1
	}
	return 0
}

// report is a subcommand's result: JSON-encodable, and printable as text.
type report interface {
	text(w io.Writer) error
}

// adminCommands maps each subcommand to its function, which gets the
// positional arguments left after the flags.
var adminCommands = map[string]func(ctx context.Context, a *admin, args []string) (report, error){
	"status":           adminStatus,
	"tables":           adminTables,
	"sstables":         adminSSTables,
	"manifest history": adminHistory,
	"manifest show":    adminShow,
	"restore":          adminRestore,
	"verify":           adminVerify,
	"flush":            adminFlush,
	"compact":          adminCompact,
	"getendpoints":     adminGetEndpoints,
	"removenode":       adminRemoveNode,
	"snapshot":         adminSnapshot,
	"snapshots":        adminSnapshots,
	"clearsnapshot":    adminClearSnapshot,
	"restore-snapshot": adminRestoreSnapshot,
	"tablestats":       adminTableStats,
	"compactionstats":  adminCompactionStats,
	"info":             adminInfo,
	"tpstats":          adminTPStats,
}

// parseAdminFlags parses the flags of subcommand name, which may follow its
// positional arguments, and returns the positional ones. The node's flags,
// its YAML file (-config.file) and its SEDIMENT_* variables from getenv
// configure the admin as they configure a node (Config.LoadFlags).
func parseAdminFlags(name string, args []string, getenv func(string) string, output io.Writer) (adminConfig, []string, error) {
	var c adminConfig
	f := subcommandFlags("sediment admin "+name, fmt.Sprintf("Usage: sediment admin %s [flags]\n\nThe node's flags, -config.file and SEDIMENT_* variables apply as for a node.\n\n", name), output)
	f.BoolVar(&c.JSON, "json", false, "Print JSON instead of text.")
	switch name {
	case "restore":
		f.BoolVar(&c.Yes, "yes", false, "Restore even when NATS already holds catalog state.")
	case "sstables", "snapshot", "snapshots", "clearsnapshot", "tablestats", "compactionstats":
		f.StringVar(&c.Table, "table", "", "Only this table (keyspace.table).")
		if name == "tablestats" {
			f.StringVar(&c.From, "from", "", "Comma-separated HTTP addresses (host:port) of frontends whose read and write latency per table to show.")
		}
	case "restore-snapshot":
		f.StringVar(&c.Table, "table", "", "Only this table (keyspace.table).")
		f.BoolVar(&c.Yes, "yes", false, "Discard every write made to the tables since the snapshot.")
	case "flush":
		f.DurationVar(&c.MaxAge, "max-heartbeat-age", 15*time.Second, "Heartbeat age beyond which an ingest member is skipped as not live.")
		f.DurationVar(&c.Timeout, "timeout", 5*time.Minute, "How long each node may take to flush (0: no bound).")
	case "compact":
		f.StringVar(&c.Table, "table", "", "Only this table (keyspace.table); default every table.")
		f.BoolVar(&c.Wait, "wait", true, "Wait until the compaction is done, showing progress, and report the SSTables before and after.")
		f.DurationVar(&c.Timeout, "timeout", 0, "How long -wait waits (0: no bound); the request stands when it gives up.")
	case "manifest history":
		f.IntVar(&c.Limit, "limit", 20, "Versions to show, newest first (0: all).")
	case "tpstats":
		f.StringVar(&c.From, "from", "", "Comma-separated HTTP addresses (host:port) of the processes to ask; default this node's -http.listen-address.")
	case "status", "getendpoints", "removenode", "info":
		f.DurationVar(&c.MaxAge, "max-heartbeat-age", 15*time.Second, "Heartbeat age beyond which a member is reported unhealthy.")
	}
	pos, err := c.LoadFlags(f, args, getenv)
	if err != nil {
		return c, nil, err
	}
	if c.Limit < 0 {
		return c, nil, fmt.Errorf("-limit %d is negative", c.Limit)
	}
	if c.Timeout < 0 {
		return c, nil, fmt.Errorf("-timeout %s is negative", c.Timeout)
	}
	return c, pos, c.Config.Validate()
}

// natsURL is the configured NATS, or the embedded one of an all-in-one node
// on this machine.
func (c *adminConfig) natsURL() string {
	if c.Manifest.NATSURL != "" {
		return c.Manifest.NATSURL
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", c.Manifest.EmbeddedPort)
}

// natsConfig is the manifest configuration to connect with: for the
// embedded NATS of an all-in-one node, with the password it keeps under
// the data directory.
func (c *adminConfig) natsConfig() manifest.Config {
	cfg := c.Manifest
	if cfg.NATSURL == "" && cfg.User == "" {
		dir := cfg.EmbeddedDir
		if dir == "" {
			dir = filepath.Join(c.DataDir, "nats")
		}
		cfg.User, cfg.PasswordFile = manifest.EmbeddedUser, manifest.EmbeddedPasswordFile(dir)
	}
	return cfg
}

// connect dials NATS, and opens the bucket when withStore is set.
func (a *admin) connect(ctx context.Context, withStore bool) error {
	if a.js == nil {
		cfg := a.cfg.natsConfig()
		cfg.MaxAttempts = max(cfg.MaxAttempts, 1)
		nc, err := cfg.Connect(a.cfg.natsURL())
		if err != nil {
			return fmt.Errorf("%w\nIs the cluster's NATS running there? Point the admin at it as a node is configured: -manifest.nats-url, $SEDIMENT_MANIFEST_NATS_URL or manifest.nats_url in -config.file (without one: the embedded NATS of an all-in-one node on -manifest.embedded-port)", err)
		}
		a.nc = nc
		if a.js, err = jetstream.New(nc); err != nil {
			return err
		}
	}
	if withStore && a.store == nil {
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		store, err := objectstore.New(ctx, a.cfg.ObjectStore, prometheus.NewRegistry(), logger)
		if err != nil {
			return err
		}
		a.store = store
	}
	return nil
}

// open connects and opens the cluster's catalog.
func (a *admin) open(ctx context.Context) (*manifest.Manifest, error) {
	if err := a.connect(ctx, true); err != nil {
		return nil, err
	}
	opts := a.cfg.Manifest.Options()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return manifest.Open(ctx, a.js, a.store, a.cfg.Manifest.ClusterName, opts)
}

// subcommandFlags is the flag set of subcommand name (bench, load, unload,
// admin …): its errors and -help go to output, as usage and then the flags.
func subcommandFlags(name, usage string, output io.Writer) *flag.FlagSet {
	f := flag.NewFlagSet(name, flag.ContinueOnError)
	f.SetOutput(output)
	f.Usage = func() {
		fmt.Fprint(output, usage)
		f.PrintDefaults()
	}
	return f
}

// noArgs refuses the arguments of a subcommand that takes none.
func noArgs(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// rangeCount is m's number of token ranges, 0 before the first ingest node
// has set it.
func rangeCount(ctx context.Context, m *manifest.Manifest) (int, error) {
	n, err := m.RangeCount(ctx)
	if errors.Is(err, manifest.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// rangeOwnerships is the ownership of each of m's token ranges (the zero
// Ownership for one never assigned).
func rangeOwnerships(ctx context.Context, m *manifest.Manifest) ([]manifest.Ownership, error) {
	n, err := rangeCount(ctx, m)
	if err != nil {
		return nil, err
	}
	owners := make([]manifest.Ownership, n)
	for r := range n {
		o, err := m.Ownership(ctx, r)
		if err != nil && !errors.Is(err, manifest.ErrNotFound) {
			return nil, err
		}
		owners[r] = o
	}
	return owners, nil
}

// openSchema opens the cluster's catalog and reads its schema.
func (a *admin) openSchema(ctx context.Context) (*manifest.Manifest, *manifest.Schema, error) {
	m, err := a.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := m.Schema(ctx)
	if err != nil {
		return nil, nil, err
	}
	return m, s, nil
}

func (a *admin) close() {
	if a.nc != nil {
		a.nc.Close()
	}
}

func (a *admin) write(rep report) error {
	if a.cfg.JSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.text(a.stdout)
}

// table writes rows as aligned columns.
func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// StatusReport is the result of `admin status`.
type StatusReport struct {
	Cluster       string         `json:"cluster"`
	SchemaVersion uuid.UUID      `json:"schema_version"`
	Members       []MemberStatus `json:"members"`
	Ranges        []RangeStatus  `json:"ranges"`
}

// MemberStatus is one member and the age of its last heartbeat.
type MemberStatus struct {
	ID           string    `json:"id"`
	Roles        []string  `json:"roles"`
	Addr         string    `json:"addr"`
	Heartbeat    time.Time `json:"heartbeat"`
	HeartbeatAge float64   `json:"heartbeat_age_seconds"`
	Healthy      bool      `json:"healthy"`
}

// RangeStatus is one token range and its owner ("" when unowned).
type RangeStatus struct {
	Range      int    `json:"range"`
	FirstToken int64  `json:"first_token"`
	LastToken  int64  `json:"last_token"`
	Owner      string `json:"owner"`
	Epoch      uint64 `json:"epoch"`
}

func adminStatus(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	m, s, err := a.openSchema(ctx)
	if err != nil {
		return nil, err
	}
	rep := &StatusReport{Cluster: m.Cluster(), SchemaVersion: s.Version, Members: []MemberStatus{}, Ranges: []RangeStatus{}}
	mems, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}
	now := a.now()
	for _, mem := range mems {
		rep.Members = append(rep.Members, MemberStatus{
			ID: mem.ID, Roles: mem.Roles, Addr: mem.Addr, Heartbeat: mem.Heartbeat,
			HeartbeatAge: now.Sub(mem.Heartbeat).Seconds(),
			Healthy:      mem.Live(now, a.cfg.MaxAge),
		})
	}
	owners, err := rangeOwnerships(ctx, m)
	if err != nil {
		return nil, err
	}
	for r, o := range owners {
		first, last := manifest.RangeBounds(r, len(owners))
		rep.Ranges = append(rep.Ranges, RangeStatus{Range: r, FirstToken: first, LastToken: last, Owner: o.Owner, Epoch: o.Epoch})
	}
	return rep, nil
}

func (r *StatusReport) text(w io.Writer) error {
	fmt.Fprintf(w, "cluster %s, schema version %s\n\n", r.Cluster, r.SchemaVersion)
	var rows [][]string
	for _, m := range r.Members {
		health := "healthy"
		if !m.Healthy {
			health = "STALE"
		}
		rows = append(rows, []string{m.ID, strings.Join(m.Roles, ","), m.Addr, fmt.Sprintf("%.1fs", m.HeartbeatAge), health})
	}
	if err := table(w, "MEMBER\tROLES\tADDRESS\tHEARTBEAT AGE\tHEALTH", rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, rg := range r.Ranges {
		owner := rg.Owner
		if owner == "" {
			owner = "(none)"
		}
		rows = append(rows, []string{strconv.Itoa(rg.Range), strconv.FormatInt(rg.FirstToken, 10), strconv.FormatInt(rg.LastToken, 10), owner, strconv.FormatUint(rg.Epoch, 10)})
	}
	return table(w, "RANGE\tFIRST TOKEN\tLAST TOKEN\tOWNER\tEPOCH", rows)
}

// TablesReport is the result of `admin tables`.
type TablesReport struct {
	Tables []TableStatus `json:"tables"`
}

// TableStatus is one table and the size of its live SSTables.
type TableStatus struct {
	Keyspace string    `json:"keyspace"`
	Table    string    `json:"table"`
	ID       uuid.UUID `json:"id"`
	SSTables int       `json:"sstables"`
	Bytes    int64     `json:"bytes"`
}

// schemaTables returns every table of s, sorted by keyspace and name.
func schemaTables(s *manifest.Schema) []TableStatus {
	var out []TableStatus
	for _, t := range s.Tables() {
		out = append(out, TableStatus{Keyspace: t.Keyspace, Table: t.Name, ID: t.ID})
	}
	return out
}

func adminTables(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	m, _, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	rep := &TablesReport{Tables: tables}
	for i := range rep.Tables {
		ssts, err := m.SSTables(ctx, rep.Tables[i].ID)
		if err != nil {
			return nil, err
		}
		rep.Tables[i].SSTables = len(ssts)
		for _, sst := range ssts {
			rep.Tables[i].Bytes += sst.Size
		}
	}
	if rep.Tables == nil {
		rep.Tables = []TableStatus{}
	}
	return rep, nil
}

func (r *TablesReport) text(w io.Writer) error {
	var rows [][]string
	for _, t := range r.Tables {
		rows = append(rows, []string{t.Keyspace, t.Table, t.ID.String(), strconv.Itoa(t.SSTables), strconv.FormatInt(t.Bytes, 10)})
	}
	return table(w, "KEYSPACE\tTABLE\tID\tSSTABLES\tBYTES", rows)
}

// SSTablesReport is the result of `admin sstables`.
type SSTablesReport struct {
	Tables []TableSSTables `json:"tables"`
}

// TableSSTables groups one table's SSTables by level and range.
type TableSSTables struct {
	Keyspace string       `json:"keyspace"`
	Table    string       `json:"table"`
	ID       uuid.UUID    `json:"id"`
	Groups   []LevelRange `json:"groups"`
}

// LevelRange is the SSTables of one table in one level and token range.
type LevelRange struct {
	Level    int                `json:"level"`
	Range    int                `json:"range"`
	Count    int                `json:"count"`
	Bytes    int64              `json:"bytes"`
	SSTables []manifest.SSTable `json:"sstables"`
}

// chosenTables opens the manifest and returns its schema and the schema's
// tables, or, for the subcommands with a -table flag, only the one it names.
func (a *admin) chosenTables(ctx context.Context) (*manifest.Manifest, *manifest.Schema, []TableStatus, error) {
	m, s, err := a.openSchema(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	tables := schemaTables(s)
	if a.cfg.Table != "" {
		tables = slices.DeleteFunc(tables, func(t TableStatus) bool { return t.Keyspace+"."+t.Table != a.cfg.Table })
		if len(tables) == 0 {
			return nil, nil, nil, fmt.Errorf("no table %q", a.cfg.Table)
		}
	}
	return m, s, tables, nil
}

func adminSSTables(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	m, _, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	n, err := rangeCount(ctx, m)
	if err != nil {
		return nil, err
	}
	rep := &SSTablesReport{Tables: []TableSSTables{}}
	for _, t := range tables {
		ssts, err := m.SSTables(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		ts := TableSSTables{Keyspace: t.Keyspace, Table: t.Table, ID: t.ID, Groups: []LevelRange{}}
		groups := map[[2]int]*LevelRange{}
		for _, sst := range ssts {
			// Every SSTable lies inside one range (manifest.Commit).
			k := [2]int{sst.Level, manifest.RangeOf(sst.MinToken, max(n, 1))}
			g := groups[k]
			if g == nil {
				g = &LevelRange{Level: k[0], Range: k[1]}
				groups[k] = g
			}
			g.Count++
			g.Bytes += sst.Size
			g.SSTables = append(g.SSTables, sst)
		}
		for _, g := range groups {
			ts.Groups = append(ts.Groups, *g)
		}
		sort.Slice(ts.Groups, func(i, j int) bool {
			gi, gj := ts.Groups[i], ts.Groups[j]
			return gi.Level < gj.Level || gi.Level == gj.Level && gi.Range < gj.Range
		})
		rep.Tables = append(rep.Tables, ts)
	}
	return rep, nil
}

func (r *SSTablesReport) text(w io.Writer) error {
	for _, t := range r.Tables {
		fmt.Fprintf(w, "%s.%s (%s)\n", t.Keyspace, t.Table, t.ID)
		for _, g := range t.Groups {
			fmt.Fprintf(w, "  level %d, range %d: %d SSTables, %d bytes\n", g.Level, g.Range, g.Count, g.Bytes)
			var rows [][]string
			for _, s := range g.SSTables {
				rows = append(rows, []string{"   ", s.Key, strconv.FormatInt(s.Size, 10),
					fmt.Sprintf("%d..%d", s.MinToken, s.MaxToken),
					fmt.Sprintf("%s..%s", microTime(s.MinTimestamp), microTime(s.MaxTimestamp)),
					s.Created.UTC().Format(time.RFC3339)})
			}
			if err := table(w, "   \tKEY\tSIZE\tTOKENS\tWRITE TIMES\tCREATED", rows); err != nil {
				return err
			}
		}
	}
	return nil
}

// microTime formats a write timestamp in microseconds since the epoch.
func microTime(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// HistoryReport is the result of `admin manifest history`.
type HistoryReport struct {
	Versions []ArchivedVersion `json:"versions"`
}

// ArchivedVersion is one archived version of one catalog key.
type ArchivedVersion struct {
	Object   string    `json:"object"`
	Bucket   string    `json:"bucket"`
	Key      string    `json:"key"`
	Version  uint64    `json:"version"`
	Size     int64     `json:"size"`
	Archived time.Time `json:"archived"`
}

// parseArchived splits an archive object key (manifest/archive.go).
func parseArchived(a objectstore.Attrs) (ArchivedVersion, error) {
	parts := strings.Split(strings.TrimPrefix(a.Key, adminArchivePrefix), "/")
	if !strings.HasPrefix(a.Key, adminArchivePrefix) || len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return ArchivedVersion{}, fmt.Errorf("not a manifest archive object: %q", a.Key)
	}
	v, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || v == 0 {
		return ArchivedVersion{}, fmt.Errorf("not a manifest archive object: %q", a.Key)
	}
	return ArchivedVersion{Object: a.Key, Bucket: parts[0], Key: parts[1], Version: v, Size: a.Size, Archived: a.ModTime.UTC()}, nil
}

func adminHistory(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	if err := a.connect(ctx, true); err != nil {
		return nil, err
	}
	prefix := adminArchivePrefix + a.cfg.Manifest.ClusterName + "_"
	rep := &HistoryReport{Versions: []ArchivedVersion{}}
	err := a.store.List(ctx, prefix, func(at objectstore.Attrs) error {
		v, err := parseArchived(at)
		if err != nil {
			return err
		}
		rep.Versions = append(rep.Versions, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Newest first; versions of one key in descending order.
	slices.SortStableFunc(rep.Versions, func(x, y ArchivedVersion) int {
		if c := y.Archived.Compare(x.Archived); c != 0 {
			return c
		}
		return strings.Compare(y.Object, x.Object)
	})
	if a.cfg.Limit > 0 && len(rep.Versions) > a.cfg.Limit {
		rep.Versions = rep.Versions[:a.cfg.Limit]
	}
	return rep, nil
}

func (r *HistoryReport) text(w io.Writer) error {
	var rows [][]string
	for _, v := range r.Versions {
		rows = append(rows, []string{v.Archived.Format(time.RFC3339), v.Bucket, v.Key, strconv.FormatUint(v.Version, 10), v.Object})
	}
	return table(w, "ARCHIVED\tBUCKET\tKEY\tVERSION\tOBJECT", rows)
}

// ShowReport is the result of `admin manifest show`: one archived version.
type ShowReport struct {
	ArchivedVersion
	Deleted bool            `json:"deleted"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// archiveObject names the archive object that arg means: an object key, or
// <bucket>/<key>/<version> with an unpadded version.
func archiveObject(arg string) (string, error) {
	arg = strings.TrimPrefix(arg, adminArchivePrefix)
	parts := strings.Split(arg, "/")
	if len(parts) != 3 {
		return "", fmt.Errorf("%q is not an archive object nor <bucket>/<key>/<version>", arg)
	}
	v, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || v == 0 {
		return "", fmt.Errorf("%q: bad version %q", arg, parts[2])
	}
	return fmt.Sprintf("%s%s/%s/%020d", adminArchivePrefix, parts[0], parts[1], v), nil
}

func adminShow(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) != 1 {
		return nil, errors.New("want one archive object (see manifest history)")
	}
	key, err := archiveObject(args[0])
	if err != nil {
		return nil, err
	}
	if err := a.connect(ctx, true); err != nil {
		return nil, err
	}
	at, err := a.store.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	r, err := a.store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(r)
	r.Close() //nolint:errcheck // read-only
	if err != nil {
		return nil, err
	}
	v, err := parseArchived(at)
	if err != nil {
		return nil, err
	}
	var env struct {
		Version uint64          `json:"version"`
		Deleted bool            `json:"deleted"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("%s: corrupt archived value: %w", key, err)
	}
	if env.Version != v.Version {
		return nil, fmt.Errorf("%s: holds version %d", key, env.Version)
	}
	return &ShowReport{ArchivedVersion: v, Deleted: env.Deleted, Data: env.Data}, nil
}

func (r *ShowReport) text(w io.Writer) error {
	fmt.Fprintf(w, "object   %s\nbucket   %s\nkey      %s\nversion  %d\narchived %s\n", r.Object, r.Bucket, r.Key, r.Version, r.Archived.Format(time.RFC3339))
	if r.Deleted {
		_, err := fmt.Fprintln(w, "deleted (tombstone)")
		return err
	}
	out, err := json.MarshalIndent(r.Data, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\n%s\n", out)
	return err
}

// RestoreReport is the result of `admin restore`.
type RestoreReport struct {
	Buckets int `json:"buckets"` // buckets found in the archive
	Keys    int `json:"keys"`    // keys written to NATS
	Present int `json:"present"` // keys NATS already held with the archived value
}

func (r *RestoreReport) text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "restored %d buckets: %d keys written, %d already present\n", r.Buckets, r.Keys, r.Present)
	return err
}

// restoredKinds are the catalog buckets the archive holds (manifest.go's
// archivedKinds).
var restoredKinds = []string{"schema", "sstables", "ownership", "roles"}

func adminRestore(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	if err := a.connect(ctx, true); err != nil {
		return nil, err
	}
	if !a.cfg.Yes {
		for _, kind := range restoredKinds {
			name := a.cfg.Manifest.ClusterName + "_" + kind
			kv, err := a.js.KeyValue(ctx, name)
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			keys, err := kv.ListKeys(ctx)
			if err != nil {
				return nil, err
			}
			for range keys.Keys() {
				keys.Stop() //nolint:errcheck // one key is enough
				return nil, fmt.Errorf("NATS already holds catalog state (bucket %s); pass -yes to restore over it", name)
			}
		}
	}
	st, err := manifest.Restore(ctx, a.store, a.js)
	if err != nil {
		return nil, err
	}
	return &RestoreReport{Buckets: st.Buckets, Keys: st.Keys, Present: st.Present}, nil
}

// VerifyReport is the result of `admin verify`.
type VerifyReport struct {
	SSTables int             `json:"sstables"`
	Bytes    int64           `json:"bytes"`
	Problems []VerifyProblem `json:"problems"`
}

// VerifyProblem is one SSTable that is missing or does not read back.
type VerifyProblem struct {
	Table  string `json:"table"`
	Object string `json:"object"`
	Error  string `json:"error"`
}

func (r *VerifyReport) failed() bool { return len(r.Problems) > 0 }

func (r *VerifyReport) text(w io.Writer) error {
	fmt.Fprintf(w, "verified %d SSTables, %d bytes: %d problems\n", r.SSTables, r.Bytes, len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "%s %s: %s\n", p.Table, p.Object, p.Error)
	}
	return nil
}

func adminVerify(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	m, _, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	type item struct {
		table string
		sst   manifest.SSTable
	}
	var items []item
	var total int64
	for _, t := range tables {
		ssts, err := m.SSTables(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		for _, sst := range ssts {
			items = append(items, item{t.Keyspace + "." + t.Table, sst})
			total += sst.Size
		}
	}
	rep := &VerifyReport{Problems: []VerifyProblem{}}
	for _, it := range items {
		if err := verifySSTable(ctx, a.store, it.sst); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Problems = append(rep.Problems, VerifyProblem{Table: it.table, Object: it.sst.Key, Error: err.Error()})
		}
		rep.SSTables++
		rep.Bytes += it.sst.Size
		if a.progress {
			fmt.Fprintf(a.stderr, "\rverify: %d/%d SSTables, %d/%d bytes, %d problems", rep.SSTables, len(items), rep.Bytes, total, len(rep.Problems))
		}
	}
	if a.progress {
		fmt.Fprintln(a.stderr)
	}
	return rep, nil
}

// verifySSTable checks that sst exists with its catalog size and reads every
// entry, which checks every block's checksum.
func verifySSTable(ctx context.Context, store objectstore.Store, sst manifest.SSTable) error {
	ra, err := objectstore.NewReaderAt(ctx, store, sst.Key)
	if err != nil {
		return err
	}
	if ra.Size() != sst.Size {
		return fmt.Errorf("size %d, the catalog says %d", ra.Size(), sst.Size)
	}
	r, err := tablestore.OpenAt(ctx, ra, ra.Size(), 0)
	if err != nil {
		return err
	}
	it := r.NewIter(ctx, nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// FlushReport is the result of `admin flush`.
type FlushReport struct {
	Nodes []NodeFlush `json:"nodes"`
	// Skipped lists the ingest members whose heartbeat is too old to call:
	// their unflushed writes stay in their commitlogs.
	Skipped []string `json:"skipped"`
}

// NodeFlush is one ingest node's flush.
type NodeFlush struct {
	ID       string  `json:"id"`
	Addr     string  `json:"addr"`
	OK       bool    `json:"ok"`
	Error    string  `json:"error,omitempty"`
	Duration float64 `json:"duration_seconds"`
}

func (r *FlushReport) failed() bool {
	return slices.ContainsFunc(r.Nodes, func(n NodeFlush) bool { return !n.OK })
}

func (r *FlushReport) text(w io.Writer) error {
	var rows [][]string
	for _, n := range r.Nodes {
		outcome := "ok"
		if !n.OK {
			outcome = "FAILED: " + n.Error
		}
		rows = append(rows, []string{n.ID, n.Addr, fmt.Sprintf("%.3fs", n.Duration), outcome})
	}
	if err := table(w, "NODE\tADDRESS\tDURATION\tOUTCOME", rows); err != nil {
		return err
	}
	for _, id := range r.Skipped {
		fmt.Fprintf(w, "skipped %s: heartbeat older than -max-heartbeat-age\n", id)
	}
	return nil
}

// adminFlush asks every live ingest node, at the RPC address it announces,
// to flush its memtables, all at once, and reports how each went.
func adminFlush(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("unexpected argument %q (a flush is of whole nodes: memtables hold every table)", args[0])
	}
	m, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	mems, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}
	rep := &FlushReport{Nodes: []NodeFlush{}, Skipped: []string{}}
	now := a.now()
	for _, mem := range mems {
		switch {
		case !slices.Contains(mem.Roles, Ingest):
		case !mem.Live(now, a.cfg.MaxAge):
			rep.Skipped = append(rep.Skipped, mem.ID)
		default:
			rep.Nodes = append(rep.Nodes, NodeFlush{ID: mem.ID, Addr: mem.Addr})
		}
	}
	if len(rep.Nodes) == 0 {
		return nil, errors.New("no live ingest node to flush")
	}
	type result struct {
		i   int
		err error
		d   time.Duration
	}
	opts := rpc.Options{Conns: 1}
	if a.cfg.ClusterTLS.Enabled() {
		id, err := clustertls.Load(a.cfg.ClusterTLS, nil)
		if err != nil {
			return nil, err
		}
		opts.TLS = id.Client
	}
	results := make(chan result, len(rep.Nodes))
	for i, n := range rep.Nodes {
		go func() {
			ctx := ctx
			if a.cfg.Timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, a.cfg.Timeout)
				defer cancel()
			}
			c := rpc.Dial(n.Addr, opts)
			defer c.Close()
			start := time.Now()
			err := c.Flush(ctx)
			results <- result{i, err, time.Since(start)}
		}()
	}
	failed := 0
	for done := 1; done <= len(rep.Nodes); done++ {
		r := <-results
		n := &rep.Nodes[r.i]
		n.OK, n.Duration = r.err == nil, r.d.Seconds()
		if r.err != nil {
			n.Error = r.err.Error()
			failed++
		}
		if a.progress {
			fmt.Fprintf(a.stderr, "\rflush: %d/%d nodes done, %d failed", done, len(rep.Nodes), failed)
		}
	}
	if a.progress {
		fmt.Fprintln(a.stderr)
	}
	return rep, nil
}

// CompactReport is the result of `admin compact`.
type CompactReport struct {
	Tables []TableCompaction `json:"tables"`
}

// TableCompaction is one table's compaction request and, with -wait, its
// SSTables before and after.
type TableCompaction struct {
	Keyspace    string         `json:"keyspace"`
	Table       string         `json:"table"`
	ID          uuid.UUID      `json:"id"`
	Request     uuid.UUID      `json:"request"`
	RequestedAt time.Time      `json:"requested_at"`
	DoneAt      time.Time      `json:"done_at,omitzero"`
	Before      SSTableTotals  `json:"before"`
	After       *SSTableTotals `json:"after,omitempty"`
}

// SSTableTotals counts a table's live SSTables.
type SSTableTotals struct {
	SSTables int   `json:"sstables"`
	Bytes    int64 `json:"bytes"`
}

func (r *CompactReport) text(w io.Writer) error {
	var rows [][]string
	for _, t := range r.Tables {
		row := []string{t.Keyspace + "." + t.Table, t.Request.String(), strconv.Itoa(t.Before.SSTables), strconv.FormatInt(t.Before.Bytes, 10)}
		if t.After != nil {
			row = append(row, strconv.Itoa(t.After.SSTables), strconv.FormatInt(t.After.Bytes, 10), "done")
		} else {
			row = append(row, "-", "-", "requested")
		}
		rows = append(rows, row)
	}
	return table(w, "TABLE\tREQUEST\tSSTABLES BEFORE\tBYTES BEFORE\tSSTABLES AFTER\tBYTES AFTER\tSTATE", rows)
}

// compactPoll is how often `admin compact -wait` reads the manifest.
const compactPoll = 200 * time.Millisecond

// adminCompact requests a major compaction of the chosen tables, one
// request per table that the compaction planner serves, and with -wait
// follows it until the planner marks every request done.
func adminCompact(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	m, _, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	rep := &CompactReport{Tables: []TableCompaction{}}
	for _, t := range tables {
		before, err := sstableTotals(ctx, m, t.ID)
		if err != nil {
			return nil, err
		}
		req, err := m.RequestCompaction(ctx, t.ID)
		if err != nil {
			return nil, fmt.Errorf("request the compaction of %s.%s: %w", t.Keyspace, t.Table, err)
		}
		rep.Tables = append(rep.Tables, TableCompaction{Keyspace: t.Keyspace, Table: t.Table, ID: t.ID,
			Request: req.ID, RequestedAt: req.RequestedAt, Before: before})
	}
	if !a.cfg.Wait {
		return rep, nil
	}
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
	}
	tick := time.NewTicker(compactPoll)
	defer tick.Stop()
	giveUp := func() error {
		if a.progress {
			fmt.Fprintln(a.stderr)
		}
		return fmt.Errorf("gave up waiting: %w; the requests stand and the planner goes on, if a compactor runs (role compactor in 'sediment admin status'); 'sediment admin compact' again follows them", ctx.Err())
	}
	for {
		pr, err := compactProgress(ctx, m, rep)
		if err != nil && ctx.Err() != nil {
			return nil, giveUp() // the deadline fell within a read
		}
		if err != nil {
			return nil, err
		}
		if a.progress {
			fmt.Fprintf(a.stderr, "\rcompact: %d/%d tables done, %d/%d ranges compacted, %d SSTables left   ",
				pr.tablesDone, len(rep.Tables), pr.rangesDone, pr.ranges, pr.left)
		}
		if pr.tablesDone == len(rep.Tables) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, giveUp()
		case <-tick.C:
		}
	}
	if a.progress {
		fmt.Fprintln(a.stderr)
	}
	for i := range rep.Tables {
		after, err := sstableTotals(ctx, m, rep.Tables[i].ID)
		if err != nil {
			return nil, err
		}
		rep.Tables[i].After = &after
	}
	return rep, nil
}

func sstableTotals(ctx context.Context, m *manifest.Manifest, table uuid.UUID) (SSTableTotals, error) {
	ssts, err := m.SSTables(ctx, table)
	if err != nil {
		return SSTableTotals{}, err
	}
	tot := SSTableTotals{SSTables: len(ssts)}
	for _, s := range ssts {
		tot.Bytes += s.Size
	}
	return tot, nil
}

type compactionProgress struct {
	tablesDone, ranges, rangesDone, left int
}

// compactProgress reads the requests of rep, recording when each is done,
// and counts the ranges the planner has yet to compact and their
// SSTables, by the rule it applies (compactor.Compacted).
func compactProgress(ctx context.Context, m *manifest.Manifest, rep *CompactReport) (compactionProgress, error) {
	n, err := rangeCount(ctx, m)
	if err != nil {
		return compactionProgress{}, err
	}
	var pr compactionProgress
	for i := range rep.Tables {
		t := &rep.Tables[i]
		pr.ranges += n
		if t.DoneAt.IsZero() {
			req, err := m.CompactionRequest(ctx, t.ID)
			switch {
			case errors.Is(err, manifest.ErrNotFound):
				return pr, fmt.Errorf("the compaction request of %s.%s is gone: was the table dropped?", t.Keyspace, t.Table)
			case err != nil:
				return pr, err
			case req.ID != t.Request && req.RequestedAt.Before(t.RequestedAt):
				return pr, fmt.Errorf("the compaction request of %s.%s was replaced by an older one", t.Keyspace, t.Table)
			case req.Done():
				// This request, or a later one that covers it.
				t.DoneAt = req.DoneAt
			}
		}
		if !t.DoneAt.IsZero() {
			pr.tablesDone++
			pr.rangesDone += n
			continue
		}
		ssts, err := m.SSTables(ctx, t.ID)
		if err != nil {
			return pr, err
		}
		byRange := map[int][]manifest.SSTable{}
		for _, s := range ssts {
			r := manifest.RangeOf(s.MinToken, max(n, 1))
			byRange[r] = append(byRange[r], s)
		}
		done := n - len(byRange)
		for _, ts := range byRange {
			if compactor.Compacted(ts, t.RequestedAt) {
				done++
			} else {
				pr.left += len(ts)
			}
		}
		pr.rangesDone += done
		if done == n {
			// Every range meets the planner's rule: the request is done
			// now, though the planner would mark it so only at its next
			// pass (-compactor.plan-interval, 10 s by default). The
			// admin marks it itself, under the same compare-and-set.
			if err := m.FinishCompactionRequest(ctx, t.ID, t.Request); err != nil {
				return pr, err
			}
			req, err := m.CompactionRequest(ctx, t.ID)
			if err != nil {
				return pr, err
			}
			if req.Done() {
				t.DoneAt = req.DoneAt
				pr.tablesDone++
			}
		}
	}
	return pr, nil
}
