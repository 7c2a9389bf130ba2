package exec

import (
	"context"
	"flag"
	"time"
)

// Timeouts are the server-side request timeouts of cassandra.yaml, under
// its names and with its defaults: a statement still running when its
// timeout passes has its work cancelled and is answered with ReadTimeout
// or WriteTimeout (Truncate_error for TRUNCATE), as the engine's own
// timeouts are. Zero turns a timeout off.
type Timeouts struct {
	// Read bounds a SELECT of partitions named by key
	// (read_request_timeout, 5s).
	Read time.Duration `yaml:"read_request_timeout"`
	// Range bounds a SELECT that scans token ranges
	// (range_request_timeout, 10s).
	Range time.Duration `yaml:"range_request_timeout"`
	// Write bounds INSERT, UPDATE, DELETE and BATCH
	// (write_request_timeout, 2s).
	Write time.Duration `yaml:"write_request_timeout"`
	// CASContention is added to Write for a conditional write, whose
	// read and write are one Paxos round in Cassandra
	// (cas_contention_timeout, 1s).
	CASContention time.Duration `yaml:"cas_contention_timeout"`
	// Truncate bounds TRUNCATE (truncate_request_timeout, 60s).
	Truncate time.Duration `yaml:"truncate_request_timeout"`
}

// RegisterFlags registers the timeouts' flags with their defaults in f
// under the prefix "cql.".
func (t *Timeouts) RegisterFlags(f *flag.FlagSet) {
	f.DurationVar(&t.Read, "cql.read-request-timeout", 5*time.Second, "Longest a SELECT of partitions by key runs before it is cancelled and answered ReadTimeout; 0: no bound.")
	f.DurationVar(&t.Range, "cql.range-request-timeout", 10*time.Second, "Longest a SELECT scanning token ranges runs before it is cancelled and answered ReadTimeout; 0: no bound.")
	f.DurationVar(&t.Write, "cql.write-request-timeout", 2*time.Second, "Longest an INSERT, UPDATE, DELETE or BATCH runs before it is cancelled and answered WriteTimeout; 0: no bound.")
	f.DurationVar(&t.CASContention, "cql.cas-contention-timeout", time.Second, "Added to the write timeout for a conditional write (IF ...).")
	f.DurationVar(&t.Truncate, "cql.truncate-request-timeout", time.Minute, "Longest a TRUNCATE runs before it is answered with a Truncate error; 0: no bound.")
}

// DefaultTimeouts returns the timeouts of the flags' defaults.
func DefaultTimeouts() Timeouts {
	var t Timeouts
	t.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	return t
}

// withTimeout returns ctx bounded by the timeout of pl's kind; DDL,
// system tables and the rest keep ctx as it is.
func (t *Timeouts) withTimeout(ctx context.Context, pl plan) (context.Context, context.CancelFunc) {
	var d time.Duration
	switch pl := pl.(type) {
	case *selectPlan:
		d = t.Read
		if pl.keys == nil {
			d = t.Range
		}
	case *modPlan:
		d = t.Write
		if d > 0 && pl.conditional() {
			d += t.CASContention
		}
	case *batchPlan:
		d = t.Write
	case *truncatePlan:
		d = t.Truncate
	}
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
