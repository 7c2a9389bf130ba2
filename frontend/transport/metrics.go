package transport

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

type metrics struct {
	connections prometheus.Gauge
	rejected    prometheus.Counter
	startups    *prometheus.CounterVec
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	inFlight    prometheus.Gauge
	duration    *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		connections: f.NewGauge(prometheus.GaugeOpts{
			Name: "sediment_cql_connections",
			Help: "Open CQL client connections.",
		}),
		rejected: f.NewCounter(prometheus.CounterOpts{
			Name: "sediment_cql_connections_rejected_total",
			Help: "CQL connections closed at once because max-connections were open.",
		}),
		startups: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_cql_startups_total",
			Help: "CQL connections started (STARTUP answered with READY or AUTHENTICATE), by protocol version: which versions clients speak.",
		}, []string{"version"}),
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_cql_requests_total",
			Help: "CQL requests by opcode.",
		}, []string{"opcode"}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_cql_errors_total",
			Help: "CQL ERROR responses by code.",
		}, []string{"code"}),
		inFlight: f.NewGauge(prometheus.GaugeOpts{
			Name: "sediment_cql_requests_in_flight",
			Help: "CQL statements executing now.",
		}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sediment_cql_request_duration_seconds",
			Help:    "Time from reading a CQL statement to queueing its answer, by opcode.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10),
		}, []string{"opcode"}),
	}
}
