package main

// `admin tpstats`: nodetool's per-stage view (active, pending, completed,
// blocked, latency), read from the processes' own /metrics.

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sedimentdb/sediment/internal/status"
)

// TPStatsReport is the result of `admin tpstats`: the stages of each
// process asked.
type TPStatsReport struct {
	Processes []ProcessStages `json:"processes"`
}

// ProcessStages is one process's stages, or why it could not be read.
type ProcessStages struct {
	Address string  `json:"address"`
	Error   string  `json:"error,omitempty"`
	Stages  []Stage `json:"stages"`
}

// Stage is one stage of work in a process, as nodetool tpstats shows a
// thread pool: work in progress, waiting, done, refused or failed, and
// the latency of what was done (since the process started; NaN: none).
type Stage struct {
	Name      string  `json:"name"`
	Active    float64 `json:"active"`
	Pending   float64 `json:"pending"`
	Completed float64 `json:"completed"`
	Blocked   float64 `json:"blocked"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
}

func (r *TPStatsReport) failed() bool {
	for _, p := range r.Processes {
		if p.Error != "" {
			return true
		}
	}
	return false
}

func (r *TPStatsReport) text(w io.Writer) error {
	ms := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	n := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, p := range r.Processes {
		fmt.Fprintf(w, "%s\n", p.Address)
		if p.Error != "" {
			fmt.Fprintf(w, "  FAILED: %s\n\n", p.Error)
			continue
		}
		var rows [][]string
		for _, s := range p.Stages {
			rows = append(rows, []string{"  " + s.Name, n(s.Active), n(s.Pending), n(s.Completed), n(s.Blocked), ms(s.P50ms), ms(s.P99ms)})
		}
		if err := table(w, "  STAGE\tACTIVE\tPENDING\tCOMPLETED\tBLOCKED/FAILED\tP50 MS\tP99 MS", rows); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// MarshalJSON of a latency without observations is null, not NaN, which
// JSON cannot hold.
func (s Stage) MarshalJSON() ([]byte, error) {
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Appendf(nil, `{"name":%q,"active":%s,"pending":%s,"completed":%s,"blocked":%s,"p50_ms":%s,"p99_ms":%s}`,
		s.Name, num(s.Active), num(s.Pending), num(s.Completed), num(s.Blocked), num(s.P50ms), num(s.P99ms)), nil
}

// stagesOf reads the stages a process's metrics show; a stage whose
// metrics the process does not export (a role it does not run) is left
// out.
func stagesOf(mfs map[string]*dto.MetricFamily) []Stage {
	sum := func(name string) (float64, bool) {
		mf, ok := mfs[name]
		if !ok {
			return 0, false
		}
		var v float64
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
		return v, true
	}
	v := func(name string) float64 { x, _ := sum(name); return x }
	q := func(name string, p float64) float64 {
		if mf, ok := mfs[name]; ok {
			return status.Quantile(mf.GetMetric(), p)
		}
		return math.NaN()
	}
	var out []Stage
	if _, ok := sum("sediment_cql_requests_total"); ok {
		out = append(out, Stage{Name: "cql-requests", Active: v("sediment_cql_requests_in_flight"), Completed: v("sediment_cql_requests_total"),
			Blocked: v("sediment_cql_errors_total"), P50ms: q("sediment_cql_request_duration_seconds", 0.5), P99ms: q("sediment_cql_request_duration_seconds", 0.99)})
	}
	if _, ok := sum("sediment_ingest_batches_total"); ok {
		// The mean sync time per group commit stands in for both
		// quantiles: the syncs are counted, not bucketed.
		mean := math.NaN()
		if n := v("sediment_ingest_commitlog_syncs_total"); n > 0 {
			mean = 1000 * v("sediment_ingest_commitlog_sync_seconds_total") / n
		}
		out = append(out, Stage{Name: "ingest-commit", Completed: v("sediment_ingest_batches_total"), Blocked: v("sediment_ingest_overloaded_total"), P50ms: mean, P99ms: mean})
		out = append(out, Stage{Name: "ingest-flush", Completed: v("sediment_ingest_flushes_total"), Blocked: v("sediment_ingest_flush_failures_total"),
			P50ms: q("sediment_ingest_flush_seconds", 0.5), P99ms: q("sediment_ingest_flush_seconds", 0.99)})
	}
	if _, ok := sum("sediment_compaction_jobs_committed_total"); ok {
		out = append(out, Stage{Name: "compaction", Active: v("sediment_compaction_running_jobs"), Pending: v("sediment_compaction_queued_jobs"),
			Completed: v("sediment_compaction_jobs_committed_total"), Blocked: v("sediment_compaction_jobs_failed_total"), P50ms: math.NaN(), P99ms: math.NaN()})
	}
	if _, ok := sum("sediment_objectstore_requests_total"); ok {
		out = append(out, Stage{Name: "object-store", Completed: v("sediment_objectstore_requests_total"), Blocked: v("sediment_objectstore_request_errors_total"),
			P50ms: q("sediment_objectstore_request_duration_seconds", 0.5), P99ms: q("sediment_objectstore_request_duration_seconds", 0.99)})
	}
	return out
}

// adminTPStats scrapes the /metrics of each -from address (default: this
// node's -http.listen-address) and reports its stages.
func adminTPStats(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("unexpected argument %q (name processes with -from host:port,...)", args[0])
	}
	from := a.cfg.From
	if from == "" {
		from = a.cfg.HTTP.ListenAddress
	}
	if from == "" {
		return nil, fmt.Errorf("no process to ask: pass -from host:port (their -http.listen-address)")
	}
	rep := &TPStatsReport{Processes: []ProcessStages{}}
	client := &http.Client{Timeout: 10 * time.Second}
	for addr := range strings.SplitSeq(from, ",") {
		addr = strings.TrimSpace(addr)
		ps := ProcessStages{Address: addr, Stages: []Stage{}}
		mfs, err := scrape(ctx, client, addr)
		if err != nil {
			ps.Error = err.Error() + " (is -http.listen-address of that process this address?)"
		} else {
			ps.Stages = append(ps.Stages, stagesOf(mfs)...)
		}
		rep.Processes = append(rep.Processes, ps)
	}
	return rep, nil
}

// scrape reads a process's /metrics.
func scrape(ctx context.Context, client *http.Client, addr string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}
