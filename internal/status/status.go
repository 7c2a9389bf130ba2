// Package status serves a process's status page at /status: members and
// their health, keyspaces and tables, SSTables per table and level, the
// compaction backlog, cache hit ratios, object-store requests with their
// estimated monthly cost, and the recent manifest versions. See
// docs/status.md.
//
// The page is server-rendered HTML (html/template, no JavaScript) that
// reloads itself with a meta refresh. Every figure sits in an element that
// names it, so tests and scripts can read the page:
//
//	<td data-figure="sstables/ks.t/L0/count">3</td>
//
//	figure name                     value
//	members/<id>/heartbeat-age      seconds, one decimal
//	members/<id>/health             healthy | stale
//	tables/<ks.t>/sstables          live SSTables of the table
//	tables/<ks.t>/bytes             their bytes
//	sstables/<ks.t>/L<n>/count      SSTables in level n
//	sstables/<ks.t>/L<n>/bytes      their bytes
//	backlog/<ks.t>/bytes            Strategy.Backlog: bytes to compact
//	backlog/<ks.t>/l0               L0 SSTables over all ranges
//	backlog/<ks.t>/max-l0           L0 SSTables in the fullest range
//	queue/jobs, queue/bytes         compaction queue, if the process has one,
//	queue/oldest-age                and the age of its oldest job (seconds)
//	cache/<tier>/<name>/hits        hits, misses, hit-ratio (percent)
//	requests/<operation>            object-store requests since start
//	cost/total, cost/monthly        US dollars, six decimals
//	manifest/<object>               archive version (bucket/key/version)
//
// Nothing here keeps global state: metrics come from the process's own
// registry, the catalog from its manifest View.
package status

import (
	"context"
	_ "embed"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
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
	// Started is when the process started: the cost estimate extrapolates
	// the requests since then to a month.
	Started time.Time

	Gatherer prometheus.Gatherer
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

var pageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{"dollars": Dollars}).Parse(pageHTML))

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
	if err := pageTemplate.Execute(w, p); err != nil {
		h.src.Logger.Warn("status page", "err", err)
	}
}

// Page is everything the page shows.
type Page struct {
	Process   string
	Roles     string
	Now       time.Time
	Refresh   int
	MaxAge    time.Duration
	Members   []Member
	Tables    []Table
	Queue     *Queue
	Caches    []Cache
	Requests  *Requests // nil without a registry
	Versions  []Version
	Revisions *Revisions
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

// Table is one table with its SSTables by level and compaction backlog.
type Table struct {
	Name     string // ks.table
	SSTables int
	Bytes    int64
	Levels   []Level
	Backlog  compactor.Backlog
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
		Refresh: int(src.Refresh / time.Second), MaxAge: src.MaxAge}
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
		var errs []string
		p.Tables, errs = tables(v)
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
	}
	if cat.Store != nil {
		vs, err := h.archive(ctx, cat, now)
		if err != nil {
			p.Errors = append(p.Errors, "manifest archive: "+err.Error())
		}
		p.Versions = vs
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
func tables(v *manifest.View) ([]Table, []string) {
	s := v.Schema()
	if s == nil {
		return nil, nil
	}
	var out []Table
	var errs []string
	for _, t := range s.Tables() {
		tb := Table{Name: t.Keyspace + "." + t.Name}
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
