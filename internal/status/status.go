// Package status serves a process's status page at /status: charts of the
// last hour (a History of the process's metrics, drawn as SVG on the
// server), members with their roles and health, token ranges and their
// owners, keyspaces and tables with SSTables per level and unflushed
// writes, the compaction backlog, cache hit ratios, object-store requests
// with their cost rate, and the recent manifest versions by name. See
// docs/status.md.
//
// The page is server-rendered HTML (html/template, no JavaScript) that
// reloads itself with a meta refresh. Every figure sits in an element that
// names it, so tests and scripts can read the page; a figure shown for
// people (a size in MiB) carries its raw value in data-value:
//
//	<td data-figure="sstables/ks.t/L0/count">3</td>
//	<td data-figure="tables/ks.t/bytes" data-value="390744439">372.6 MiB</td>
//
//	figure name                     value
//	members/<id>/heartbeat-age      seconds, one decimal
//	members/<id>/health             healthy | stale
//	tables/<ks.t>/sstables          live SSTables of the table
//	tables/<ks.t>/bytes             their bytes
//	tables/<ks.t>/unflushed         yes | no: a memtable holds writes
//	ranges/<n>/owner                the owner of token range n
//	memtable/bytes                  this process's memtable bytes
//	chart/<id>/<line>               a chart line's newest value
//	sstables/<ks.t>/L<n>/count      SSTables in level n
//	sstables/<ks.t>/L<n>/bytes      their bytes
//	backlog/<ks.t>/bytes            Strategy.Backlog: bytes to compact
//	backlog/<ks.t>/l0               L0 SSTables over all ranges
//	backlog/<ks.t>/max-l0           L0 SSTables in the fullest range
//	queue/jobs, queue/bytes         compaction queue, if the process has one,
//	queue/oldest-age                and the age of its oldest job (seconds)
//	cache/<tier>/<name>/hits        hits, misses, hit-ratio (percent)
//	requests/<operation>            object-store requests since start
//	cost/total                      US dollars since start, six decimals
//	cost/hourly                     US dollars per hour over cost/window
//	manifest/<object>               archive version (bucket/key/version)
//
// Nothing here keeps global state: metrics come from the process's own
// registry, the catalog from its manifest View.
package status

import (
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Defaults of Source.
const (
	DefaultRefresh      = 10 * time.Second
	DefaultMaxAge       = 15 * time.Second // as sediment admin status
	DefaultArchiveEvery = time.Minute
	DefaultArchiveLimit = 20
)

// Catalog is what a process reads the cluster's catalog with. Any part may
// be missing: a process that has not started its manifest yet shows no
// tables.
type Catalog struct {
	View *manifest.View
	// Store holds the manifest archive (manifest/archive.go); Cluster names
	// its buckets' prefix.
	Store   objectstore.Store
	Cluster string
}

// Source is what one process shows. The figures of its compaction queue,
// if it has one, come from the Gatherer like the other metrics
// (compactor.RegisterQueueMetrics).
type Source struct {
	// Process names the process: its node ID or address, and its roles.
	Process string
	Roles   []string
	// Started is when the process started: the request counts and their
	// total cost are since then.
	Started time.Time

	Gatherer prometheus.Gatherer
	// History, if set, holds the samples the charts and the cost rate
	// are drawn from; the caller runs it (History.Run).
	History *History
	// Catalog returns the catalog at each request, since a process's
	// modules start after its HTTP server; nil means none.
	Catalog func() Catalog

	Now    func() time.Time
	Logger *slog.Logger
	// Refresh is the meta refresh interval; MaxAge the heartbeat age of a
	// healthy member.
	Refresh, MaxAge time.Duration
	// ArchiveEvery bounds how often the page lists the archive, a LIST
	// request per thousand objects; ArchiveLimit is how many versions it
	// shows.
	ArchiveEvery time.Duration
	ArchiveLimit int
	// Warnings returns what the operator must fix, such as a default
	// password still in use; nil means none.
	Warnings func() []string
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{"dollars": Dollars, "bytes": HumanBytes}).Parse(pageHTML))

// Handler serves the status page of src.
func Handler(src Source) http.Handler {
	if src.Now == nil {
		src.Now = time.Now
	}
	if src.Logger == nil {
		src.Logger = slog.Default()
	}
	if src.Refresh <= 0 {
		src.Refresh = DefaultRefresh
	}
	if src.MaxAge <= 0 {
		src.MaxAge = DefaultMaxAge
	}
	if src.ArchiveEvery <= 0 {
		src.ArchiveEvery = DefaultArchiveEvery
	}
	if src.ArchiveLimit <= 0 {
		src.ArchiveLimit = DefaultArchiveLimit
	}
	return &handler{src: src}
}

type handler struct {
	src Source

	// The last archive listing, reused for ArchiveEvery.
	mu       sync.Mutex
	listed   time.Time
	versions []Version
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.page(r.Context())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page is whole as served: no script, nothing from elsewhere. A
	// browser refuses anything else, and says so in its console.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	if err := pageTemplate.Execute(w, p); err != nil {
		h.src.Logger.Warn("status page", "err", err)
	}
}

// Page is everything the page shows.
type Page struct {
	Process string
	Roles   string
	Now     time.Time
	Refresh int
	MaxAge  time.Duration
	Members []Member
	Ranges  []Range
	Tables  []Table
	// Memtable is this process's memtable bytes (ingest), -1 without.
	Memtable int64
	Charts   []Chart
	// ChartWindow is the span the charts cover; Samples how many samples
	// they are drawn from.
	ChartWindow, SampleEvery string
	Samples                  int
	Cost                     *CostRate
	Queue                    *Queue
	Caches                   []Cache
	Requests                 *Requests // nil without a registry
	Versions                 []Version
	Revisions                *Revisions
	// Errors are the parts that could not be read; the rest still shows.
	Errors []string
	// Warnings are Source.Warnings at the request.
	Warnings []string
}

// Member is one member of the cluster.
type Member struct {
	ID, Roles, Addr string
	HeartbeatAge    string
	Healthy         bool
}

// Table is one table with its SSTables by level, compaction backlog and
// unflushed writes.
type Table struct {
	Name     string // ks.table
	SSTables int
	Bytes    int64
	Levels   []Level
	Backlog  compactor.Backlog
	// Unflushed says whether an ingest node holds writes of the table in
	// a memtable, not yet in any SSTable (a table with writes and no
	// SSTables is not empty); Oldest is the age of the oldest, Nodes how
	// many nodes hold some.
	Unflushed bool
	Oldest    string
	Nodes     int
}

// Range is one token range and its owner.
type Range struct {
	Range       int
	First, Last int64
	Owner       string // "" when unowned
	Epoch       uint64
	// Healthy says whether the owner is a member with a fresh heartbeat.
	Healthy bool
}

// CostRate is what the process's object-store requests cost per hour over
// the window the History covers.
type CostRate struct {
	Window          string
	Hourly, Monthly float64
}

// Level is the SSTables of a table in one level.
type Level struct {
	Level, Count int
	Bytes        int64
}

// Revisions are the View's catalog versions.
type Revisions struct {
	Schema   string
	SSTables uint64
	Roles    uint64
}

func (h *handler) page(ctx context.Context) *Page {
	src := h.src
	now := src.Now()
	p := &Page{Process: src.Process, Roles: strings.Join(src.Roles, ", "), Now: now.UTC(),
		Refresh: int(src.Refresh / time.Second), MaxAge: src.MaxAge, Memtable: -1}
	if p.Refresh < 1 {
		p.Refresh = 1
	}
	if src.Warnings != nil {
		p.Warnings = src.Warnings()
	}
	var cat Catalog
	if src.Catalog != nil {
		cat = src.Catalog()
	}
	if v := cat.View; v != nil {
		p.Members = members(v.Members(), now, src.MaxAge)
		p.Ranges = ranges(v, now, src.MaxAge)
		var errs []string
		p.Tables, errs = tables(v, now)
		p.Errors = append(p.Errors, errs...)
		p.Revisions = &Revisions{Schema: v.SchemaVersion().String(), SSTables: v.SSTablesRevision(), Roles: v.RolesRevision()}
	}
	if src.Gatherer != nil {
		mfs, err := src.Gatherer.Gather()
		if err != nil {
			// Gather returns what it could alongside the error.
			p.Errors = append(p.Errors, "metrics: "+err.Error())
		}
		p.Caches = caches(mfs)
		if p.Queue = queue(mfs); p.Queue != nil && !p.Queue.Up {
			p.Errors = append(p.Errors, "compaction queue: did not answer")
		}
		r := requests(mfs, now.Sub(src.Started))
		p.Requests = &r
		p.Memtable = memtableBytes(mfs)
	}
	if h := src.History; h != nil {
		ps := h.snapshot()
		p.Samples, p.ChartWindow, p.SampleEvery = len(ps), h.keep.String(), h.every.String()
		p.Charts = charts(ps, now, h.keep)
		if len(ps) >= 2 {
			first, last := ps[0], ps[len(ps)-1]
			if d := last.at.Sub(first.at); d > 0 {
				hourly := (last.cost - first.cost) / d.Hours()
				p.Cost = &CostRate{Window: d.Round(time.Second).String(), Hourly: hourly, Monthly: hourly * month.Hours()}
			}
		}
	}
	if cat.Store != nil {
		vs, err := h.archive(ctx, cat, now)
		if err != nil {
			p.Errors = append(p.Errors, "manifest archive: "+err.Error())
		}
		var s *manifest.Schema
		if cat.View != nil {
			s = cat.View.Schema()
		}
		for _, v := range vs {
			v.What = describe(v, cat.Cluster, s)
			p.Versions = append(p.Versions, v)
		}
	}
	return p
}

// members sorts the members by ID and judges their health.
func members(ms []manifest.Member, now time.Time, maxAge time.Duration) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, Member{ID: m.ID, Roles: strings.Join(m.Roles, ", "), Addr: m.Addr,
			HeartbeatAge: formatSeconds(now.Sub(m.Heartbeat)), Healthy: m.Live(now, maxAge)})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// tables lists every table of the View with its SSTables and backlog. A
// table whose compaction options do not parse shows its SSTables and an
// error instead of a backlog.
func tables(v *manifest.View, now time.Time) ([]Table, []string) {
	s := v.Schema()
	if s == nil {
		return nil, nil
	}
	mems := v.Members()
	var out []Table
	var errs []string
	for _, t := range s.Tables() {
		tb := Table{Name: t.Keyspace + "." + t.Name}
		key := ingest.UnflushedKey(storage.TableIDOf(t.ID))
		oldest := int64(0)
		for _, m := range mems {
			if ts, ok := m.Unflushed[key]; ok {
				tb.Nodes++
				if oldest == 0 || ts < oldest {
					oldest = ts
				}
			}
		}
		if tb.Unflushed = tb.Nodes > 0; tb.Unflushed {
			tb.Oldest = formatSeconds(now.Sub(time.UnixMicro(oldest)))
		}
		byLevel := map[int]*Level{}
		for _, sst := range v.SSTables(t.ID) {
			tb.SSTables++
			tb.Bytes += sst.Size
			l := byLevel[sst.Level]
			if l == nil {
				l = &Level{Level: sst.Level}
				byLevel[sst.Level] = l
			}
			l.Count++
			l.Bytes += sst.Size
		}
		for _, l := range byLevel {
			tb.Levels = append(tb.Levels, *l)
		}
		slices.SortFunc(tb.Levels, func(a, b Level) int { return a.Level - b.Level })
		st, err := compactor.ParseStrategy(t.Options.Compaction)
		if err != nil {
			errs = append(errs, tb.Name+": "+err.Error())
		} else {
			tb.Backlog = st.Backlog(compactor.SnapshotOf(v, t.ID))
		}
		out = append(out, tb)
	}
	slices.SortFunc(out, func(a, b Table) int { return strings.Compare(a.Name, b.Name) })
	return out, errs
}

// ranges lists the View's token ranges with their owners.
func ranges(v *manifest.View, now time.Time, maxAge time.Duration) []Range {
	n := v.RangeCount()
	live := map[string]bool{}
	for _, m := range v.Members() {
		live[m.ID] = m.Live(now, maxAge)
	}
	out := make([]Range, 0, n)
	for r := range n {
		first, last := manifest.RangeBounds(r, n)
		rg := Range{Range: r, First: first, Last: last}
		if o, ok := v.Ownership(r); ok {
			rg.Owner, rg.Epoch, rg.Healthy = o.Owner, o.Epoch, live[o.Owner]
		}
		out = append(out, rg)
	}
	return out
}

// describe names what an archived version is a version of, with the
// schema's names rather than table IDs where it can.
func describe(v Version, cluster string, s *manifest.Schema) string {
	kind := strings.TrimPrefix(v.Bucket, cluster+"_")
	name := func(id string) string {
		if s != nil {
			if u, err := uuid.Parse(id); err == nil {
				if t := s.TableByID(u); t != nil {
					return t.Keyspace + "." + t.Name
				}
			}
		}
		return "table " + id + " (dropped)"
	}
	parts := strings.Split(v.Key, ".")
	switch {
	case kind == "sstables" && len(parts) == 3 && parts[0] == "t":
		r, _ := strconv.Atoi(parts[2])
		return fmt.Sprintf("SSTables of %s, range %d", name(parts[1]), r)
	case kind == "schema" && len(parts) >= 2 && parts[0] == "ks":
		return "keyspace " + strings.Join(parts[1:], ".")
	case kind == "ownership" && len(parts) == 2 && parts[0] == "range":
		r, _ := strconv.Atoi(parts[1])
		return fmt.Sprintf("owner of range %d", r)
	case kind == "snapshots" && len(parts) == 3 && parts[0] == "s":
		return fmt.Sprintf("snapshot %s of %s", parts[1], name(parts[2]))
	}
	return kind + " " + v.Key
}
