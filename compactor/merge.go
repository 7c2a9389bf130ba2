// Package compactor merges SSTables: the execution core of a compaction
// job. Run reads a job's input SSTables from the object store, merges them
// into one sorted stream, drops what is dead and writes the stream back as
// new SSTables. Around it: the strategy and the lease-elected Planner that
// turn the manifest into jobs, the Queue (a JetStream work queue) that
// carries them, and the Worker that runs them and commits their outputs to
// the manifest (see docs/compaction.md).
//
// # Merge
//
// Each input is read front to back through its own read-ahead window: its
// data blocks are fetched with ranged GETs of a chunk, one chunk ahead of
// the one being merged. The inputs share Options.ReadAhead evenly, so a job
// holds at most that many bytes of input data, whatever the inputs' sizes
// (plus each input's block index and filter, which sstable.Reader keeps).
// A k-way merge (kv.Merging) reconciles entries that share a key with
// model.Merge.
// Then, within each partition, whose header entry comes first:
//
//   - rows lose what the partition deletion or a range tombstone shadows
//     (model.Row.Shadow), so dead data does not outlive the merge that meets
//     its deletion;
//   - expired cells become tombstones;
//   - tombstones are dropped where the purge rule below allows;
//   - an entry left empty is not written.
//
// # Purge rule
//
// A tombstone (a cell tombstone, an expired cell or row marker, a row,
// collection, range or partition deletion) with deletion time
// (MarkedForDeleteAt, LocalDeletionTime) is dropped iff
//
//	LocalDeletionTime < Job.GCBefore  &&  MarkedForDeleteAt < Job.OldestOutside
//
// GCBefore is now minus the table's gc_grace_seconds: replicas had that long
// to learn of the deletion. OldestOutside is the smallest write timestamp of
// any data of the table that the job does not read and that may share a
// partition with it: the MinTimestamp of every live SSTable outside the job
// whose token range overlaps the job's, and the oldest write not yet flushed
// (memtables and flushes in flight). A tombstone deletes data written at or
// before MarkedForDeleteAt; everything outside the job was written at
// OldestOutside or later, so a dropped tombstone shadowed nothing outside
// the job, and inside it the merge has already removed what it shadowed.
// This is Cassandra's rule in its simplest safe form (one bound per job
// rather than one per partition). A caller that cannot know OldestOutside
// must leave GCBefore at 0, which turns purging off; expired cells still
// become tombstones, which never changes a read.
//
// # Outputs
//
// Outputs are written as they are produced, each a streaming upload named
//
//	<Options.ObjectPrefix>/<table>/<job ID>/<%05d output number>.sst
//
// through tablestore, as flushes are (partition filter, entry statistics).
// A new output starts at the first partition boundary after the current one
// has sent Job.TargetSize bytes to the store, so no partition is ever split
// and the outputs of one job never overlap. The manifest entries Run returns
// carry each output's key range, tokens and timestamps; the first carries the
// inputs' Covers, so that as many live SSTables name each flush after the
// swap as before it.
//
// A failed job leaves at most orphan objects: Stats.Written lists every
// output it started, for the caller to put on the garbage list
// (manifest.Commit.Discard).
package compactor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// ErrInvalidJob marks a job that cannot run as given.
var ErrInvalidJob = errors.New("compaction: invalid job")

// Job is one merge: its inputs, where its outputs go and what it may purge.
type Job struct {
	// ID names the attempt's outputs. It must be unique per attempt, so
	// that no attempt overwrites another's objects, committed or not, and
	// a valid object key segment.
	ID     string
	Table  uuid.UUID
	Inputs []manifest.SSTable
	// OutputLevel is the level recorded on the outputs.
	OutputLevel int
	// TargetSize is the stored size at which an output ends, at the next
	// partition boundary. 0 or less: one output.
	TargetSize int64
	// Now is the time (seconds) at which expiry is judged.
	Now int64
	// GCBefore (seconds): tombstones written before it may be purged,
	// typically Now minus gc_grace_seconds. 0 purges nothing.
	GCBefore int64
	// OldestOutside (µs) bounds from below the write timestamps of the
	// table's data outside the job that may overlap it; see the package
	// comment. math.MaxInt64 when there is none.
	OldestOutside int64
}

// Options configure how jobs run. The zero value is usable.
type Options struct {
	// ObjectPrefix starts the outputs' object keys; "compaction" if empty.
	ObjectPrefix string
	// ReadAhead bounds the bytes of input data a job holds; default
	// DefaultReadAhead. Each input gets two chunks of
	// ReadAhead/(2·inputs) bytes, at least MinChunk: one being merged,
	// one being fetched. Each chunk is one ranged GET, so larger chunks
	// cost fewer requests.
	ReadAhead int64
	// Writer configures the output SSTables; Split, Stats, WriterID and
	// CreatedAt are set by Run.
	Writer sstable.WriterOptions
	// TailSize is the size of the first read of each input's metadata;
	// sstable.DefaultTailSize if 0.
	TailSize int
}

// DefaultReadAhead is the default Options.ReadAhead: a job of 8 inputs
// reads them in 4 MiB ranged GETs, which keeps the requests, which the
// bill counts, few.
const DefaultReadAhead = 64 << 20

// MinChunk is the smallest read-ahead chunk, whatever the budget: smaller
// ranged GETs would cost more in requests than they save in memory.
const MinChunk = 4 << 10

// RunDeps are what a job runs against.
type RunDeps struct {
	Store   objectstore.Store
	Options Options
}

// Stats describe a job's run.
type Stats struct {
	// InputBytes is the stored size of the inputs.
	InputBytes   int64
	InputEntries uint64
	// OutputBytes is the stored size of the outputs written.
	OutputBytes   int64
	OutputEntries uint64
	Partitions    uint64
	// Dropped counts merged entries left empty by shadowing and purging.
	Dropped uint64
	// TombstonesPurged counts deletions and tombstone cells dropped,
	// Expired the cells turned into tombstones.
	TombstonesPurged, Expired uint64
	// Requests counts the ranged reads of the inputs.
	Requests int64
	// PeakReadAhead is the most input bytes the read-ahead held at once.
	PeakReadAhead int64
	// Written lists the object keys of every output started, finished or
	// not. After a failure the caller discards them; nothing else is left.
	Written []string
}

// Run merges the job's inputs into new SSTables in the store and returns
// their manifest entries, not yet committed. On error, stats.Written names
// the objects that may have been left behind.
func Run(ctx context.Context, job Job, deps RunDeps) (outputs []manifest.SSTable, stats Stats, err error) {
	if err := job.validate(); err != nil {
		return nil, stats, err
	}
	if deps.Store == nil {
		return nil, stats, fmt.Errorf("%w: no store", ErrInvalidJob)
	}
	opts := deps.Options
	if opts.ObjectPrefix == "" {
		opts.ObjectPrefix = "compaction"
	}
	if opts.ReadAhead <= 0 {
		opts.ReadAhead = DefaultReadAhead
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	m := &merger{job: job, store: deps.Store, opts: opts, created: time.Now().UTC()}
	m.purge = purger{now: job.Now, gcBefore: job.GCBefore, oldestOutside: job.OldestOutside, stats: &m.stats}
	defer m.closeInputs()
	it, err := m.openInputs(ctx)
	if err == nil {
		err = m.merge(ctx, it)
	}
	m.stats.PeakReadAhead = m.mem.peak.Load()
	for _, ra := range m.inputs {
		m.stats.Requests += ra.requests
	}
	if err != nil {
		if m.out != nil {
			m.out.w.Abort()
		}
		return nil, m.stats, fmt.Errorf("compaction: job %s: %w", job.ID, err)
	}
	return m.outputs, m.stats, nil
}

func (j *Job) validate() error {
	switch {
	case j.ID == "" || strings.ContainsAny(j.ID, "/") || j.ID == "." || j.ID == "..":
		return fmt.Errorf("%w: job ID %q is not an object key segment", ErrInvalidJob, j.ID)
	case len(j.Inputs) == 0:
		return fmt.Errorf("%w: job %s has no inputs", ErrInvalidJob, j.ID)
	}
	seen := make(map[string]bool, len(j.Inputs))
	for _, in := range j.Inputs {
		if in.Size <= 0 {
			return fmt.Errorf("%w: input %q has size %d", ErrInvalidJob, in.Key, in.Size)
		}
		if seen[in.Key] {
			return fmt.Errorf("%w: input %q given twice", ErrInvalidJob, in.Key)
		}
		seen[in.Key] = true
	}
	return nil
}

// merger is the state of one run.
type merger struct {
	job     Job
	store   objectstore.Store
	opts    Options
	created time.Time
	purge   purger
	// mayPurge is false when the inputs' properties show nothing that can
	// expire by Now or be purged: then rows no header deletes are copied
	// without decoding.
	mayPurge bool
	stats    Stats
	mem      gauge
	inputs   []*readahead

	// The partition being merged: its prefix, and its header as merged,
	// before purging, which decides what its rows lose.
	part    []byte
	hdr     model.Header
	hdrBuf  []byte
	hasHdr  bool
	outHdr  model.Header
	row     model.Row
	scratch []byte

	out     *output
	outputs []manifest.SSTable
}

// openInputs opens every input and returns the merge of their entries.
func (m *merger) openInputs(ctx context.Context) (kv.Iterator, error) {
	iters := make([]kv.Iterator, 0, len(m.job.Inputs))
	chunk := max(m.opts.ReadAhead/int64(2*len(m.job.Inputs)), MinChunk)
	for _, in := range m.job.Inputs {
		ra := newReadahead(ctx, m.store, in.Key, in.Size, chunk, &m.mem)
		m.inputs = append(m.inputs, ra)
		r, err := tablestore.OpenAt(ctx, ra, in.Size, m.opts.TailSize)
		if err != nil {
			closeAll(iters)
			return nil, fmt.Errorf("open %s: %w", in.Key, err)
		}
		props := r.Properties()
		ra.setLimit(int64(props.DataSize))
		if props.MinLocalDeletionTime <= m.job.Now || props.MinLocalDeletionTime < m.job.GCBefore {
			m.mayPurge = true
		}
		m.stats.InputBytes += in.Size
		m.stats.InputEntries += r.Properties().Entries
		iters = append(iters, &namedIter{Iterator: r.NewIter(ctx, nil, nil), key: in.Key})
	}
	return kv.Merging(model.Merge, iters...), nil
}

func closeAll(iters []kv.Iterator) {
	for _, it := range iters {
		it.Close()
	}
}

func (m *merger) closeInputs() {
	for _, ra := range m.inputs {
		ra.close()
	}
}

// namedIter names its input in its errors.
type namedIter struct {
	kv.Iterator
	key string
}

func (n *namedIter) Error() error {
	if err := n.Iterator.Error(); err != nil {
		return fmt.Errorf("read %s: %w", n.key, err)
	}
	return nil
}

// merge writes the merged, purged entries of it to the outputs.
func (m *merger) merge(ctx context.Context, it kv.Iterator) (err error) {
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for valid := it.First(); valid; valid = it.Next() {
		if err := m.add(ctx, it.Key(), it.Value()); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.finishOutput()
}

// add handles one merged entry.
func (m *merger) add(ctx context.Context, key, value []byte) error {
	n := len(m.part)
	if n == 0 || !bytes.HasPrefix(key, m.part) || len(key) == n {
		// Partition prefixes are prefix-free: a key starting with the
		// current one's is in the same partition.
		var err error
		if n, err = keys.PartitionPrefixLen(key); err != nil || n >= len(key) {
			return fmt.Errorf("%w: key %x: not a storage key", sstable.ErrCorrupt, key)
		}
		if err := m.startPartition(ctx, key[:n]); err != nil {
			return err
		}
	}
	switch keys.Kind(key[n]) {
	case keys.KindHeader:
		return m.addHeader(key, value)
	case keys.KindRow:
		return m.addRow(key, key[n+1:], value)
	default:
		return fmt.Errorf("%w: key %x: unknown kind %d", sstable.ErrCorrupt, key, key[n])
	}
}

// startPartition starts a new partition, and a new output if the current
// one is full.
func (m *merger) startPartition(ctx context.Context, prefix []byte) error {
	m.part = append(m.part[:0], prefix...)
	m.hasHdr = false
	m.stats.Partitions++
	if m.out != nil && m.job.TargetSize > 0 && m.out.w.Written() >= m.job.TargetSize {
		if err := m.finishOutput(); err != nil {
			return err
		}
	}
	if m.out == nil {
		return m.startOutput(ctx)
	}
	return nil
}

func (m *merger) addHeader(key, value []byte) error {
	// Rows of the partition are judged against the header: keep a copy of
	// it, since the iterator reuses value.
	m.hdrBuf = append(m.hdrBuf[:0], value...)
	if err := model.DecodeHeader(m.hdrBuf, &m.hdr); err != nil {
		return fmt.Errorf("header %x: %w", key, err)
	}
	m.hasHdr = true
	if err := model.DecodeHeader(m.hdrBuf, &m.outHdr); err != nil {
		return fmt.Errorf("header %x: %w", key, err)
	}
	if !m.purge.header(&m.outHdr) {
		return m.write(key, value)
	}
	if m.outHdr.IsEmpty() {
		m.stats.Dropped++
		return nil
	}
	m.scratch = model.AppendHeader(m.scratch[:0], &m.outHdr)
	return m.write(key, m.scratch)
}

func (m *merger) addRow(key, clustering, value []byte) error {
	var d model.Deletion
	if m.hasHdr {
		d = m.hdr.DeletionAt(clustering)
	}
	if !m.mayPurge && d.IsLive() {
		// Nothing to shadow, expire or purge: the merged bytes are the
		// row's. (Their statistics, in write, still check that they
		// decode.)
		return m.write(key, value)
	}
	if err := model.DecodeRow(value, &m.row); err != nil {
		return fmt.Errorf("row %x: %w", key, err)
	}
	changed := false
	if !d.IsLive() {
		m.row.Shadow(d)
		changed = true
	}
	if m.purge.row(&m.row) {
		changed = true
	}
	if !changed {
		// Normal forms encode one way: the merged bytes are the row's.
		return m.write(key, value)
	}
	if m.row.IsEmpty() {
		m.stats.Dropped++
		return nil
	}
	m.scratch = model.AppendRow(m.scratch[:0], &m.row)
	return m.write(key, m.scratch)
}

func (m *merger) write(key, value []byte) error {
	m.stats.OutputEntries++
	return m.out.w.Add(key, value)
}

// output is the SSTable being written.
type output struct {
	key string
	w   *tablestore.Writer
}

func (m *merger) startOutput(ctx context.Context) error {
	key := fmt.Sprintf("%s/%s/%s/%05d.sst", m.opts.ObjectPrefix, m.job.Table, m.job.ID, len(m.stats.Written))
	wo := m.opts.Writer
	wo.WriterID = "compaction/" + m.job.ID
	wo.CreatedAt = m.created
	w, err := tablestore.Create(ctx, m.store, key, wo)
	if err != nil {
		return err
	}
	m.stats.Written = append(m.stats.Written, key)
	m.out = &output{key: key, w: w}
	return nil
}

// finishOutput closes the current output, if any, and records it.
func (m *merger) finishOutput() error {
	o := m.out
	if o == nil {
		return nil
	}
	m.out = nil
	tbl, err := o.w.Close()
	if err != nil {
		return err
	}
	if tbl.Props.Entries == 0 {
		return nil // everything the partitions held was purged: not stored
	}
	props := tbl.Props
	t := manifest.SSTable{
		Key:          o.key,
		Size:         tbl.Size,
		Level:        m.job.OutputLevel,
		MinToken:     tbl.MinToken,
		MaxToken:     tbl.MaxToken,
		FirstKey:     props.FirstKey,
		LastKey:      props.LastKey,
		MinTimestamp: props.MinTimestamp,
		MaxTimestamp: props.MaxTimestamp,
		Created:      m.created,
	}
	if len(m.outputs) == 0 {
		for _, in := range m.job.Inputs {
			t.Covers = append(t.Covers, in.Covers...)
		}
	}
	m.outputs = append(m.outputs, t)
	m.stats.OutputBytes += tbl.Size
	return nil
}
