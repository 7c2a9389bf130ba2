package status

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// clusterCollector exports what the process's View says of the cluster's
// health, read at scrape time: the members whose heartbeat is stale, and
// the token ranges nobody owns or whose owner is stale or gone. Every
// process can alarm on them; a Terraform alarm reads them from the
// compactors.
type clusterCollector struct {
	catalog func() Catalog
	now     func() time.Time
	maxAge  time.Duration

	stale, unowned, staleOwned *prometheus.Desc
}

// RegisterClusterMetrics registers the cluster health gauges on reg:
// sediment_cluster_stale_members (by role), sediment_cluster_unowned_ranges
// and sediment_cluster_stale_owner_ranges. catalog is read at each scrape;
// before the manifest starts the gauges are absent.
func RegisterClusterMetrics(reg prometheus.Registerer, catalog func() Catalog) error {
	return reg.Register(newClusterCollector(catalog, time.Now))
}

func newClusterCollector(catalog func() Catalog, now func() time.Time) *clusterCollector {
	return &clusterCollector{
		catalog: catalog, now: now, maxAge: DefaultMaxAge,
		stale: prometheus.NewDesc("sediment_cluster_stale_members",
			"Members whose last heartbeat is older than 15s, by role: crashed, or cut off from NATS.", []string{"role"}, nil),
		unowned: prometheus.NewDesc("sediment_cluster_unowned_ranges",
			"Token ranges no ingest node owns: their writes fail.", nil, nil),
		staleOwned: prometheus.NewDesc("sediment_cluster_stale_owner_ranges",
			"Token ranges whose owner is stale or no longer a member: their writes fail until a live node takes them over.", nil, nil),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stale
	ch <- c.unowned
	ch <- c.staleOwned
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.catalog().View
	if v == nil {
		return
	}
	now := c.now()
	stale := map[string]float64{"ingest": 0, "frontend": 0, "compactor": 0}
	for _, m := range v.Members() {
		if !m.Live(now, c.maxAge) {
			for _, r := range m.Roles {
				stale[r]++
			}
		}
	}
	for role, n := range stale {
		ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, n, role)
	}
	var unowned, staleOwned float64
	for _, r := range ranges(v, now, c.maxAge) {
		switch {
		case r.Owner == "":
			unowned++
		case !r.Healthy:
			staleOwned++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.unowned, prometheus.GaugeValue, unowned)
	ch <- prometheus.MustNewConstMetric(c.staleOwned, prometheus.GaugeValue, staleOwned)
}
