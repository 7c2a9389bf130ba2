package transport

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/frontend/wire"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(testConfig(), newTestHandler(), Options{Registerer: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// A second server in the same process has metrics of its own.
	if _, err := New(testConfig(), newTestHandler(), Options{Registerer: prometheus.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	c := dial(t, ln.Addr().String())
	c.startup(nil)
	c.roundTrip(1, query("ECHO"))
	c.roundTrip(2, query("ECHO"))
	c.roundTrip(3, query("FAIL"))
	if got := value(t, s.m.requests.WithLabelValues("QUERY")); got != 3 {
		t.Errorf("QUERY requests %v, want 3", got)
	}
	if got := value(t, s.m.startups.WithLabelValues("v4")); got != 1 {
		t.Errorf("v4 startups %v, want 1", got)
	}
	if got := value(t, s.m.errors.WithLabelValues(wire.CodeInvalid.String())); got != 1 {
		t.Errorf("Invalid errors %v, want 1", got)
	}
	if got := value(t, s.m.connections); got != 1 {
		t.Errorf("connections %v, want 1", got)
	}
	c5 := dial(t, ln.Addr().String())
	c5.v = wire.V5
	c5.startup(nil)
	if got := value(t, s.m.startups.WithLabelValues("v5")); got != 1 {
		t.Errorf("v5 startups %v, want 1", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "sediment_cql_request_duration_seconds" {
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 3 {
				t.Errorf("%d durations observed, want 3", h.GetSampleCount())
			}
			return
		}
	}
	t.Error("no request durations registered")
}

// value reads a counter or gauge.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
