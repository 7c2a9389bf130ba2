package main

// `admin tablestats` and `admin compactionstats`: nodetool's questions
// about tables and compactions, answered from the catalog, the SSTables'
// properties in the bucket, and the compaction queue.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/status"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// TableStatsReport is the result of `admin tablestats`.
type TableStatsReport struct {
	Tables []TableStats `json:"tables"`
}

// TableStats is one table as nodetool tablestats shows it, as far as the
// catalog and the SSTables' properties know it.
type TableStats struct {
	Keyspace string    `json:"keyspace"`
	Table    string    `json:"table"`
	ID       uuid.UUID `json:"id"`
	SSTables int       `json:"sstables"`
	Bytes    int64     `json:"bytes"`
	// Levels counts the SSTables per level, L0 first.
	Levels []int `json:"levels"`
	// Partitions, Rows, Cells and Tombstones sum the SSTables'
	// properties: a partition or row in several SSTables counts in each,
	// as Cassandra's estimates do, until compaction merges them.
	Partitions uint64 `json:"partitions"`
	Rows       uint64 `json:"rows"`
	Cells      uint64 `json:"cells"`
	Tombstones uint64 `json:"tombstones"`
	// UnflushedNodes is how many members hold writes of the table in a
	// memtable, and OldestUnflushed the oldest such write's time.
	UnflushedNodes  int       `json:"unflushed_nodes"`
	OldestUnflushed time.Time `json:"oldest_unflushed,omitzero"`
	// Backlog is what compaction has to do (compactor.Strategy.Backlog).
	Backlog compactor.Backlog `json:"backlog"`
	// Read and Write are the frontends' latency of the table's reads and
	// writes, with -from (sediment_cql_table_op_duration_seconds); nil
	// without, or before any.
	Read  *OpLatency `json:"read,omitempty"`
	Write *OpLatency `json:"write,omitempty"`
}

// OpLatency is the latency of a table's reads or writes over the
// processes asked, since each started.
type OpLatency struct {
	Count float64 `json:"count"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

// tableLatency returns the latency of op on ks.table in the scraped
// families; nil without an observation.
func tableLatency(scraped []map[string]*dto.MetricFamily, ks, table, op string) *OpLatency {
	var ms []*dto.Metric
	var n float64
	for _, mfs := range scraped {
		mf := mfs["sediment_cql_table_op_duration_seconds"]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "keyspace") == ks && label(m, "table") == table && label(m, "op") == op {
				ms = append(ms, m)
				n += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if n == 0 {
		return nil
	}
	return &OpLatency{Count: n, P50ms: status.Quantile(ms, 0.5), P99ms: status.Quantile(ms, 0.99)}
}

// label returns the value of label name of m.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func (r *TableStatsReport) text(w io.Writer) error {
	for _, t := range r.Tables {
		fmt.Fprintf(w, "Table: %s.%s (%s)\n", t.Keyspace, t.Table, t.ID)
		levels := make([]string, len(t.Levels))
		for i, n := range t.Levels {
			levels[i] = strconv.Itoa(n)
		}
		unflushed := "none"
		if t.UnflushedNodes > 0 {
			unflushed = fmt.Sprintf("on %d node(s), oldest write %s", t.UnflushedNodes, t.OldestUnflushed.UTC().Format(time.RFC3339))
		}
		for _, l := range [][2]string{
			{"SSTable count", strconv.Itoa(t.SSTables)},
			{"SSTables in each level", "[" + strings.Join(levels, ", ") + "]"},
			{"Space used", fmt.Sprintf("%s (%d bytes)", status.HumanBytes(t.Bytes), t.Bytes)},
			{"Number of partitions (estimate)", strconv.FormatUint(t.Partitions, 10)},
			{"Rows (estimate)", strconv.FormatUint(t.Rows, 10)},
			{"Cells", strconv.FormatUint(t.Cells, 10)},
			{"Tombstones", strconv.FormatUint(t.Tombstones, 10)},
			{"Unflushed writes", unflushed},
			{"Compaction backlog", fmt.Sprintf("%s, %d L0 SSTables (%d in the fullest range)", status.HumanBytes(t.Backlog.Bytes), t.Backlog.L0Tables, t.Backlog.MaxL0)},
			{"Read latency", latencyText(t.Read)},
			{"Write latency", latencyText(t.Write)},
		} {
			fmt.Fprintf(w, "\t%s: %s\n", l[0], l[1])
		}
		fmt.Fprintln(w)
	}
	return nil
}

func latencyText(l *OpLatency) string {
	if l == nil {
		return "NaN ms (none measured; -from names the frontends to ask)"
	}
	return fmt.Sprintf("p50 %.3f ms, p99 %.3f ms over %.0f", l.P50ms, l.P99ms, l.Count)
}

// tableSnapshot reads table's live SSTables by range, as the compaction
// planner sees them.
func tableSnapshot(ctx context.Context, m *manifest.Manifest, table uuid.UUID) (compactor.Snapshot, error) {
	snap := compactor.Snapshot{Table: table, Ranges: map[int][]manifest.SSTable{}}
	n, err := m.RangeCount(ctx)
	if errors.Is(err, manifest.ErrNotFound) {
		return snap, nil
	}
	if err != nil {
		return snap, err
	}
	for r := range n {
		ts, err := m.SSTablesInRange(ctx, table, r)
		if err != nil {
			return snap, err
		}
		if len(ts) > 0 {
			snap.Ranges[r] = ts
		}
	}
	return snap, nil
}

// adminTableStats reports every table (or -table): one ranged GET of each
// live SSTable's tail reads its properties.
func adminTableStats(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("unexpected argument %q (choose a table with -table ks.t)", args[0])
	}
	m, s, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	mems, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}
	var scraped []map[string]*dto.MetricFamily
	if a.cfg.From != "" {
		client := &http.Client{Timeout: 10 * time.Second}
		for addr := range strings.SplitSeq(a.cfg.From, ",") {
			mfs, err := scrape(ctx, client, strings.TrimSpace(addr))
			if err != nil {
				return nil, fmt.Errorf("read the metrics of %s: %w (is it that process's -http.listen-address?)", addr, err)
			}
			scraped = append(scraped, mfs)
		}
	}
	rep := &TableStatsReport{Tables: []TableStats{}}
	read, total := 0, 0
	snaps := make([]compactor.Snapshot, len(tables))
	for i, t := range tables {
		if snaps[i], err = tableSnapshot(ctx, m, t.ID); err != nil {
			return nil, err
		}
		for _, ts := range snaps[i].Ranges {
			total += len(ts)
		}
	}
	for i, t := range tables {
		ts := TableStats{Keyspace: t.Keyspace, Table: t.Table, ID: t.ID, Levels: []int{},
			Read: tableLatency(scraped, t.Keyspace, t.Table, "read"), Write: tableLatency(scraped, t.Keyspace, t.Table, "write")}
		def := s.TableByID(t.ID)
		if st, err := compactor.ParseStrategy(def.Options.Compaction); err == nil {
			ts.Backlog = st.Backlog(snaps[i])
		}
		key := ingest.UnflushedKey(storage.TableIDOf(t.ID))
		for _, mem := range mems {
			if us, ok := mem.Unflushed[key]; ok {
				ts.UnflushedNodes++
				if at := time.UnixMicro(us); ts.OldestUnflushed.IsZero() || at.Before(ts.OldestUnflushed) {
					ts.OldestUnflushed = at.UTC()
				}
			}
		}
		for _, r := range slices.Sorted(maps.Keys(snaps[i].Ranges)) {
			for _, sst := range snaps[i].Ranges[r] {
				ts.SSTables++
				ts.Bytes += sst.Size
				for len(ts.Levels) <= sst.Level {
					ts.Levels = append(ts.Levels, 0)
				}
				ts.Levels[sst.Level]++
				p, err := sstableProperties(ctx, a.store, sst)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: SSTable %s: %w ('sediment admin verify' checks every SSTable)", t.Keyspace, t.Table, sst.Key, err)
				}
				ts.Partitions += p.partitions
				ts.Rows += p.rows
				ts.Cells += p.cells
				ts.Tombstones += p.tombstones
				read++
				if a.progress {
					fmt.Fprintf(a.stderr, "\rtablestats: %d/%d SSTables read", read, total)
				}
			}
		}
		rep.Tables = append(rep.Tables, ts)
	}
	if a.progress && total > 0 {
		fmt.Fprintln(a.stderr)
	}
	return rep, nil
}

type sstableCounts struct{ partitions, rows, cells, tombstones uint64 }

// sstableProperties reads an SSTable's footer and properties: one ranged
// GET of its tail.
func sstableProperties(ctx context.Context, store objectstore.Store, sst manifest.SSTable) (sstableCounts, error) {
	ra, err := objectstore.NewReaderAt(ctx, store, sst.Key)
	if err != nil {
		return sstableCounts{}, err
	}
	r, err := tablestore.OpenAt(ctx, ra, ra.Size(), 0)
	if err != nil {
		return sstableCounts{}, err
	}
	p := r.Properties()
	return sstableCounts{p.Partitions, p.Rows, p.Cells, p.Tombstones}, nil
}

// CompactionStatsReport is the result of `admin compactionstats`.
type CompactionStatsReport struct {
	// Queue is nil when no compactor has ever run.
	Queue  *QueueStatus       `json:"queue"`
	Tables []TableCompactions `json:"tables"`
}

// QueueStatus is the compaction queue: jobs a worker runs, jobs waiting.
type QueueStatus struct {
	Running int        `json:"running"`
	Waiting int        `json:"waiting"`
	Bytes   int64      `json:"bytes"`
	Jobs    []QueueJob `json:"jobs"`
}

// QueueJob is one job of the queue.
type QueueJob struct {
	ID          string    `json:"id"`
	Table       string    `json:"table"`
	Range       int       `json:"range"`
	Inputs      int       `json:"inputs"`
	Bytes       int64     `json:"bytes"`
	OutputLevel int       `json:"output_level"`
	Queued      time.Time `json:"queued"`
}

// TableCompactions is one table's compaction backlog and major compaction
// request.
type TableCompactions struct {
	Keyspace string            `json:"keyspace"`
	Table    string            `json:"table"`
	Backlog  compactor.Backlog `json:"backlog"`
	// Request is the table's major compaction request, if any.
	Request *manifest.CompactionRequest `json:"request,omitempty"`
}

func (r *CompactionStatsReport) text(w io.Writer) error {
	if r.Queue == nil {
		fmt.Fprintln(w, "no compaction queue: no compactor has run in this cluster")
	} else {
		fmt.Fprintf(w, "pending tasks: %d (%d running, %d waiting), %s of input\n\n", r.Queue.Running+r.Queue.Waiting, r.Queue.Running, r.Queue.Waiting, status.HumanBytes(r.Queue.Bytes))
		var rows [][]string
		for _, j := range r.Queue.Jobs {
			rows = append(rows, []string{j.Table, strconv.Itoa(j.Range), strconv.Itoa(j.Inputs), status.HumanBytes(j.Bytes), "L" + strconv.Itoa(j.OutputLevel), j.Queued.UTC().Format(time.RFC3339), j.ID})
		}
		if err := table(w, "TABLE\tRANGE\tINPUTS\tSIZE\tTO\tQUEUED\tJOB", rows); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	var rows [][]string
	for _, t := range r.Tables {
		req := "-"
		if t.Request != nil {
			req = "requested " + t.Request.RequestedAt.UTC().Format(time.RFC3339)
			if t.Request.Done() {
				req = "done " + t.Request.DoneAt.UTC().Format(time.RFC3339)
			}
		}
		rows = append(rows, []string{t.Keyspace + "." + t.Table, status.HumanBytes(t.Backlog.Bytes), strconv.Itoa(t.Backlog.L0Tables), strconv.Itoa(t.Backlog.MaxL0), req})
	}
	return table(w, "TABLE\tBACKLOG\tL0 SSTABLES\tFULLEST RANGE L0\tMAJOR COMPACTION", rows)
}

func adminCompactionStats(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("unexpected argument %q (choose a table with -table ks.t)", args[0])
	}
	m, s, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	rep := &CompactionStatsReport{Tables: []TableCompactions{}}
	names := map[uuid.UUID]string{}
	for _, t := range tables {
		names[t.ID] = t.Keyspace + "." + t.Table
		tc := TableCompactions{Keyspace: t.Keyspace, Table: t.Table}
		snap, err := tableSnapshot(ctx, m, t.ID)
		if err != nil {
			return nil, err
		}
		if st, err := compactor.ParseStrategy(s.TableByID(t.ID).Options.Compaction); err == nil {
			tc.Backlog = st.Backlog(snap)
		}
		switch req, err := m.CompactionRequest(ctx, t.ID); {
		case err == nil:
			tc.Request = &req
		case !errors.Is(err, manifest.ErrNotFound):
			return nil, err
		}
		rep.Tables = append(rep.Tables, tc)
	}
	q, err := compactor.LookupQueue(ctx, a.js, a.cfg.Manifest.ClusterName)
	if err != nil || q == nil {
		return rep, err
	}
	running, waiting, err := q.Delivered(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := q.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	rep.Queue = &QueueStatus{Running: running, Waiting: waiting, Jobs: []QueueJob{}}
	for _, j := range jobs {
		name, ok := names[j.Table]
		if !ok {
			if a.cfg.Table != "" {
				continue
			}
			name = j.Table.String()
		}
		rep.Queue.Bytes += j.Bytes()
		rep.Queue.Jobs = append(rep.Queue.Jobs, QueueJob{ID: j.ID, Table: name, Range: j.Range, Inputs: len(j.Inputs),
			Bytes: j.Bytes(), OutputLevel: j.OutputLevel, Queued: j.Queued})
	}
	return rep, nil
}
