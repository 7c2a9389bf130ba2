package gc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

const orphanAge = 24 * time.Hour

// orphanCollector returns a collector that sweeps every hour of e.clock,
// with a grace period that keeps the garbage of the tests listed.
func (e *env) orphanCollector(holder string, reg prometheus.Registerer) *Collector {
	e.t.Helper()
	cfg := Config{GracePeriod: 3 * time.Hour, Interval: time.Minute, OrphanInterval: time.Hour, OrphanAge: orphanAge,
		OrphanPrefixes: []string{"sst/", "compaction/"}}
	c, err := New(e.m, e.store, cfg, Options{
		Holder: holder, LeaseTTL: time.Minute, Now: e.clock.Now, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// schemaTable creates a table in the schema and makes it e.table.
func (e *env) schemaTable() {
	e.t.Helper()
	if err := e.m.CreateKeyspace(e.ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		e.t.Fatal(err)
	}
	tbl, err := e.m.CreateTable(e.ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t", Columns: []manifest.ColumnSpec{{Name: "k", Type: "int"}}, PartitionKey: []string{"k"},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.table = tbl.ID
}

// put uploads an object and sets its modification time, which the file
// store reports as the object's, to at.
func (e *env) put(key string, at time.Time) {
	e.t.Helper()
	if _, err := e.store.Put(e.ctx, key, []byte("object "+key)); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(e.dir, filepath.FromSlash(key)), at, at); err != nil {
		e.t.Fatal(err)
	}
}

// add commits an uploaded object as a live SSTable of table in range r.
func (e *env) add(table uuid.UUID, key string, r int) {
	e.t.Helper()
	lo, hi := manifest.RangeBounds(r, ranges)
	s := manifest.SSTable{Key: key, Size: 1, MinToken: lo, MaxToken: hi}
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: table, Range: r, Add: []manifest.SSTable{s}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) remove(table uuid.UUID, key string, r int) {
	e.t.Helper()
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: table, Range: r, Remove: []string{key}}); err != nil {
		e.t.Fatal(err)
	}
}

// TestOrphanSweep checks that of old and young, referenced and
// unreferenced objects inside and outside the swept prefixes, only the old
// unreferenced ones inside go, at the second sweep that finds them.
func TestOrphanSweep(t *testing.T) {
	e := newEnv(t)
	e.schemaTable()
	dropped := uuid.New()     // in no schema, but with garbage: DROP under way
	halfDropped := uuid.New() // in no schema, no garbage: a DROP that stopped
	e.clock.now = time.Now()
	old := e.clock.Now().Add(-2 * orphanAge)
	young := e.clock.Now().Add(-orphanAge / 2)

	keep := map[string]string{}
	for key, why := range map[string]string{
		"sst/n1/live.sst":             "live",
		"sst/n1/removed.sst":          "garbage within its grace period",
		"sst/n1/discarded.sst":        "discarded, within its grace period",
		"sst/n2/dropped-live.sst":     "live in a table only the garbage list names",
		"sst/n2/dropped-removed.sst":  "garbage of a table the schema lacks",
		"sst/n2/half-dropped.sst":     "live in a table neither the schema nor the garbage list names",
		"sst/n1/young.sst":            "unreferenced but young",
		"compaction/x/job/young.sst":  "unreferenced but young",
		"other/old.sst":               "outside the prefixes",
		"sstx/old.sst":                "outside the prefixes (no slash)",
		"manifest/old-archive-object": "the manifest archive",
	} {
		keep[key] = why
		at := old
		if why == "unreferenced but young" {
			at = young
		}
		e.put(key, at)
	}
	e.add(e.table, "sst/n1/live.sst", 0)
	e.add(e.table, "sst/n1/removed.sst", 1)
	e.remove(e.table, "sst/n1/removed.sst", 1)
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: e.table, Range: 2, Discard: []string{"sst/n1/discarded.sst"}}); err != nil {
		t.Fatal(err)
	}
	e.add(dropped, "sst/n2/dropped-live.sst", 3)
	e.add(dropped, "sst/n2/dropped-removed.sst", 0)
	e.remove(dropped, "sst/n2/dropped-removed.sst", 0)
	e.add(halfDropped, "sst/n2/half-dropped.sst", 1)
	orphans := []string{"sst/n1/orphan.sst", "sst/n9/crashed-flush.sst", "compaction/x/job/00000.sst"}
	for _, key := range orphans {
		e.put(key, old)
	}
	orphanBytes := int64(0)
	for _, key := range orphans {
		a, err := e.store.Head(e.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		orphanBytes += a.Size
	}

	reg := prometheus.NewRegistry()
	c := e.orphanCollector("n1", reg)
	st, err := c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Swept || st.Suspects != len(orphans) || st.YoungOrphans != 2 || st.Orphans != 0 {
		t.Fatalf("first sweep: %+v; want %d suspects, 2 young, none deleted", st, len(orphans))
	}
	for _, key := range orphans {
		if !e.exists(key) {
			t.Fatalf("%s deleted at its first sighting", key)
		}
	}
	// Not due again within the interval.
	e.clock.Add(time.Hour - time.Second)
	if st, err := c.Collect(e.ctx); err != nil || st.Swept {
		t.Fatalf("pass within the orphan interval: %+v, %v", st, err)
	}
	e.clock.Add(time.Second)
	st, err = c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Swept || st.Orphans != len(orphans) || st.OrphanBytes != orphanBytes || st.Suspects != 0 || st.Failed != 0 {
		t.Fatalf("second sweep: %+v; want %d orphans of %d bytes", st, len(orphans), orphanBytes)
	}
	for _, key := range orphans {
		if e.exists(key) {
			t.Errorf("orphan %s survived", key)
		}
	}
	for key, why := range keep {
		if !e.exists(key) {
			t.Errorf("%s (%s) deleted", key, why)
		}
	}
	if v := value(t, c.orphans); v != float64(len(orphans)) {
		t.Errorf("orphans_deleted_total %v, want %d", v, len(orphans))
	}
	if v := value(t, c.orphanBytes); v != float64(orphanBytes) {
		t.Errorf("orphan_bytes_deleted_total %v, want %d", v, orphanBytes)
	}
	if v := value(t, c.young); v != 2 {
		t.Errorf("young_orphans %v, want 2", v)
	}
	if v := value(t, c.sweeps); v != 2 {
		t.Errorf("orphan_sweeps_total %v, want 2", v)
	}
}

// listHookStore runs hook once, after the first listing.
type listHookStore struct {
	objectstore.Store
	once sync.Once
	hook func()
}

func (s *listHookStore) List(ctx context.Context, prefix string, fn func(objectstore.Attrs) error) error {
	if err := s.Store.List(ctx, prefix, fn); err != nil {
		return err
	}
	s.once.Do(s.hook)
	return nil
}

// TestOrphanCommittedAfterListing checks the order of a sweep: an object
// committed after the listing, and one committed between the sweep that
// first found it unreferenced and the next, both survive.
func TestOrphanCommittedAfterListing(t *testing.T) {
	e := newEnv(t)
	e.schemaTable()
	e.clock.now = time.Now()
	old := e.clock.Now().Add(-2 * orphanAge)
	e.put("sst/n1/late.sst", old)
	e.put("sst/n1/later.sst", old)
	e.store.Store = &listHookStore{Store: e.store.Store, hook: func() { e.add(e.table, "sst/n1/late.sst", 0) }}
	c := e.orphanCollector("n1", nil)
	st, err := c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Suspects != 1 {
		t.Fatalf("first sweep: %+v; want only later.sst suspected", st)
	}
	e.add(e.table, "sst/n1/later.sst", 1)
	e.clock.Add(time.Hour)
	st, err = c.Collect(e.ctx)
	if err != nil || !st.Swept || st.Orphans != 0 || st.Suspects != 0 {
		t.Fatalf("second sweep: %+v, %v; want nothing deleted or suspected", st, err)
	}
	for _, key := range []string{"sst/n1/late.sst", "sst/n1/later.sst"} {
		if !e.exists(key) {
			t.Errorf("%s, committed, deleted", key)
		}
	}
}

// TestOrphanDeleteFailureRetried checks that an orphan whose deletion
// failed is deleted at the next sweep.
func TestOrphanDeleteFailureRetried(t *testing.T) {
	e := newEnv(t)
	e.clock.now = time.Now()
	e.put("sst/n1/orphan.sst", e.clock.Now().Add(-2*orphanAge))
	c := e.orphanCollector("n1", nil)
	if st, err := c.Collect(e.ctx); err != nil || st.Suspects != 1 {
		t.Fatalf("first sweep: %+v, %v", st, err)
	}
	e.store.fail["sst/n1/orphan.sst"] = true
	e.clock.Add(time.Hour)
	if st, err := c.Collect(e.ctx); err != nil || st.Failed != 1 || st.Orphans != 0 {
		t.Fatalf("failing sweep: %+v, %v", st, err)
	}
	e.store.mu.Lock()
	delete(e.store.fail, "sst/n1/orphan.sst")
	e.store.mu.Unlock()
	e.clock.Add(time.Hour)
	if st, err := c.Collect(e.ctx); err != nil || st.Orphans != 1 {
		t.Fatalf("retrying sweep: %+v, %v", st, err)
	}
	if e.exists("sst/n1/orphan.sst") {
		t.Fatal("orphan survived")
	}
}

func TestOrphanConfig(t *testing.T) {
	var c Config
	fs := flagSet(&c)
	if c.Validate() != nil || c.OrphanInterval != time.Hour || c.OrphanAge != 24*time.Hour || len(c.OrphanPrefixes) != 2 {
		t.Fatalf("defaults %+v invalid or unexpected: %v", c, c.Validate())
	}
	if err := fs.Parse([]string{"-gc.orphan-interval=10m", "-gc.orphan-age=48h", "-gc.orphan-prefixes=data/,compaction/"}); err != nil {
		t.Fatal(err)
	}
	if c.OrphanInterval != 10*time.Minute || c.OrphanAge != 48*time.Hour || c.OrphanPrefixes[0] != "data/" || c.OrphanPrefixes[1] != "compaction/" || c.Validate() != nil {
		t.Fatalf("parsed %+v", c)
	}
	valid := c
	for name, change := range map[string]func(*Config){
		"negative interval":  func(c *Config) { c.OrphanInterval = -1 },
		"age below minimum":  func(c *Config) { c.OrphanAge = MinOrphanAge - time.Second },
		"age within grace":   func(c *Config) { c.GracePeriod = 2 * c.OrphanAge },
		"no prefixes":        func(c *Config) { c.OrphanPrefixes = nil },
		"empty prefix":       func(c *Config) { c.OrphanPrefixes = []string{""} },
		"root prefix":        func(c *Config) { c.OrphanPrefixes = []string{"/"} },
		"no slash":           func(c *Config) { c.OrphanPrefixes = []string{"sst"} },
		"archive":            func(c *Config) { c.OrphanPrefixes = []string{"sst/", "manifest/"} },
		"inside the archive": func(c *Config) { c.OrphanPrefixes = []string{"manifest/sstables/"} },
		"leading slash":      func(c *Config) { c.OrphanPrefixes = []string{"/sst/"} },
	} {
		bad := valid
		bad.OrphanPrefixes = slices.Clone(valid.OrphanPrefixes)
		change(&bad)
		if bad.Validate() == nil {
			t.Errorf("%s: %+v validated", name, bad)
		}
	}
	off := Config{GracePeriod: time.Hour, Interval: time.Minute}
	if err := off.Validate(); err != nil {
		t.Errorf("sweep off: %v", err)
	}
}

// TestOrphanSightingsForgottenWithLease checks that a collector that lost
// the lease forgets its sightings: the other collector swept meanwhile, so
// they are no read an interval before its next sweep.
func TestOrphanSightingsForgottenWithLease(t *testing.T) {
	e := newEnv(t)
	e.clock.now = time.Now()
	e.put("sst/n1/orphan.sst", e.clock.Now().Add(-2*orphanAge))
	c1, c2 := e.orphanCollector("n1", nil), e.orphanCollector("n2", nil)
	if st, err := c1.Collect(e.ctx); err != nil || st.Suspects != 1 {
		t.Fatalf("n1's first sweep: %+v, %v", st, err)
	}
	e.clock.Add(2 * time.Minute) // n1's lease expires
	if st, err := c2.Collect(e.ctx); err != nil || st.Suspects != 1 {
		t.Fatalf("n2's first sweep: %+v, %v", st, err)
	}
	if _, err := c1.Collect(e.ctx); !errors.Is(err, manifest.ErrLeaseHeld) {
		t.Fatalf("n1's pass while n2 holds the lease: %v", err)
	}
	e.clock.Add(time.Hour) // n2's lease expires too
	st, err := c1.Collect(e.ctx)
	if err != nil || !st.Swept || st.Orphans != 0 || st.Suspects != 1 {
		t.Fatalf("n1's sweep after losing the lease: %+v, %v; want a first sighting", st, err)
	}
	if !e.exists("sst/n1/orphan.sst") {
		t.Fatal("orphan deleted on a stale sighting")
	}
}
