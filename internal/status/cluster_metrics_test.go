package status

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestClusterMetrics: with every member fresh nothing is stale or
// unowned; an hour later every member is stale, and so is every range's
// owner.
func TestClusterMetrics(t *testing.T) {
	f := newFixture(t)
	v := f.src.Catalog().View
	byRole := map[string]int{"ingest": 0, "frontend": 0, "compactor": 0}
	for _, m := range v.Members() {
		for _, r := range m.Roles {
			byRole[r]++
		}
	}
	for _, c := range []struct {
		later           time.Duration
		stale           map[string]int
		unowned, staled int
	}{
		{0, map[string]int{"ingest": 0, "frontend": 0, "compactor": 0}, 0, 0},
		{time.Hour, byRole, 0, v.RangeCount()},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(newClusterCollector(f.src.Catalog, func() time.Time { return time.Now().Add(c.later) }))
		want := map[string]float64{
			"sediment_cluster_unowned_ranges":     float64(c.unowned),
			"sediment_cluster_stale_owner_ranges": float64(c.staled),
		}
		for role, n := range c.stale {
			want["sediment_cluster_stale_members/"+role] = float64(n)
		}
		if got := gatheredGauges(t, reg); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s later: %v, want %v", c.later, got, want)
		}
	}
	// Before the manifest starts: no gauges.
	reg := prometheus.NewRegistry()
	if err := RegisterClusterMetrics(reg, func() Catalog { return Catalog{} }); err != nil {
		t.Fatal(err)
	}
	if got := gatheredGauges(t, reg); len(got) != 0 {
		t.Errorf("metrics without a catalog: %v", got)
	}
}

// gatheredGauges returns reg's gauges by name, and label value if any.
func gatheredGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}
