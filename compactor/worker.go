package compactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// JobLeasePrefix starts the name of the manifest lease each job's active
// attempt holds: "compaction-job/<job ID>".
const JobLeasePrefix = "compaction-job/"

var (
	// errLeaseLost means another attempt took the job's lease: this one
	// is stale and must not commit.
	errLeaseLost = errors.New("compaction: job lease lost")
	// errLeaseBusy means the job's lease is held: the attempt before this
	// delivery died without releasing it, or is stalled.
	errLeaseBusy = errors.New("compaction: job lease busy")
	// errTooOld means an attempt ran past WorkerOptions.MaxCommitAge: its
	// first outputs could be old enough for the orphan sweep.
	errTooOld = errors.New("compaction: attempt too old to commit")
)

// WorkerOptions are what a Worker works with.
type WorkerOptions struct {
	// Store holds the SSTables. Required.
	Store objectstore.Store
	// Run configures the merges.
	Run Options
	// Unflushed, if set, returns the oldest write timestamp (µs) of the
	// table's range not yet in a committed SSTable, math.MaxInt64 if
	// none: what a job's OldestOutside must also be below. Without it no
	// tombstone is purged (GCBefore 0), since a memtable may hold older
	// data than anything flushed.
	Unflushed func(ctx context.Context, table uuid.UUID, r int) (int64, error)
	// MinBackoff and MaxBackoff bound the delay before a failed job is
	// delivered again, doubling with each delivery (defaults 1s and 5m).
	MinBackoff, MaxBackoff time.Duration
	// Poll is how long a worker waits for a job before it checks its
	// context again (default 5s); a stop waits for it at most.
	Poll time.Duration
	// Metrics, shared by the process's workers; nil counts nothing.
	Metrics *Metrics
	// MaxCommitAge, if not 0, bounds the time from an attempt's start to
	// its commit: an attempt past it fails, its outputs are discarded and
	// the job is retried. The garbage collector's orphan sweep deletes
	// unreferenced objects older than -gc.orphan-age, which must stay far
	// above it, or an attempt could commit outputs the sweep deleted.
	MaxCommitAge time.Duration
	// Now is the clock of expiry and purging (default time.Now).
	Now func() time.Time
	// Logger (default slog.Default).
	Logger *slog.Logger
}

// Worker runs queued jobs one at a time: it takes a job's lease, merges its
// inputs with Run, commits the outputs in place of the inputs and acks the
// job. Workers keep no state: any number run side by side, in any process.
type Worker struct {
	q    *Queue
	m    *manifest.Manifest
	opts WorkerOptions
	log  *slog.Logger

	// beforeCommit, if set, is called between the merge and the commit
	// (tests use it to make a worker stale).
	beforeCommit func(ctx context.Context, attempt string)
	// beat, if set, replaces the heartbeat interval (tests make a
	// worker miss its heartbeats with it).
	beat time.Duration
}

// NewWorker returns a worker of q's jobs, committing to m.
func NewWorker(q *Queue, m *manifest.Manifest, opts WorkerOptions) (*Worker, error) {
	if q == nil || m == nil || opts.Store == nil {
		return nil, errors.New("compaction: a worker needs a queue, a manifest and a store")
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Minute, opts.MinBackoff)
	}
	if opts.Poll <= 0 {
		opts.Poll = 5 * time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Run.ObjectPrefix == "" {
		opts.Run.ObjectPrefix = "compaction"
	}
	return &Worker{q: q, m: m, opts: opts, log: opts.Logger.With("component", "compaction-worker")}, nil
}

// Run works on jobs until ctx ends, then returns nil. A job it is running
// then is neither acked nor handed back: it is delivered again after the
// ack wait, as if the worker had died.
func (w *Worker) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if _, err := w.RunOne(ctx, w.opts.Poll); err != nil && ctx.Err() == nil {
			w.log.Warn("compaction job failed", "err", err)
			select { // a queue that fails at once must not spin
			case <-ctx.Done():
			case <-time.After(w.opts.MinBackoff):
			}
		}
	}
	return nil
}

// RunOne waits up to wait for a job and works on it. It reports whether a
// job came.
func (w *Worker) RunOne(ctx context.Context, wait time.Duration) (bool, error) {
	msg, err := w.q.next(ctx, wait)
	if err != nil || msg == nil {
		return false, err
	}
	return true, w.handle(ctx, msg)
}

// handle works on one delivery and settles it: ack after the commit, or
// when the job is obsolete; nak with backoff after a failure; term for a
// message that cannot be decoded; nothing if ctx ended or the job's lease
// was lost, since another attempt owns the job then.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) error {
	meta, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("compaction: job metadata: %w", err)
	}
	j, err := decodeJob(msg.Data())
	if err != nil {
		w.log.Error("dropping undecodable compaction job", "seq", meta.Sequence.Stream, "err", err)
		return errors.Join(err, msg.TermWithReason("undecodable"))
	}
	attempt := fmt.Sprintf("%s-%d-%d", j.ID, meta.Sequence.Stream, meta.NumDelivered)
	log := w.log.With("job", j.ID, "attempt", attempt, "table", j.Table, "range", j.Range)
	err = w.attempt(ctx, msg, j, attempt, log)
	switch {
	case err == nil:
		w.opts.Metrics.committed.Inc()
		return w.ack(ctx, msg)
	case errors.Is(err, errObsolete), errors.Is(err, errKeepInputs):
		w.opts.Metrics.obsolete.Inc()
		log.Info("compaction job dropped", "reason", err)
		return w.ack(ctx, msg)
	case errors.Is(err, errLeaseLost):
		// Another attempt is active and owns the delivery; an ack or nak
		// now could take the job from under it.
		w.opts.Metrics.obsolete.Inc()
		log.Info("compaction job taken by another attempt", "reason", err)
		return nil
	case errors.Is(err, errLeaseBusy):
		// The lease of an attempt that died expires within the ack wait.
		log.Debug("compaction job lease busy; retrying", "reason", err)
		return msg.NakWithDelay(w.q.AckWait() / 3)
	case ctx.Err() != nil:
		return nil // stopped: the job is delivered again after the ack wait
	default:
		w.opts.Metrics.failed.Inc()
		d := w.backoff(meta.NumDelivered)
		log.Warn("compaction job failed; retrying later", "err", err, "retry_in", d)
		return errors.Join(err, msg.NakWithDelay(d))
	}
}

func (w *Worker) ack(ctx context.Context, msg jetstream.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, w.q.AckWait())
	defer cancel()
	if err := msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("compaction: ack job: %w", err)
	}
	return nil
}

// backoff is the delay before delivery n+1 of a failed job.
func (w *Worker) backoff(delivered uint64) time.Duration {
	d := w.opts.MinBackoff
	for i := uint64(1); i < delivered && d < w.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.opts.MaxBackoff)
}

// attempt runs one attempt of j under its lease and commits it.
func (w *Worker) attempt(ctx context.Context, msg jetstream.Msg, j *QueuedJob, attempt string, log *slog.Logger) (err error) {
	lease := JobLeasePrefix + j.ID
	ttl := w.q.AckWait()
	if _, err := w.m.AcquireLease(ctx, lease, attempt, ttl); err != nil {
		if errors.Is(err, manifest.ErrLeaseHeld) {
			return fmt.Errorf("%w: %v", errLeaseBusy, err)
		}
		return err
	}
	defer func() {
		if errors.Is(err, errLeaseLost) || ctx.Err() != nil {
			// The lease is another attempt's now, or this worker stops
			// as if it died: the lease expires with the ack wait.
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if rerr := w.m.ReleaseLease(rctx, lease, attempt); rerr != nil && !errors.Is(rerr, manifest.ErrLeaseHeld) {
			log.Warn("release of the job lease failed", "err", rerr)
		}
	}()

	// Outputs that never became live are discarded however the attempt
	// ends, unless it is stale or stopped: this attempt's own if it
	// failed; every attempt's once the inputs are gone, which no attempt
	// can commit then. Before that, another attempt's outputs are not
	// touched: it may still be alive, and commit them.
	defer func() {
		if ctx.Err() != nil || errors.Is(err, errLeaseLost) || errors.As(err, new(errCommit)) {
			return // an errCommit may have made the outputs live: leave them to a later sweep
		}
		own := attempt
		if err == nil || errors.Is(err, errObsolete) {
			own = ""
		}
		if n, derr := w.sweep(context.WithoutCancel(ctx), j, own); derr != nil {
			log.Warn("discard of the job's unused outputs failed", "err", derr)
		} else if n > 0 {
			log.Info("discarded unused outputs", "objects", n)
		}
	}()

	live, err := inputsLive(ctx, w.m, j)
	if err != nil {
		return err
	}
	if !live {
		return errObsolete
	}
	job, err := w.job(ctx, j, attempt)
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancelCause(ctx)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		w.heartbeat(runCtx, msg, lease, attempt, stop, log)
	}()
	w.opts.Metrics.running.Inc()
	started := time.Now() // before the first output's upload
	outputs, stats, err := Run(runCtx, job, RunDeps{Store: w.opts.Store, Options: w.opts.Run})
	w.opts.Metrics.running.Dec()
	w.opts.Metrics.read.Add(float64(stats.InputBytes))
	w.opts.Metrics.written.Add(float64(stats.OutputBytes))
	if err == nil && w.beforeCommit != nil {
		w.beforeCommit(runCtx, attempt)
	}
	if err == nil {
		err = context.Cause(runCtx)
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			err = nil // not ours: runCtx is only cancelled with a cause
		}
	}
	if err == nil {
		// Fencing: renew the lease right before the commit. An attempt
		// whose lease another took (it stalled past the TTL) fails here;
		// one that stalls after this check and commits late still
		// cannot commit twice, since the commit demands live inputs.
		if _, lerr := w.m.AcquireLease(ctx, lease, attempt, ttl); lerr != nil {
			err = fmt.Errorf("%w: %v", errLeaseLost, lerr)
		} else if age := time.Since(started); w.opts.MaxCommitAge > 0 && age > w.opts.MaxCommitAge {
			err = fmt.Errorf("%w: attempt ran %v, past the max commit age %v", errTooOld, age.Round(time.Second), w.opts.MaxCommitAge)
		}
	}
	if err == nil {
		cerr := commitJob(ctx, w.m, j, outputs)
		for i := 0; i < 3 && errors.Is(cerr, manifest.ErrNotArchived); i++ {
			// Applied but not archived: the same commit again is a
			// no-op that writes the archive copy.
			log.Warn("compaction commit not archived; retrying", "err", cerr)
			select {
			case <-ctx.Done():
			case <-time.After(w.opts.MinBackoff << i):
			}
			cerr = commitJob(ctx, w.m, j, outputs)
		}
		if cerr != nil {
			err = cerr
			if !errors.Is(cerr, errObsolete) && !errors.Is(cerr, errKeepInputs) {
				err = errCommit{cerr}
			}
		}
	}
	stop(nil)
	<-beat
	if cause := context.Cause(runCtx); err != nil && errors.Is(cause, errLeaseLost) {
		err = cause
	}
	if err != nil {
		return err
	}
	log.Info("compaction job committed", "inputs", len(j.Inputs), "input_bytes", stats.InputBytes,
		"outputs", len(outputs), "output_bytes", stats.OutputBytes, "dropped", stats.Dropped, "purged", stats.TombstonesPurged)
	return nil
}

// errCommit wraps a failure of the commit itself, whose outcome the
// manifest, not the error, tells.
type errCommit struct{ err error }

func (e errCommit) Error() string { return e.err.Error() }
func (e errCommit) Unwrap() error { return e.err }

// sweep discards the objects of attempt of j, or of all its attempts if
// attempt is "", that are not live. Objects already on the garbage list
// stay listed once.
func (w *Worker) sweep(ctx context.Context, j *QueuedJob, attempt string) (int, error) {
	keys, err := leftovers(ctx, w.opts.Store, w.opts.Run.ObjectPrefix, j, attempt)
	if err != nil {
		return 0, err
	}
	n, err := discard(ctx, w.m, j, keys)
	w.opts.Metrics.discarded.Add(float64(n))
	return n, err
}

// job builds the merge of attempt: purging is on only when the oldest
// unflushed write is known.
func (w *Worker) job(ctx context.Context, j *QueuedJob, attempt string) (Job, error) {
	p := j.Plan()
	job := p.Job(attempt)
	now := w.opts.Now()
	job.Now = now.Unix()
	if j.GCGraceSeconds < 0 || w.opts.Unflushed == nil {
		return job, nil
	}
	// The unflushed bound first: a flush that commits between the two reads
	// is then in the live tables; read the other way round, its data would
	// be in neither.
	u, err := w.opts.Unflushed(ctx, j.Table, j.Range)
	if err != nil {
		return Job{}, fmt.Errorf("compaction: oldest unflushed write: %w", err)
	}
	live, err := w.m.SSTablesInRange(ctx, j.Table, j.Range)
	if err != nil {
		return Job{}, err
	}
	oldest := p.OldestOutside(Snapshot{Table: j.Table, Ranges: map[int][]manifest.SSTable{j.Range: live}})
	job.OldestOutside = min(oldest, u)
	if gcb := job.Now - j.GCGraceSeconds; gcb > 0 {
		job.GCBefore = gcb
	}
	return job, nil
}

// heartbeat sends in-progress acks and renews the job's lease every third
// of the ack wait, so that a live attempt keeps its job; it cancels the
// attempt with errLeaseLost if another attempt took the lease.
func (w *Worker) heartbeat(ctx context.Context, msg jetstream.Msg, lease, attempt string, stop context.CancelCauseFunc, log *slog.Logger) {
	every := max(w.q.AckWait()/3, time.Millisecond)
	if w.beat > 0 {
		every = w.beat
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := msg.InProgress(); err != nil {
			log.Warn("in-progress ack failed", "err", err)
		}
		if _, err := w.m.AcquireLease(ctx, lease, attempt, w.q.AckWait()); err != nil {
			if errors.Is(err, manifest.ErrLeaseHeld) {
				stop(fmt.Errorf("%w: %v", errLeaseLost, err))
				return
			}
			if ctx.Err() == nil {
				log.Warn("job lease renewal failed", "err", err)
			}
		}
	}
}
