package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/tracing"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/manifest"
)

// Config is what an Executor works with.
type Config struct {
	// Engine reads and writes rows.
	Engine engine.Engine
	// Manifest takes DDL; View is the schema statements are planned
	// against, and the source of the system tables.
	Manifest *manifest.Manifest
	View     *manifest.View
	// Local describes this frontend in system.local and, for the others,
	// in system.peers.
	Local Node
	// MemberMaxAge is how recent a frontend's heartbeat must be for it
	// to be listed as a peer (default 30s).
	MemberMaxAge time.Duration
	// PreparedCacheSize bounds the prepared statements kept (default
	// 10000); the least recently used go first.
	PreparedCacheSize int
	// Auth authenticates and authorizes with the catalog's roles; nil
	// allows everything (Cassandra's AllowAllAuthenticator).
	Auth *Auth
	// Batch holds the batch thresholds; zero fields take the defaults.
	Batch BatchLimits
	// Guardrails are the query guardrails; the zero value takes the
	// defaults.
	Guardrails Guardrails
	// Timeouts are the server-side request timeouts; the zero value
	// takes the defaults.
	Timeouts Timeouts
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Registerer receives the executor's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Traces holds the traced requests system_traces shows; nil shows
	// none.
	Traces *tracing.Store
}

// Node is how a frontend presents itself to drivers.
type Node struct {
	// HostID identifies the frontend (system.local host_id).
	HostID uuid.UUID
	// ClusterName, DataCenter and Rack as drivers show them.
	ClusterName, DataCenter, Rack string
	// Addr is the CQL address clients connect to (host:port).
	Addr string
}

// Executor runs CQL statements. It is safe for concurrent use by every
// connection of a server.
type Executor struct {
	cfg      Config
	eng      engine.Engine
	manifest *manifest.Manifest
	view     *manifest.View
	now      func() time.Time
	log      *slog.Logger

	prepared *preparedCache
	clock    atomic.Int64 // the last write timestamp handed out (µs)

	layoutMu      sync.Mutex
	layoutVersion uuid.UUID
	layouts       map[*manifest.Table]*tableLayout

	// tableLatency times the reads and writes of each table (tablePlan).
	tableLatency *prometheus.HistogramVec
}

// A tablePlan reads or writes one table: its executions are timed per
// table, as nodetool tablestats reports read and write latency.
type tablePlan interface {
	// tableOp returns the table's keyspace and name and "read" or "write".
	tableOp() (keyspace, table, op string)
}

func (p *selectPlan) tableOp() (string, string, string) { return p.t.keyspace, p.t.table.Name, "read" }
func (p *modPlan) tableOp() (string, string, string) {
	return p.layout.keyspace, p.layout.table.Name, "write"
}

// New returns an Executor.
func New(cfg Config) (*Executor, error) {
	if cfg.Engine == nil || cfg.View == nil || cfg.Manifest == nil {
		return nil, errors.New("exec: Config needs an Engine, a Manifest and a View")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PreparedCacheSize <= 0 {
		cfg.PreparedCacheSize = 10000
	}
	cfg.Batch = cfg.Batch.withDefaults()
	if cfg.Guardrails == (Guardrails{}) {
		cfg.Guardrails = DefaultGuardrails()
	}
	if cfg.Timeouts == (Timeouts{}) {
		cfg.Timeouts = DefaultTimeouts()
	}
	if cfg.MemberMaxAge <= 0 {
		cfg.MemberMaxAge = 30 * time.Second
	}
	if cfg.Local.HostID == uuid.Nil {
		cfg.Local.HostID = uuid.New()
	}
	if cfg.Local.DataCenter == "" {
		cfg.Local.DataCenter = "datacenter1"
	}
	if cfg.Local.Rack == "" {
		cfg.Local.Rack = "rack1"
	}
	if cfg.Local.ClusterName == "" {
		cfg.Local.ClusterName = cfg.Manifest.Cluster()
	}
	e := &Executor{
		cfg:      cfg,
		eng:      cfg.Engine,
		manifest: cfg.Manifest,
		view:     cfg.View,
		now:      cfg.Now,
		log:      cfg.Logger.With("component", "cql"),
		prepared: newPreparedCache(cfg.PreparedCacheSize),
		layouts:  map[*manifest.Table]*tableLayout{},
	}
	if cfg.Registerer != nil {
		promauto.With(cfg.Registerer).NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sediment_cql_prepared_statements",
			Help: "Prepared statements cached by the executor.",
		}, func() float64 { return float64(e.prepared.len()) })
		e.tableLatency = promauto.With(cfg.Registerer).NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sediment_cql_table_op_duration_seconds",
			Help:    "Time the executor took to run a SELECT (op=read) or an INSERT, UPDATE or DELETE (op=write) of one table, by keyspace and table.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"keyspace", "table", "op"})
	}
	return e, nil
}

// ColumnSpec is one column of a statement's bound variables or results.
type ColumnSpec = wire.ColumnSpec

// ResultKind is the kind of a RESULT message.
type ResultKind uint8

// Result kinds, as the protocol numbers them.
const (
	ResultVoid         ResultKind = 1
	ResultRows         ResultKind = 2
	ResultSetKeyspace  ResultKind = 3
	ResultSchemaChange ResultKind = 5
)

// Result is what a statement returns.
type Result struct {
	Kind ResultKind
	// Columns and Rows of ResultRows; each row holds one serialized value
	// per column, nil for null.
	Columns []ColumnSpec
	Rows    [][][]byte
	// PagingState resumes the query for its next page; nil on the last.
	PagingState []byte
	// Keyspace of ResultSetKeyspace.
	Keyspace string
	// Change of ResultSchemaChange.
	Change SchemaChange
	// MetadataChanged marks rows of an EXECUTE whose columns are not
	// those PREPARE announced (a conditional statement's [applied] and
	// current values): their metadata is sent even if the client asked to
	// skip it, as Cassandra's ExecuteMessage compares result metadata ids.
	MetadataChanged bool
}

var voidResult = &Result{Kind: ResultVoid}

// Schema change types, targets and the SchemaChange of a DDL statement.
const (
	ChangeCreated = "CREATED"
	ChangeUpdated = "UPDATED"
	ChangeDropped = "DROPPED"

	TargetKeyspace  = "KEYSPACE"
	TargetTable     = "TABLE"
	TargetType      = "TYPE"
	TargetFunction  = "FUNCTION"
	TargetAggregate = "AGGREGATE"
)

// SchemaChange describes a change of the schema, for SCHEMA_CHANGE results
// and events. Name is empty for a keyspace target.
type SchemaChange struct {
	Change, Target, Keyspace, Name string
	// Args are the argument types of a function or aggregate.
	Args []string
}

// Params are a request's query parameters.
type Params struct {
	// Values are the bound values, in marker order unless Names is set;
	// nil is null. Unset marks values sent as "unset".
	Values [][]byte
	Unset  []bool
	// Names, when set, names each value (QUERY/EXECUTE with names).
	Names []string
	// PageSize bounds the rows of a page; <= 0 means no paging.
	PageSize int
	// PagingState resumes a query where its previous page ended.
	PagingState []byte
	// Timestamp is the client's default timestamp (µs); 0 means the
	// server's clock.
	Timestamp int64
	// Consistency and SerialConsistency as the client sent them; Sediment
	// has one copy of the data, so they only shape error messages.
	Consistency, SerialConsistency uint16
	// Keyspace is the per-query keyspace (protocol v5); empty for the
	// session's.
	Keyspace string
	// NowInSeconds, when HasNowInSeconds, is the client's current time
	// (protocol v5): the statement's now for TTL expiry and deletion
	// times, in place of the server's clock. Write timestamps still come
	// from the server's clock or the client's default timestamp.
	NowInSeconds    int64
	HasNowInSeconds bool
}

// plan is a statement planned against one schema version. A plan is
// immutable once built: the prepared cache shares it between connections.
type plan interface {
	// binds returns the receivers of the statement's bind markers in
	// order: for PREPARED metadata and for decoding values.
	binds() []ColumnSpec
	// result returns the result columns, nil for statements without rows.
	result() []ColumnSpec
	// execute runs the plan with bound values.
	execute(ctx context.Context, x *execCtx) (*Result, error)
}

// execCtx is one execution of a plan.
type execCtx struct {
	e       *Executor
	session *Session
	params  *Params
	// values are the bound values, decoded and checked against binds():
	// values[i] is nil for null, and unset[i] marks unset values.
	values [][]byte
	unset  []bool
	// now is the statement's clock reading; nowSec is it in seconds, for
	// TTL expiry and deletion times.
	now    time.Time
	nowSec int64
	// timestamp is the write timestamp (µs): the client's default
	// timestamp or a server clock reading, unique and increasing.
	timestamp int64
}

// newExecCtx makes the context of one execution.
func (e *Executor) newExecCtx(s *Session, p *Params, values [][]byte, unset []bool) *execCtx {
	now := e.now()
	x := &execCtx{e: e, session: s, params: p, values: values, unset: unset, now: now, nowSec: now.Unix()}
	if p.HasNowInSeconds {
		x.nowSec = p.NowInSeconds
	}
	if p.Timestamp != 0 {
		x.timestamp = p.Timestamp
	} else {
		x.timestamp = e.writeTimestamp(now)
	}
	return x
}

// writeTimestamp returns a µs timestamp from now that is greater than every
// one returned before, as Cassandra's ClientState does, so that two writes
// of one frontend never tie.
func (e *Executor) writeTimestamp(now time.Time) int64 {
	ts := now.UnixMicro()
	for {
		last := e.clock.Load()
		next := max(ts, last+1)
		if e.clock.CompareAndSwap(last, next) {
			return next
		}
	}
}

// bound returns bound value i: its bytes (nil for null) and whether it is
// unset.
func (x *execCtx) bound(i int) ([]byte, bool) {
	if i < 0 || i >= len(x.values) {
		return nil, false
	}
	return x.values[i], x.unset[i]
}

// plan plans a statement for a session: the statement's names resolve
// against the session's keyspace and the View's current schema.
func (e *Executor) plan(s *Session, st ast.Statement) (plan, error) {
	switch st := st.(type) {
	case *ast.Use:
		return e.planUse(st)
	case *ast.CreateKeyspace:
		return e.planCreateKeyspace(st)
	case *ast.AlterKeyspace:
		return e.planAlterKeyspace(st)
	case *ast.DropKeyspace:
		return e.planDropKeyspace(st)
	case *ast.CreateTable:
		return e.planCreateTable(s, st)
	case *ast.AlterTable:
		return e.planAlterTable(s, st)
	case *ast.DropTable:
		return e.planDropTable(s, st)
	case *ast.Truncate:
		return e.planTruncate(s, st)
	case *ast.CreateType:
		return e.planCreateType(s, st)
	case *ast.AlterType:
		return e.planAlterType(s, st)
	case *ast.DropType:
		return e.planDropType(s, st)
	case *ast.Describe:
		return e.planDescribe(s, st)
	case *ast.Select:
		if p, ok, err := e.planSystemSelect(s, st); ok {
			return p, err
		}
		return e.planSelect(s, st)
	case *ast.Insert, *ast.Update, *ast.Delete, *ast.Batch:
		return e.planWrite(s, st)
	case *ast.CreateRole, *ast.AlterRole, *ast.DropRole, *ast.CreateUser, *ast.AlterUser, *ast.DropUser, *ast.ListRoles, *ast.ListUsers, *ast.GrantRole, *ast.RevokeRole, *ast.GrantPermission, *ast.RevokePermission, *ast.ListPermissions:
		return e.planAuth(s, st)
	case *ast.CreateIndex:
		return nil, invalidf("Secondary indexes are not supported by Sediment")
	case *ast.CreateView:
		return nil, invalidf("Materialized views are not supported by Sediment")
	case *ast.CreateFunction, *ast.CreateAggregate:
		return nil, invalidf("User-defined functions and aggregates are not supported by Sediment")
	case *ast.CreateTrigger:
		return nil, invalidf("Triggers are not supported by Sediment")
	case *ast.DropIndex:
		return e.planDropMissing(s, st.Name, st.IfExists, "Index '%s' doesn't exist")
	case *ast.DropView:
		return e.planDropMissing(s, st.Name, st.IfExists, "View '%s' doesn't exist")
	case *ast.DropFunction:
		return e.planDropMissing(s, st.Name, st.IfExists, "Unconfigured function %s")
	case *ast.DropAggregate:
		return e.planDropMissing(s, st.Name, st.IfExists, "Unconfigured aggregate %s")
	case *ast.DropTrigger:
		if st.IfExists {
			return voidPlan{}, nil
		}
		return nil, invalidf("Trigger %s was not found", st.Name)
	}
	return nil, invalidf("%s statements are not supported by Sediment yet", statementName(st))
}

// statementName names a statement's kind for messages.
func statementName(st ast.Statement) string {
	n := fmt.Sprintf("%T", st)
	if i := len("*ast."); len(n) > i {
		return n[i:]
	}
	return n
}

var _ plan = voidPlan{}

// voidPlan does nothing and returns a Void result.
type voidPlan struct{}

func (voidPlan) binds() []ColumnSpec  { return nil }
func (voidPlan) result() []ColumnSpec { return nil }
func (voidPlan) execute(context.Context, *execCtx) (*Result, error) {
	return voidResult, nil
}

// planDropMissing plans DROP of an object kind Sediment never has: IF
// EXISTS does nothing, otherwise it is an error naming the object.
func (e *Executor) planDropMissing(s *Session, name ast.TableName, ifExists bool, msg string) (plan, error) {
	if ifExists {
		return voidPlan{}, nil
	}
	return nil, invalidf(msg, name.Name)
}

// keyspaceOf returns the keyspace a name lives in: its own, or the
// session's.
func (e *Executor) keyspaceOf(s *Session, name ast.TableName) (string, error) {
	if name.Keyspace != "" {
		return name.Keyspace, nil
	}
	if ks := s.Keyspace(); ks != "" {
		return ks, nil
	}
	return "", invalidf("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
}

// userKeyspaceOf is keyspaceOf for statements that change a keyspace:
// the system keyspaces are not the user's to change.
func (e *Executor) userKeyspaceOf(s *Session, name ast.TableName) (string, error) {
	ks, err := e.keyspaceOf(s, name)
	if err != nil {
		return "", err
	}
	if isSystemKeyspace(ks) {
		return "", unauthorizedf("%s keyspace is not user-modifiable.", ks)
	}
	return ks, nil
}

// table returns the layout of a table the View knows, with Cassandra's
// errors for unknown keyspaces and tables.
func (e *Executor) table(s *Session, name ast.TableName) (*tableLayout, error) {
	ksName, err := e.keyspaceOf(s, name)
	if err != nil {
		return nil, err
	}
	ks := e.view.Keyspace(ksName)
	if ks == nil {
		if isSystemKeyspace(ksName) {
			return nil, invalidf("Modification or non-system read of system table %s.%s is not supported", ksName, name.Name)
		}
		return nil, invalidf("Keyspace %s does not exist", ksName)
	}
	t := ks.Tables[name.Name]
	if t == nil {
		return nil, invalidf("unconfigured table %s", name.Name)
	}
	return e.layoutOf(ks, t)
}

// layoutOf returns the layout of table t of ks, built once per schema
// version: the View's values are immutable, so a table's pointer names one
// definition.
func (e *Executor) layoutOf(ks *manifest.Keyspace, t *manifest.Table) (*tableLayout, error) {
	e.layoutMu.Lock()
	defer e.layoutMu.Unlock()
	if v := e.view.SchemaVersion(); v != e.layoutVersion {
		clear(e.layouts)
		e.layoutVersion = v
	}
	if l := e.layouts[t]; l != nil {
		return l, nil
	}
	l, err := newTableLayout(ks, t)
	if err != nil {
		return nil, serverError(err)
	}
	e.layouts[t] = l
	return l, nil
}
