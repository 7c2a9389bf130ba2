package status

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestQuantile: the quantiles of the requests between two samples,
// interpolated within their bucket as histogram_quantile does.
func TestQuantile(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := point{at: t0, latency: []bucket{{0.001, 10}, {0.01, 10}, {0.1, 10}, {math.Inf(1), 10}}}
	// 100 requests since a: 50 up to 1 ms, 40 up to 10 ms, 10 up to 100 ms.
	b := point{at: t0.Add(10 * time.Second), latency: []bucket{{0.001, 60}, {0.01, 100}, {0.1, 110}, {math.Inf(1), 110}}}
	for _, c := range []struct{ q, want float64 }{
		{0.5, 1},   // the 50th request ends the first bucket
		{0.7, 5.5}, // 20 of the second bucket's 40: half way from 1 to 10 ms
		{0.99, 91}, // 9 of the third bucket's 10: 10 + 0.9 × 90 ms
	} {
		if got := quantile(a, b, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile %.2f = %v ms, want %v", c.q, got, c.want)
		}
	}
	if got := quantile(b, b, 0.5); !math.IsNaN(got) {
		t.Errorf("quantile without requests = %v, want NaN", got)
	}
	// Past the largest finite bound, the answer is that bound.
	c := point{at: t0.Add(20 * time.Second), latency: []bucket{{0.001, 60}, {0.01, 100}, {0.1, 110}, {math.Inf(1), 210}}}
	if got := quantile(b, c, 0.5); got != 100 {
		t.Errorf("quantile beyond the buckets = %v ms, want 100", got)
	}
}

// TestHistoryKeeps: samples older than Keep go; rates come from the
// registry's counters.
func TestHistoryKeeps(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sediment_cql_requests_total", Help: "h"}, []string{"opcode"})
	reg.MustRegister(reqs)
	h := NewHistory(reg, 10*time.Second, time.Minute)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		reqs.WithLabelValues("QUERY").Add(50)
		reqs.WithLabelValues("EXECUTE").Add(30)
		h.Sample(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	ps := h.snapshot()
	if len(ps) != 7 || !ps[0].at.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("%d samples from %v, want the 7 of the last minute", len(ps), ps[0].at)
	}
	cs := charts(ps, t0.Add(90*time.Second), time.Minute)
	if cs[0].ID != "ops" || cs[0].Lines[0].LastRaw != "8" || len(cs[0].Lines[0].Values) != 6 {
		t.Errorf("ops chart %+v, want 80 requests per 10 s: 8/s", cs[0].Lines)
	}
}

// TestQuantileOfHistograms: the quantile of real histograms, whose +Inf
// bucket the exposition leaves out, summed over their labels.
func TestQuantileOfHistograms(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "d", Help: "h", Buckets: []float64{0.001, 0.01, 0.1}}, []string{"op"})
	reg.MustRegister(h)
	for range 50 {
		h.WithLabelValues("a").Observe(0.0005)
	}
	for range 40 {
		h.WithLabelValues("b").Observe(0.005)
	}
	for range 10 {
		h.WithLabelValues("b").Observe(5) // beyond every bound
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ms := mfs[0].GetMetric()
	if got := Quantile(ms, 0.5); got != 1 {
		t.Errorf("p50 = %v ms, want 1", got)
	}
	if got := Quantile(ms, 0.95); got != 100 {
		t.Errorf("p95 = %v ms, want 100: the largest bound, for observations beyond it", got)
	}
}
