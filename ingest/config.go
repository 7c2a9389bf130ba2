package ingest

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/manifest"
)

// Config configures the ingest role: its node's shards, and the cluster
// setting the first node fixes.
type Config struct {
	// Shards is the number of shards, one per core by default.
	Shards int `yaml:"shards"`
	// MemtableSize is the size at which the active memtable is flushed.
	MemtableSize int64 `yaml:"memtable_size"`
	// FlushAge is the longest time a write stays in a memtable before a
	// flush is started, so that idle shards release their commitlog too.
	FlushAge time.Duration `yaml:"flush_age"`
	// MemoryLimit bounds each shard's active and flushing memtables. Past
	// it, writes wait for a flush to finish.
	MemoryLimit int64 `yaml:"memory_limit"`
	// WriteTimeout is how long a write may wait for memory before failing
	// with storage.ErrOverloaded.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// FlushMinBackoff and FlushMaxBackoff bound the pause between attempts
	// of a failing flush.
	FlushMinBackoff time.Duration `yaml:"flush_min_backoff"`
	FlushMaxBackoff time.Duration `yaml:"flush_max_backoff"`
	// FlushDelay is the longest delay of a flush whose L0 is filling up
	// (NodeDeps.L0 pressure in (0, 1), delayed in proportion), and how often a
	// held flush asks again. FlushHold is the longest a flush is held while
	// its L0 is at or past the limit. Zero turns each off.
	FlushDelay time.Duration `yaml:"flush_delay"`
	FlushHold  time.Duration `yaml:"flush_hold"`
	// ObjectPrefix is the key prefix of this node's SSTables in the bucket.
	// SSTable names are unique per node only, so nodes need their own.
	ObjectPrefix string `yaml:"object_prefix"`
	// MaxCommitDelay bounds the time from a flush's upload to its commit:
	// past it, the flush uploads its SSTables again first. The compactor's
	// orphan sweep (package gc) deletes unreferenced objects older than
	// -gc.orphan-age, which must stay well above it.
	MaxCommitDelay time.Duration `yaml:"max_commit_delay"`

	Commitlog CommitlogConfig `yaml:"commitlog"`
	Log       LogConfig       `yaml:"log"`

	// Ranges is the number of token ranges a new cluster's ring is cut
	// into: the unit of ownership, so the most ingest nodes that can share
	// the writes, and the split of every flush into SSTables.
	Ranges int `yaml:"ranges"`
	// OwnerLease is how long an ingest node may go without a heartbeat
	// before live nodes take its ranges over (with a replicated log only).
	OwnerLease time.Duration `yaml:"owner_lease"`
	// LeaveOnStop releases the node's ranges when it stops, after flushing,
	// for other nodes to claim. A node that will restart keeps them.
	LeaveOnStop bool `yaml:"leave_on_stop"`
	// RPCAddress is where the node serves writes and memtable reads to
	// frontends (package rpc); port 0 picks a free one.
	RPCAddress string `yaml:"rpc_address"`
}

// CommitlogConfig configures the shards' commitlogs.
type CommitlogConfig struct {
	// Dir holds one subdirectory per shard. It has no default of its own:
	// the server derives it from its data directory.
	Dir         string        `yaml:"dir"`
	SegmentSize int64         `yaml:"segment_size"`
	SyncMode    string        `yaml:"sync_mode"`
	SyncPeriod  time.Duration `yaml:"sync_period"`
}

// LogConfig selects the shards' write-ahead log.
type LogConfig struct {
	// Kind is LogLocal, the commitlog on the node's disk, or LogJetStream,
	// a stream in the cluster's NATS (package streamlog), which outlives
	// the node: what a cluster that must survive losing a machine uses.
	Kind string `yaml:"kind"`
	// Replicas of the stream, when the first shard creates it.
	Replicas int `yaml:"replicas"`
	// AppendTimeout bounds a group commit's wait for the stream; past it
	// its writes fail as unavailable (no quorum) or timed out.
	AppendTimeout time.Duration `yaml:"append_timeout"`
}

// The kinds of log.
const (
	LogLocal     = "local"
	LogJetStream = "jetstream"
)

// RegisterFlags registers the configuration's flags, with their defaults,
// in f under the prefix "ingest.".
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	const p = "ingest."
	f.IntVar(&c.Shards, p+"shards", runtime.GOMAXPROCS(0), "Shards of this node, each with its own goroutine, commitlog and memtable (default GOMAXPROCS).")
	f.Int64Var(&c.MemtableSize, p+"memtable-size", 64<<20, "Bytes of memtable at which a shard flushes it to the bucket.")
	f.DurationVar(&c.FlushAge, p+"flush-age", 10*time.Minute, "Longest time a write waits in a memtable before a flush starts.")
	f.Int64Var(&c.MemoryLimit, p+"memory-limit", 256<<20, "Bytes of active and flushing memtables per shard past which writes wait.")
	f.DurationVar(&c.WriteTimeout, p+"write-timeout", 2*time.Second, "How long a write waits for memtable memory before failing as overloaded.")
	f.DurationVar(&c.FlushMinBackoff, p+"flush-min-backoff", 100*time.Millisecond, "Pause before retrying a failed flush; doubles each time.")
	f.DurationVar(&c.FlushMaxBackoff, p+"flush-max-backoff", 10*time.Second, "Longest pause between flush attempts.")
	f.DurationVar(&c.FlushDelay, p+"flush-delay", time.Second, "Longest delay of a flush while its L0 fills towards the compaction strategy's l0_limit (in proportion to how full), and the period at which a held flush checks again.")
	f.DurationVar(&c.FlushHold, p+"flush-hold", time.Minute, "Longest a flush is held while its L0 is at or past l0_limit; memtables fill meanwhile and writes then fail as overloaded.")
	f.StringVar(&c.ObjectPrefix, p+"object-prefix", "sst", "Key prefix of this node's SSTables in the object store; give each node its own, as SSTable names are unique only per node.")
	f.DurationVar(&c.MaxCommitDelay, p+"max-commit-delay", time.Hour, "Longest time from a flush's upload to its commit; past it (NATS away, a held flush) the SSTables are uploaded again before the commit. Keep it well under -gc.orphan-age, past which the compactor deletes objects no manifest references.")
	f.StringVar(&c.Commitlog.Dir, p+"commitlog.dir", "", "Directory of the commitlogs, one subdirectory per shard. Required; the server sets it to <data.dir>/commitlog when empty.")
	f.Int64Var(&c.Commitlog.SegmentSize, p+"commitlog.segment-size", 32<<20, "Size at which a commitlog segment is closed and the next started.")
	f.StringVar(&c.Commitlog.SyncMode, p+"commitlog.sync-mode", "batch", "batch: acknowledge writes once synced; periodic: once written, syncing every sync-period.")
	f.DurationVar(&c.Commitlog.SyncPeriod, p+"commitlog.sync-period", time.Second, "Time between syncs in periodic mode.")
	f.StringVar(&c.Log.Kind, p+"log", LogLocal, "Write-ahead log of the shards: local (the commitlog on this node's disk, -ingest.commitlog.*) or jetstream (a stream in the cluster's NATS with -ingest.log.replicas replicas: a write is acknowledged once a quorum of NATS servers holds it, so it survives the loss of this machine).")
	f.IntVar(&c.Log.Replicas, p+"log.replicas", 3, "Replicas of the jetstream log's stream, set when it is created: 3 survives the loss of one NATS server; the NATS cluster needs at least as many servers.")
	f.DurationVar(&c.Log.AppendTimeout, p+"log.append-timeout", 2*time.Second, "Longest wait of a group commit for the jetstream log; past it its writes fail as unavailable (the log has no quorum) or timed out.")
	f.IntVar(&c.Ranges, p+"ranges", 16, "Token ranges of the ring, fixed when the cluster is created; starting a cluster's node with another count fails.")
	f.StringVar(&c.RPCAddress, p+"rpc-address", "127.0.0.1:9190", "Address (host:port) where the ingest node serves frontends' writes and memtable reads; port 0 picks a free one. Announced to the members unless -node.address is set.")
	f.DurationVar(&c.OwnerLease, p+"owner-lease", 10*time.Second, "With -ingest.log=jetstream: how long an ingest node may go without a heartbeat before the live ones claim its ranges under new epochs and replay its unflushed writes from the log. At least two -node.heartbeat-interval.")
	f.BoolVar(&c.LeaveOnStop, p+"leave-on-stop", false, "On stop, after flushing, release the node's token ranges for other nodes to claim: for a node leaving the cluster for good. A restarting node keeps its ranges.")
}

// DefaultConfig returns the configuration with every flag at its default.
func DefaultConfig() Config {
	var c Config
	c.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	return c
}

// maxMemtableSize keeps a memtable well inside its arena's address space
// (4095 chunks of 1 MiB), so that a batch never meets memtable.ErrFull.
const maxMemtableSize = 1 << 30

// Validate reports the first problem with the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Shards < 1 || c.Shards > 1<<16:
		return fmt.Errorf("ingest: shards %d out of range [1, 65536]", c.Shards)
	case c.MemtableSize < 64<<10 || c.MemtableSize > maxMemtableSize:
		return fmt.Errorf("ingest: memtable size %d out of range [64KiB, 1GiB]", c.MemtableSize)
	case c.FlushAge <= 0:
		return errors.New("ingest: flush age must be positive")
	case c.MemoryLimit < 2*c.MemtableSize:
		return fmt.Errorf("ingest: memory limit %d below twice the memtable size %d", c.MemoryLimit, c.MemtableSize)
	case c.WriteTimeout <= 0:
		return errors.New("ingest: write timeout must be positive")
	case c.FlushMinBackoff <= 0 || c.FlushMaxBackoff < c.FlushMinBackoff:
		return fmt.Errorf("ingest: flush backoff [%v, %v] invalid", c.FlushMinBackoff, c.FlushMaxBackoff)
	case c.MaxCommitDelay <= 0:
		return errors.New("ingest: max commit delay must be positive")
	case c.FlushDelay < 0 || c.FlushHold < 0:
		return fmt.Errorf("ingest: flush delay %v and hold %v must not be negative", c.FlushDelay, c.FlushHold)
	case c.Commitlog.SegmentSize < 64<<10 || c.Commitlog.SegmentSize > 1<<32:
		return fmt.Errorf("ingest: commitlog segment size %d out of range [64KiB, 4GiB]", c.Commitlog.SegmentSize)
	case c.Commitlog.SyncPeriod <= 0:
		return errors.New("ingest: commitlog sync period must be positive")
	case c.Commitlog.Dir == "":
		return errors.New("ingest: commitlog dir is required")
	}
	if _, err := c.Commitlog.syncMode(); err != nil {
		return err
	}
	switch {
	case c.Log.Kind != LogLocal && c.Log.Kind != LogJetStream:
		return fmt.Errorf("config: -ingest.log %q (local or jetstream)", c.Log.Kind)
	case c.Log.Replicas < 1 || c.Log.Replicas > 5:
		return fmt.Errorf("config: -ingest.log.replicas %d out of range [1, 5]", c.Log.Replicas)
	case c.Log.AppendTimeout <= 0:
		return errors.New("config: -ingest.log.append-timeout must be positive")
	case c.OwnerLease <= 0:
		return errors.New("config: -ingest.owner-lease must be positive")
	}
	if c.Ranges < 1 || c.Ranges > manifest.MaxRanges {
		return fmt.Errorf("config: -ingest.ranges %d out of range [1, %d]", c.Ranges, manifest.MaxRanges)
	}
	if _, _, err := net.SplitHostPort(c.RPCAddress); err != nil {
		return fmt.Errorf("config: -ingest.rpc-address: %w", err)
	}
	return nil
}

func (c *CommitlogConfig) syncMode() (commitlog.SyncMode, error) {
	switch c.SyncMode {
	case "batch":
		return commitlog.Batch, nil
	case "periodic":
		return commitlog.Periodic, nil
	}
	return 0, fmt.Errorf("ingest: unknown commitlog sync mode %q (batch or periodic)", c.SyncMode)
}
