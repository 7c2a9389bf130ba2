package compactor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/manifest"
)

// The work queue is one JetStream stream per cluster, "<cluster>_compaction",
// with work-queue retention: a job message stays until a worker acks it,
// which it does after the commit. Its one durable consumer, shared by every
// worker, delivers each job to one worker at a time with explicit acks; a
// job not acked within the ack wait (its worker died) is delivered again.
//
// A message is the JSON encoding of QueuedJob, published with the job's ID
// as Nats-Msg-Id: the stream drops a second copy of a job published within
// the duplicate window, as a re-planned identical job is. The names are
// the manifest's (manifest.CompactionQueueStream), which also gives the
// NATS permissions for them.

// ErrCorruptJob marks a queued job message that cannot be decoded.
var ErrCorruptJob = errors.New("compaction: corrupt job message")

// QueuedJob is the message of one job: a Plan and what a worker needs
// besides it to run and commit it.
type QueuedJob struct {
	// ID names the job: the same plan has the same ID (JobID). Each
	// attempt's outputs are named by ID and the attempt (Attempt).
	ID          string             `json:"id"`
	Table       uuid.UUID          `json:"table"`
	Range       int                `json:"range"`
	Inputs      []manifest.SSTable `json:"inputs"`
	OutputLevel int                `json:"output_level"`
	TargetSize  int64              `json:"target_size"`
	// GCGraceSeconds is the table's gc_grace_seconds when the job was
	// queued, or -1 if unknown, which turns purging off. The worker
	// computes GCBefore and OldestOutside when the job starts.
	GCGraceSeconds int64     `json:"gc_grace_seconds"`
	Queued         time.Time `json:"queued"`
}

// Plan returns the plan j carries.
func (j *QueuedJob) Plan() Plan {
	return Plan{Table: j.Table, Range: j.Range, Inputs: j.Inputs, OutputLevel: j.OutputLevel, TargetSize: j.TargetSize}
}

// Bytes returns the size of the job's inputs.
func (j *QueuedJob) Bytes() int64 { return j.Plan().Bytes() }

// JobID returns the ID of p's job: a hash of its table, range, output
// level and inputs, so that planning the same compaction twice gives one
// job.
func JobID(p Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00", p.Table, p.Range, p.OutputLevel, p.TargetSize)
	for _, in := range p.Inputs {
		fmt.Fprintf(h, "%s\x00", in.Key)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// decodeJob decodes and checks a job message.
func decodeJob(data []byte) (*QueuedJob, error) {
	var j QueuedJob
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptJob, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrCorruptJob)
	}
	switch {
	case len(j.ID) != 32 || !isHex(j.ID):
		return nil, fmt.Errorf("%w: id %q", ErrCorruptJob, j.ID)
	case j.Table == uuid.Nil:
		return nil, fmt.Errorf("%w: no table", ErrCorruptJob)
	case j.Range < 0:
		return nil, fmt.Errorf("%w: range %d", ErrCorruptJob, j.Range)
	case len(j.Inputs) == 0:
		return nil, fmt.Errorf("%w: no inputs", ErrCorruptJob)
	case j.OutputLevel < 0 || j.OutputLevel >= NumLevels:
		return nil, fmt.Errorf("%w: output level %d", ErrCorruptJob, j.OutputLevel)
	case j.GCGraceSeconds < -1:
		return nil, fmt.Errorf("%w: gc_grace_seconds %d", ErrCorruptJob, j.GCGraceSeconds)
	}
	seen := map[string]bool{}
	for _, in := range j.Inputs {
		if in.Key == "" || seen[in.Key] || in.Size < 0 {
			return nil, fmt.Errorf("%w: input %q", ErrCorruptJob, in.Key)
		}
		seen[in.Key] = true
	}
	return &j, nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// QueueOptions tune a Queue. The zero value is usable.
type QueueOptions struct {
	// AckWait is how long a delivered job may go without an ack or an
	// in-progress ack before it is delivered again (default 30s). Workers
	// send in-progress acks every AckWait/3.
	AckWait time.Duration
	// Dedup is the window within which a job published again is dropped
	// (default 1h, the planner's default job timeout).
	Dedup time.Duration
	// GCGrace returns a table's gc_grace_seconds for the job message; nil
	// or false queues jobs that purge nothing.
	GCGrace func(table uuid.UUID) (int32, bool)
	// Now is the clock of the messages' queue times (default time.Now).
	Now func() time.Time
}

// Queue is the compaction work queue of one cluster.
type Queue struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	cons   jetstream.Consumer
	subj   string
	opts   QueueOptions
}

// OpenQueue creates the cluster's work queue stream and its consumer if
// they do not exist and returns the queue.
func OpenQueue(ctx context.Context, js jetstream.JetStream, cluster string, opts QueueOptions) (*Queue, error) {
	if js == nil || cluster == "" {
		return nil, errors.New("compaction: a queue needs JetStream and a cluster name")
	}
	if opts.AckWait <= 0 {
		opts.AckWait = 30 * time.Second
	}
	if opts.Dedup <= 0 {
		opts.Dedup = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	subj := manifest.CompactionQueueSubject(cluster)
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        manifest.CompactionQueueStream(cluster),
		Description: "sediment compaction jobs",
		Subjects:    []string{subj},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  opts.Dedup,
	})
	if err != nil {
		return nil, fmt.Errorf("compaction: open queue stream: %w", err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       manifest.CompactionQueueConsumer,
		Description:   "sediment compaction workers",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       opts.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: -1,
		FilterSubject: subj,
	})
	if err != nil {
		return nil, fmt.Errorf("compaction: open queue consumer: %w", err)
	}
	return &Queue{js: js, stream: st, cons: cons, subj: subj, opts: opts}, nil
}

// AckWait returns how long a job may go without an ack before it is
// delivered again.
func (q *Queue) AckWait() time.Duration { return q.opts.AckWait }

// Submit queues p's job. It has the signature of PlannerOptions.Submit.
// A job already queued within the dedup window is not queued again.
func (q *Queue) Submit(ctx context.Context, p Plan) error {
	if len(p.Inputs) == 0 || p.Table == uuid.Nil {
		return fmt.Errorf("%w: a plan without table or inputs", ErrInvalidJob)
	}
	j := QueuedJob{
		ID: JobID(p), Table: p.Table, Range: p.Range, Inputs: p.Inputs,
		OutputLevel: p.OutputLevel, TargetSize: p.TargetSize,
		GCGraceSeconds: -1, Queued: q.opts.Now().UTC(),
	}
	if q.opts.GCGrace != nil {
		if g, ok := q.opts.GCGrace(p.Table); ok {
			j.GCGraceSeconds = int64(g)
		}
	}
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("compaction: encode job: %w", err)
	}
	if _, err := q.js.Publish(ctx, q.subj, data, jetstream.WithMsgID(j.ID)); err != nil {
		return fmt.Errorf("compaction: queue job %s: %w", j.ID, err)
	}
	return nil
}

// QueueStats describe the jobs in the queue, waiting or running.
type QueueStats struct {
	Jobs int
	// Bytes is the size of the jobs' inputs.
	Bytes int64
	// Oldest is when the oldest job was queued; zero if there is none.
	Oldest time.Time
}

// Jobs returns the jobs in the queue, waiting or running, oldest first.
// Messages that do not decode are skipped: a worker terminates them.
func (q *Queue) Jobs(ctx context.Context) ([]*QueuedJob, error) {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("compaction: queue info: %w", err)
	}
	var out []*QueuedJob
	if info.State.Msgs == 0 {
		return nil, nil
	}
	found := uint64(0)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && found < info.State.Msgs && seq != math.MaxUint64; seq++ {
		m, err := q.stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // acked, or deleted
		}
		if err != nil {
			return nil, fmt.Errorf("compaction: queue message %d: %w", seq, err)
		}
		found++
		if j, err := decodeJob(m.Data); err == nil {
			out = append(out, j)
		}
	}
	return out, nil
}

// Running returns the plans of the jobs in the queue, waiting or running.
// It has the signature of PlannerOptions.Running.
func (q *Queue) Running(ctx context.Context) ([]Plan, error) {
	jobs, err := q.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Plan, len(jobs))
	for i, j := range jobs {
		out[i] = j.Plan()
	}
	return out, nil
}

// Stats returns what the queue holds.
func (q *Queue) Stats(ctx context.Context) (QueueStats, error) {
	jobs, err := q.Jobs(ctx)
	if err != nil {
		return QueueStats{}, err
	}
	var s QueueStats
	for _, j := range jobs {
		s.Jobs++
		s.Bytes += j.Bytes()
		if s.Oldest.IsZero() || j.Queued.Before(s.Oldest) {
			s.Oldest = j.Queued
		}
	}
	return s, nil
}

// next waits up to wait for a job delivery; nil if none came.
func (q *Queue) next(ctx context.Context, wait time.Duration) (jetstream.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m, err := q.cons.Next(jetstream.FetchContext(ctx))
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, nats.ErrTimeout) {
			return nil, nil
		}
		return nil, fmt.Errorf("compaction: next job: %w", err)
	}
	return m, nil
}
