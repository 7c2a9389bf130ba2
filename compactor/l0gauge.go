package compactor

import (
	"sync"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// L0Gauge answers the ingest node's flushes how full the L0 of a table's
// token range is, from the node's manifest View: the table's compaction
// strategy (its WITH compaction options) applied to the range's SSTables.
// Answers are cached until the View's SSTables or schema change, since
// every flush asks once per SSTable it commits.
type L0Gauge struct {
	view *manifest.View

	mu     sync.Mutex
	rev    uint64    // SSTablesRevision the cache is for
	schema uuid.UUID // SchemaVersion the cache is for
	// ranges caches the pressure by table and range; a table with no
	// L0 in a range has no entry.
	ranges map[storage.TableID]map[int]float64
}

var _ ingest.L0Gauge = (*L0Gauge)(nil)

// NewL0Gauge returns the gauge of the tables v shows.
func NewL0Gauge(v *manifest.View) *L0Gauge { return &L0Gauge{view: v} }

// L0Pressure is ingest.L0Gauge's.
func (g *L0Gauge) L0Pressure(table storage.TableID, r int) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.view.Schema()
	if rev := g.view.SSTablesRevision(); g.ranges == nil || rev != g.rev || s.Version != g.schema {
		g.rev, g.schema, g.ranges = rev, s.Version, map[storage.TableID]map[int]float64{}
	}
	byRange, ok := g.ranges[table]
	if !ok {
		byRange = map[int]float64{}
		// Two tables share a TableID only rarely; then the higher
		// pressure counts.
		for _, t := range s.TablesByShortID(uint32(table)) {
			st, err := ParseStrategy(t.Options.Compaction)
			if err != nil {
				st = DefaultStrategy() // checked at DDL; an old schema may predate that
			}
			snap := SnapshotOf(g.view, t.ID)
			for rr, ssts := range snap.Ranges {
				p := st.L0Pressure(Snapshot{Table: t.ID, Ranges: map[int][]manifest.SSTable{rr: ssts}})
				byRange[rr] = max(byRange[rr], p)
			}
		}
		g.ranges[table] = byRange
	}
	return byRange[r]
}
