package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The metrics table in docs/metrics.md and the Grafana dashboard must match
// what a running process registers. These tests keep them from drifting.

const (
	metricsDocPath = "../../docs/metrics.md"
	dashboardPath  = "../../docs/grafana/sediment.json"
)

// docMetric is one row of a metrics table in docs/metrics.md.
type docMetric struct {
	name, typ string
	labels    []string // sorted
}

var (
	metricNameRE = regexp.MustCompile(`^sediment_[a-z0-9_]+$`)
	labelNameRE  = regexp.MustCompile("^`([a-z_][a-z0-9_]*)`$")
)

// parseMetricsDoc reads every metrics table of the doc: a Markdown table
// whose header starts with "name | type | labels". Each row names one metric
// in backticks, its Prometheus type, and its labels in backticks (or "—"
// for none), followed by a meaning that must not be empty.
func parseMetricsDoc(text string) (map[string]docMetric, error) {
	out := map[string]docMetric{}
	var errs []error
	inTable := false
	for n, line := range strings.Split(text, "\n") {
		n++
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) >= 3 && cells[0] == "name" && cells[1] == "type" && cells[2] == "labels" {
			inTable = true
			continue
		}
		if !inTable || strings.Trim(line, "|-: ") == "" { // other tables, separators
			continue
		}
		if len(cells) < 5 {
			errs = append(errs, fmt.Errorf("line %d: %d cells, want name, type, labels, meaning, alert", n, len(cells)))
			continue
		}
		name := strings.Trim(cells[0], "`")
		if cells[0] != "`"+name+"`" || !metricNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("line %d: %q is not a sediment_ metric name in backticks", n, cells[0]))
			continue
		}
		m := docMetric{name: name, typ: cells[1]}
		switch m.typ {
		case "counter", "gauge", "histogram", "summary":
		default:
			errs = append(errs, fmt.Errorf("line %d: %s: unknown type %q", n, name, m.typ))
		}
		if cells[2] != "—" {
			for l := range strings.SplitSeq(cells[2], ",") {
				sm := labelNameRE.FindStringSubmatch(strings.TrimSpace(l))
				if sm == nil {
					errs = append(errs, fmt.Errorf("line %d: %s: label %q is not a name in backticks", n, name, l))
					continue
				}
				m.labels = append(m.labels, sm[1])
			}
			slices.Sort(m.labels)
		}
		if cells[3] == "" {
			errs = append(errs, fmt.Errorf("line %d: %s has no meaning", n, name))
		}
		if _, dup := out[name]; dup {
			errs = append(errs, fmt.Errorf("line %d: %s listed twice", n, name))
		}
		out[name] = m
	}
	if len(out) == 0 {
		errs = append(errs, errors.New("no metrics table (| name | type | labels | ...)"))
	}
	return out, errors.Join(errs...)
}

func loadMetricsDoc(t *testing.T) map[string]docMetric {
	t.Helper()
	text, err := os.ReadFile(metricsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseMetricsDoc(string(text))
	if err != nil {
		t.Fatalf("%s: %v", metricsDocPath, err)
	}
	return doc
}

func TestParseMetricsDoc(t *testing.T) {
	const head = "| name | type | labels | meaning | alert |\n| --- | --- | --- | --- | --- |\n"
	doc, err := parseMetricsDoc("# x\n\n| endpoint | answers |\n| --- | --- |\n| `/metrics` | text |\n\n" + head +
		"| `sediment_a_total` | counter | `op`, `backend` | A. | B. |\n| `sediment_b` | gauge | — | B. | |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]docMetric{
		"sediment_a_total": {name: "sediment_a_total", typ: "counter", labels: []string{"backend", "op"}},
		"sediment_b":       {name: "sediment_b", typ: "gauge"},
	}
	if fmt.Sprint(doc) != fmt.Sprint(want) {
		t.Fatalf("parsed %v, want %v", doc, want)
	}
	for _, bad := range []string{
		"| `sediment_a` | counter | — | A. | B. |\n| `sediment_a` | counter | — | A. | B. |", // twice
		"| sediment_a | counter | — | A. | B. |",                                             // no backticks
		"| `go_gc` | counter | — | A. | B. |",                                                // not ours
		"| `sediment_a` | countr | — | A. | B. |",                                            // type
		"| `sediment_a` | counter | op | A. | B. |",                                          // label
		"| `sediment_a` | counter | — |  | B. |",                                             // meaning
		"| `sediment_a` | counter | — |",                                                     // cells
	} {
		if _, err := parseMetricsDoc(head + bad + "\n"); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
	if _, err := parseMetricsDoc("| name | kind |\n| --- | --- |\n| `sediment_a` | counter |\n"); err == nil {
		t.Error("no error for a doc without a metrics table")
	}
}

// scrapeTypes fetches /metrics in the text format and returns the type of
// every sediment_ family it serves.
func scrapeTypes(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	types := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "sediment_") {
			types[f[2]] = f[3]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return types
}

// gatheredLabels returns the label names of every sediment_ family in reg,
// across all its series.
func gatheredLabels(t *testing.T, reg prometheus.Gatherer) map[string][]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "sediment_") {
			continue
		}
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		slices.Sort(labels)
		out[mf.GetName()] = slices.Compact(labels)
	}
	return out
}

// sumOf returns the sum over its series of a counter or gauge in reg.
func sumOf(reg prometheus.Gatherer, name string) float64 {
	mfs, _ := reg.Gather()
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				sum += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// probeCollector describes one metric name, with a help text no real
// metric has, to ask a registry whether it holds that name.
type probeCollector struct{ desc *prometheus.Desc }

var _ prometheus.Collector = probeCollector{}

func (p probeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (p probeCollector) Collect(chan<- prometheus.Metric)    {}

// registered reports whether reg holds a metric called name, even one that
// has no series yet (a vector no label values were used with, which a
// scrape does not show). The registry refuses a second descriptor of a name
// with another help text, and accepts a new name, which is unregistered
// again at once.
func registered(reg *prometheus.Registry, name string) bool {
	p := probeCollector{prometheus.NewDesc(name, "metrics doc probe: not a real metric", nil, nil)}
	if err := reg.Register(p); err != nil {
		return true
	}
	reg.Unregister(p)
	return false
}

// TestMetricsDocumented runs every role in one process, makes it write,
// flush, read through the block cache and answer an error, then checks the
// metrics it serves against docs/metrics.md both ways.
func TestMetricsDocumented(t *testing.T) {
	doc := loadMetricsDoc(t)
	dataDir := t.TempDir()
	p := startProcess(t, dataDir,
		"-node.heartbeat-interval=50ms",
		"-ingest.shards=1",
		"-ingest.flush-age=100ms",   // flush soon after the writes
		"-cache.disk-bytes=4194304", // both cache tiers
		"-cache.disk-dir="+filepath.Join(dataDir, "cache"),
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE m WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE m.kv (k int PRIMARY KEY, v text)",
	)
	for i := range 40 {
		if err := s.Query("INSERT INTO m.kv (k, v) VALUES (?, ?)", i, strings.Repeat("v", 100)).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	reg := p.s.reg
	deadline := time.Now().Add(30 * time.Second)
	for sumOf(reg, "sediment_ingest_flushes_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no flush within 30s of the writes\n%s", p.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Read the flushed rows twice: SSTable blocks miss the cache, then hit.
	for range 2 {
		for _, k := range []int{3, 17, 31} {
			var v string
			if err := s.Query("SELECT v FROM m.kv WHERE k = ?", k).Scan(&v); err != nil || len(v) != 100 {
				t.Fatalf("SELECT k=%d: %q %v", k, v, err)
			}
		}
	}
	if sumOf(reg, "sediment_cache_misses_total") == 0 {
		t.Fatalf("reads of flushed rows did not go through the block cache\n%s", p.log)
	}
	if err := s.Query("SELECT v FROM m.missing WHERE k = 1").Exec(); err == nil {
		t.Fatal("a SELECT from a missing table succeeded")
	}

	types := scrapeTypes(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", p.httpPort))
	labels := gatheredLabels(t, reg)
	// Families the workload must have made appear: a vector shows only
	// once it has a series, and an empty scrape would check nothing.
	for _, name := range []string{"sediment_cql_errors_total", "sediment_objectstore_request_errors_total", "sediment_ingest_flush_seconds"} {
		if _, ok := types[name]; !ok {
			t.Errorf("the workload did not make %s appear", name)
		}
	}
	for name, typ := range types {
		d, ok := doc[name]
		switch {
		case !ok:
			t.Errorf("%s (%s, labels %v) is served but not in %s", name, typ, labels[name], metricsDocPath)
		case d.typ != typ:
			t.Errorf("%s is a %s, the doc says %s", name, typ, d.typ)
		case !slices.Equal(d.labels, labels[name]):
			t.Errorf("%s has labels %v, the doc says %v", name, labels[name], d.labels)
		}
	}
	for name := range doc {
		if _, ok := types[name]; ok {
			continue
		}
		// Not scraped: a vector without series yet, such as retries on
		// the file backend, or not registered at all.
		if !registered(reg, name) {
			t.Errorf("%s is in %s but the process does not register it", name, metricsDocPath)
		}
	}
}

// The registry probe must tell a registered vector without series from a
// name nobody registered, or the doc check above could pass wrongly.
func TestRegisteredProbe(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sediment_x_total", Help: "x"}, []string{"op"}))
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "sediment_y", Help: "y", ConstLabels: prometheus.Labels{"shard": "0"}}))
	if !registered(reg, "sediment_x_total") || !registered(reg, "sediment_y") {
		t.Error("registered metrics not found")
	}
	if registered(reg, "sediment_z") || registered(reg, "sediment_z") {
		t.Error("an unregistered name was found, or the probe stayed registered")
	}
}

// dashboard is the part of a Grafana dashboard model the checks read.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

var (
	promMetricRE  = regexp.MustCompile(`\bsediment_[a-zA-Z0-9_]+`)
	promMatcherRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	promGroupRE   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelValuesRE = regexp.MustCompile(`^label_values\(\s*(sediment_[a-z0-9_]+)\s*,\s*([a-z_]+)\s*\)$`)
)

// checkExpr checks that a PromQL expression reads only documented metrics,
// histograms through their _bucket, _sum and _count series, and groups or
// matches only on labels those metrics have (or the scrape's instance and
// job). It adds the documented metrics the expression reads to read.
func checkExpr(expr string, doc map[string]docMetric, read map[string]bool) error {
	names := promMetricRE.FindAllString(expr, -1)
	if len(names) == 0 {
		return errors.New("reads no sediment_ metric")
	}
	allowed := map[string]bool{"instance": true, "job": true}
	var errs []error
	for _, n := range names {
		d, ok := doc[n]
		if ok && d.typ == "histogram" {
			errs = append(errs, fmt.Errorf("%s is a histogram: read %s_bucket, _sum or _count", n, n))
			continue
		}
		if !ok {
			base := n
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, cut := strings.CutSuffix(n, suf); cut {
					base = b
					if suf == "_bucket" {
						allowed["le"] = true
					}
				}
			}
			if d, ok = doc[base]; !ok || d.typ != "histogram" {
				errs = append(errs, fmt.Errorf("%s is not a metric in %s", n, metricsDocPath))
				continue
			}
		}
		read[d.name] = true
		for _, l := range d.labels {
			allowed[l] = true
		}
	}
	var used []string
	for _, m := range promMatcherRE.FindAllStringSubmatch(expr, -1) {
		used = append(used, m[1])
	}
	for _, m := range promGroupRE.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				used = append(used, l)
			}
		}
	}
	for _, l := range used {
		if !allowed[l] {
			errs = append(errs, fmt.Errorf("label %q is not a label of %v", l, names))
		}
	}
	return errors.Join(errs...)
}

// checkDashboard checks a Grafana dashboard's model: a Prometheus
// datasource variable that every panel uses, unique panel IDs, PromQL that
// reads only documented metrics and labels, and a panel for every
// documented metric, so that a new metric gets one.
func checkDashboard(data []byte, doc map[string]docMetric) error {
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	var errs []error
	read := map[string]bool{}
	if d.Title == "" || d.UID == "" {
		errs = append(errs, errors.New("no title or uid"))
	}
	if d.SchemaVersion < 36 {
		errs = append(errs, fmt.Errorf("schemaVersion %d, want 36 or later", d.SchemaVersion))
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			if v.Query == "prometheus" {
				dsVar = v.Name
			}
		case "query":
			q, _ := v.Query.(string)
			if m, ok := v.Query.(map[string]any); ok {
				q, _ = m["query"].(string)
			}
			sm := labelValuesRE.FindStringSubmatch(q)
			if sm == nil {
				errs = append(errs, fmt.Errorf("variable %s: query %q is not label_values(sediment_..., label)", v.Name, q))
			} else if err := checkExpr(fmt.Sprintf("sum by (%s) (%s)", sm[2], sm[1]), doc, map[string]bool{}); err != nil {
				errs = append(errs, fmt.Errorf("variable %s: %w", v.Name, err))
			}
		}
	}
	if dsVar == "" {
		errs = append(errs, errors.New("no Prometheus datasource variable"))
	}
	ids := map[int]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				errs = append(errs, fmt.Errorf("panel %q: id %d used twice", p.Title, p.ID))
			}
			ids[p.ID] = true
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${"+dsVar+"}" {
				errs = append(errs, fmt.Errorf("panel %q does not use the datasource variable ${%s}", p.Title, dsVar))
			}
			if len(p.Targets) == 0 {
				errs = append(errs, fmt.Errorf("panel %q has no query", p.Title))
			}
			for _, tg := range p.Targets {
				if err := checkExpr(tg.Expr, doc, read); err != nil {
					errs = append(errs, fmt.Errorf("panel %q, query %s: %w", p.Title, tg.RefID, err))
				}
			}
		}
	}
	walk(d.Panels)
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		if !read[name] {
			errs = append(errs, fmt.Errorf("no panel shows %s", name))
		}
	}
	return errors.Join(errs...)
}

func TestGrafanaDashboard(t *testing.T) {
	doc := loadMetricsDoc(t)
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDashboard(data, doc); err != nil {
		t.Fatalf("%s:\n%v", dashboardPath, err)
	}
}

// The dashboard check must catch what it is for.
func TestCheckDashboardFindsErrors(t *testing.T) {
	doc := map[string]docMetric{
		"sediment_a_total": {name: "sediment_a_total", typ: "counter", labels: []string{"op"}},
		"sediment_h":       {name: "sediment_h", typ: "histogram", labels: []string{"op"}},
	}
	for _, tc := range []struct{ expr, err string }{
		{`sum by (op) (rate(sediment_a_total{instance=~"$instance"}[5m]))`, ""},
		{`histogram_quantile(0.99, sum by (le, op) (rate(sediment_h_bucket[5m])))`, ""},
		{`rate(sediment_h_sum[5m]) / rate(sediment_h_count[5m])`, ""},
		{`rate(sediment_b_total[5m])`, "not a metric"},
		{`rate(sediment_h[5m])`, "is a histogram"},
		{`rate(sediment_a_total_bucket[5m])`, "not a metric"},
		{`sum by (code) (rate(sediment_a_total[5m]))`, `label "code"`},
		{`rate(sediment_a_total{shard="1"}[5m])`, `label "shard"`},
		{`sum by (le) (rate(sediment_a_total[5m]))`, `label "le"`},
		{`up`, "reads no sediment_ metric"},
	} {
		err := checkExpr(tc.expr, doc, map[string]bool{})
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("checkExpr(%s) = %v, want %q", tc.expr, err, tc.err)
		}
	}
	good := `{"title":"t","uid":"u","schemaVersion":39,
		"templating":{"list":[{"name":"datasource","type":"datasource","query":"prometheus"},
			{"name":"instance","type":"query","query":{"query":"label_values(sediment_a_total, instance)"}}]},
		"panels":[{"id":1,"type":"row","title":"r","panels":[]},
			{"id":2,"type":"timeseries","title":"p","datasource":{"type":"prometheus","uid":"${datasource}"},
			 "targets":[{"refId":"A","expr":"rate(sediment_a_total[5m])"},
			 	{"refId":"B","expr":"histogram_quantile(0.5, sum by (le) (rate(sediment_h_bucket[5m])))"}]}]}`
	if err := checkDashboard([]byte(good), doc); err != nil {
		t.Fatalf("good dashboard: %v", err)
	}
	for _, bad := range []struct{ old, new, err string }{
		{`"uid":"${datasource}"`, `"uid":"prom"`, "datasource variable"},
		{`"id":2`, `"id":1`, "used twice"},
		{`"schemaVersion":39`, `"schemaVersion":20`, "schemaVersion"},
		{`"query":"prometheus"`, `"query":"loki"`, "no Prometheus datasource"},
		{`label_values(sediment_a_total, instance)`, `label_values(sediment_b, instance)`, "not a metric"},
		{`rate(sediment_a_total[5m])`, `rate(sediment_c[5m])`, "not a metric"},
		{`"expr":"rate(sediment_a_total[5m])"`, `"expr":"rate(sediment_h_count[5m])"`, "no panel shows sediment_a_total"},
		{`"id":1,"type":"row","title":"r","panels":[]}`, `"id":1,"type":"row","title":"r","panels":[{"id":3,"type":"stat","title":"s","datasource":{"type":"prometheus","uid":"${datasource}"},"targets":[]}]}`, "no query"},
	} {
		err := checkDashboard([]byte(strings.Replace(good, bad.old, bad.new, 1)), doc)
		if err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%s -> %s: error %v, want %q", bad.old, bad.new, err, bad.err)
		}
	}
}
