package objectstore

import (
	"context"
	"errors"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Operation names, one per kind of billable request. They label metrics.
const (
	opPut            = "put"
	opGet            = "get"
	opGetRange       = "get_range"
	opHead           = "head"
	opList           = "list"
	opDelete         = "delete"
	opCreateUpload   = "multipart_create"
	opUploadPart     = "multipart_upload_part"
	opCompleteUpload = "multipart_complete"
	opAbortUpload    = "multipart_abort"
)

// metrics counts every request a backend makes: the bill is made of them.
type metrics struct {
	requests *prometheus.CounterVec
	failures *prometheus.CounterVec
	retries  *prometheus.CounterVec
	sent     *prometheus.CounterVec
	received *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_objectstore_requests_total",
			Help: "Requests sent to the object store, retries included.",
		}, []string{"backend", "operation"}),
		failures: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_objectstore_request_errors_total",
			Help: "Requests that failed, by reason.",
		}, []string{"backend", "operation", "reason"}),
		retries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_objectstore_retries_total",
			Help: "Requests repeated after a transient failure.",
		}, []string{"backend", "operation"}),
		sent: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_objectstore_sent_bytes_total",
			Help: "Object bytes uploaded.",
		}, []string{"backend", "operation"}),
		received: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sediment_objectstore_received_bytes_total",
			Help: "Object bytes downloaded.",
		}, []string{"backend", "operation"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sediment_objectstore_request_duration_seconds",
			Help:    "Latency of object store requests until the response headers.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms to 32 s
		}, []string{"backend", "operation"}),
	}
}

// failureReason labels an error without unbounded cardinality.
func failureReason(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrPreconditionFailed):
		return "precondition_failed"
	case errors.Is(err, ErrInvalidRange):
		return "invalid_range"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "other"
	}
}

// countingReader adds the bytes read through it to a counter.
type countingReader struct {
	io.ReadCloser
	counter prometheus.Counter
	done    func()
	drain   bool // read a short remainder on Close, to keep the connection
	eof     bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.counter.Add(float64(n))
	}
	if err == io.EOF {
		r.eof = true
	}
	return n, err
}

// maxDrain bounds the bytes read on Close to keep an HTTP connection: a
// reader that took exactly the bytes it asked for has not yet seen EOF, and
// Go's transport discards a connection whose body was not read to the end.
const maxDrain = 16 << 10

func (r *countingReader) Close() error {
	if r.drain && !r.eof {
		io.CopyN(io.Discard, r.ReadCloser, maxDrain)
	}
	err := r.ReadCloser.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}
