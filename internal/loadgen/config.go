// Package loadgen drives a CQL server with a synthetic workload through the
// gocql driver and measures it: the engine of `sediment bench`.
//
// # Schema
//
// The workloads use two tables of one keyspace, created with IF NOT EXISTS
// by the setup step:
//
//	CREATE TABLE <ks>.<table>         (pk bigint, ck bigint, v blob,    PRIMARY KEY (pk, ck))
//	CREATE TABLE <ks>.<table>_counter (pk bigint, ck bigint, c counter, PRIMARY KEY (pk, ck))
//
// The key space is Partitions partitions of ClusteringRows rows each. Row n
// of it is (pk, ck) = (n / ClusteringRows, n % ClusteringRows), so a
// sequential write of Partitions*ClusteringRows operations fills it exactly.
//
// # Workloads
//
//	workload  one operation                                      key drawn from
//	--------  -------------------------------------------------  --------------
//	write     INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)          rows
//	read      SELECT v FROM t WHERE pk = ? AND ck = ?             rows
//	mixed     a read with probability ReadRatio, else a write     rows
//	scan      SELECT ck, v FROM t WHERE pk = ?  (whole partition) partitions
//	counter   UPDATE t_counter SET c = c + 1 WHERE pk = ? AND ck = ?  rows
//
// Every statement is prepared; the driver routes executions to a replica of
// their token. A read or scan that finds no row is a miss; in the read and
// scan workloads a miss also counts as an error, since they are meant to run
// over written data, while in mixed ones reads may precede the writes of their
// keys.
//
// # Keys
//
// Keys are drawn uniformly, sequentially (one counter shared by every worker,
// wrapping around the key space) or from a Zipf distribution with exponent
// ZipfS > 1 in which key 0 is the most frequent.
//
// # Ceiling
//
// With Ceiling, Run starts an in-process CQL server whose handler is a
// NullHandler and runs the workload against it: the throughput of the
// protocol path of this machine with this client, an upper bound for any
// engine behind it.
//
// With CeilingCommitlog as well, the null server acknowledges a write only
// once it is synced to a commitlog in that directory, as an ingest node
// does: one log per core, the writes that arrive while a log syncs appended
// together as its next record (group commit). That is the durable ceiling,
// an ingest node's durability with none of its other work: against the
// plain ceiling it says what syncing before acknowledging costs on that
// disk, and a server's writes against it say what the rest of their path
// costs.
package loadgen

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The workloads.
const (
	Write   = "write"
	Read    = "read"
	Mixed   = "mixed"
	Scan    = "scan"
	Counter = "counter"
)

// The key distributions.
const (
	Uniform    = "uniform"
	Sequential = "sequential"
	Zipfian    = "zipfian"
)

// Config describes a run. DefaultConfig gives the defaults of `sediment
// bench`.
type Config struct {
	// Workload is Write, Read, Mixed, Scan or Counter.
	Workload string
	// ReadRatio is the share of reads of a Mixed workload, in [0, 1].
	ReadRatio float64
	// Distribution of the keys: Uniform, Sequential or Zipfian.
	Distribution string
	// ZipfS is the exponent of the Zipfian distribution, > 1.
	ZipfS float64
	// RowSize is the size of the blob of each written row, in bytes.
	RowSize int
	// ClusteringRows is the number of rows of each partition.
	ClusteringRows int
	// Partitions is the number of partitions of the key space.
	Partitions int64
	// Concurrency is the number of operations in flight (one worker each).
	Concurrency int
	// Connections is the number of connections per host (gocql NumConns).
	Connections int
	// Duration stops the run after this long; Count after this many
	// operations. Zero is no limit; at least one of them is set.
	Duration time.Duration
	Count    int64
	// Rate limits the operations per second of the run; 0 is no limit.
	Rate float64
	// Hosts are the CQL servers, host:port.
	Hosts []string
	// Keyspace and Table name the tables (see the package comment).
	Keyspace, Table string
	// Setup creates the keyspace and tables if they do not exist.
	Setup bool
	// Ceiling runs against an in-process null server instead of Hosts.
	Ceiling bool
	// CeilingCommitlog, with Ceiling, is a directory in which the null
	// server syncs each write to a commitlog before acknowledging it: the
	// durable ceiling (see the package comment).
	CeilingCommitlog string
	// Timeout of one operation.
	Timeout time.Duration
	// Seed of the random keys and values; runs with one seed draw the same
	// keys in each worker.
	Seed uint64
}

// DefaultConfig returns the defaults of `sediment bench`.
func DefaultConfig() Config {
	return Config{
		Workload:       Write,
		ReadRatio:      0.5,
		Distribution:   Uniform,
		ZipfS:          1.1,
		RowSize:        100,
		ClusteringRows: 1,
		Partitions:     100_000,
		Concurrency:    64,
		Connections:    2,
		Duration:       10 * time.Second,
		Hosts:          []string{"127.0.0.1:9042"},
		Keyspace:       "sediment_bench",
		Table:          "bench",
		Setup:          true,
		Timeout:        10 * time.Second,
		Seed:           1,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	switch c.Workload {
	case Write, Read, Mixed, Scan, Counter:
	default:
		errs = append(errs, fmt.Errorf("unknown workload %q (want write, read, mixed, scan or counter)", c.Workload))
	}
	switch c.Distribution {
	case Uniform, Sequential:
	case Zipfian:
		if !(c.ZipfS > 1) {
			errs = append(errs, fmt.Errorf("zipf exponent %g must be > 1", c.ZipfS))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown key distribution %q (want uniform, sequential or zipfian)", c.Distribution))
	}
	if c.ReadRatio < 0 || c.ReadRatio > 1 {
		errs = append(errs, fmt.Errorf("read ratio %g is not in [0, 1]", c.ReadRatio))
	}
	if c.RowSize < 0 {
		errs = append(errs, fmt.Errorf("row size %d is negative", c.RowSize))
	}
	if c.ClusteringRows < 1 {
		errs = append(errs, fmt.Errorf("clustering rows %d must be at least 1", c.ClusteringRows))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("partitions %d must be at least 1", c.Partitions))
	} else if c.ClusteringRows >= 1 && c.Partitions > (1<<62)/int64(c.ClusteringRows) {
		errs = append(errs, fmt.Errorf("%d partitions of %d rows overflow the key space", c.Partitions, c.ClusteringRows))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d must be at least 1", c.Concurrency))
	}
	if c.Connections < 1 {
		errs = append(errs, fmt.Errorf("connections %d must be at least 1", c.Connections))
	}
	if c.Duration < 0 || c.Count < 0 {
		errs = append(errs, errors.New("duration and count must not be negative"))
	} else if c.Duration == 0 && c.Count == 0 {
		errs = append(errs, errors.New("a duration or a count is needed"))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %g is negative", c.Rate))
	}
	if len(c.Hosts) == 0 && !c.Ceiling {
		errs = append(errs, errors.New("no hosts"))
	}
	if c.CeilingCommitlog != "" && !c.Ceiling {
		errs = append(errs, errors.New("a ceiling commitlog without the ceiling"))
	}
	if !isIdent(c.Keyspace) || !isIdent(c.Table) {
		errs = append(errs, fmt.Errorf("keyspace %q and table %q must be lower-case identifiers (a-z, 0-9, _)", c.Keyspace, c.Table))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %v must be positive", c.Timeout))
	}
	return errors.Join(errs...)
}

// isIdent reports whether s is a lower-case unquoted CQL identifier, which
// the statements can use as it is and which names itself in metadata.
func isIdent(s string) bool {
	if s == "" || len(s) > 40 || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) < 0
}

// rows is the size of the key space in rows.
func (c *Config) rows() int64 { return c.Partitions * int64(c.ClusteringRows) }
