package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/memtable"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// NodeDeps are what a node and its shards work with.
type NodeDeps struct {
	// FS holds the commitlog; vfs.Default if nil.
	FS        vfs.FS
	Store     objectstore.Store
	Committer FlushCommitter
	// Reader reads committed SSTables for conditional writes.
	Reader     TableReader
	Registerer prometheus.Registerer // nil: metrics are not registered
	Logger     *slog.Logger          // nil: nothing is logged
	// ChunkSize is the memtables' arena chunk size (memtable.Options).
	ChunkSize int
	// Ranges is the number of token ranges the cluster's ring is cut into
	// (manifest.RangeCount): a flush writes one SSTable per table and
	// range. 0 or 1 writes one per table.
	Ranges int
	// L0 slows flushes down while their L0 fills up (see Shard.throttle);
	// nil never does.
	L0 L0Gauge
	// OpenLog opens shard's log; nil opens the local commitlog under
	// Config.Commitlog.Dir.
	OpenLog func(ctx context.Context, shard uint32, logger *slog.Logger) (Log, error)
}

// Shard owns a slice of the token ring on one core: a commitlog, an active
// memtable, the memtables being flushed, and the goroutines that write and
// flush them. Its methods are safe for concurrent use.
type Shard struct {
	id        uint32
	cfg       Config
	deps      NodeDeps
	log       Log
	logger    *slog.Logger
	m         *metrics
	maxRecord int

	reqs     chan *request
	quit     chan struct{}
	loopDone chan struct{}
	// flushed is signalled when a flush frees memory.
	flushed chan struct{}
	// flushWake is signalled when a memtable is queued for flush.
	flushWake   chan struct{}
	flushCtx    context.Context
	flushCancel context.CancelFunc
	flushDone   chan struct{}
	closeOnce   sync.Once
	closeErr    error

	// mu guards mems, the memtables readers see: the ones being flushed,
	// oldest first, then the active one.
	mu   sync.Mutex
	mems []*memState

	// truncMu orders truncations and flush commits: a flush commits only
	// tables that no truncation has marked in its memtable.
	truncMu sync.Mutex

	// releaseMu guards the commitlog release state: segments are released
	// only once replay is over.
	releaseMu  sync.Mutex
	replayed   bool
	releasable commitlog.Position

	// fenced is set, under mu, when a flush commit was fenced; writes fail
	// with it from then on.
	fenced error
	// committed is the Through of the newest committed flush, and
	// committedCh is closed and replaced, under mu, each time it grows.
	committed   commitlog.Position
	committedCh chan struct{}

	// Owned by the loop goroutine (and by Open during replay).
	active *memState
	group  []*request
	rec    []byte
	keyBuf []byte
	recMin map[storage.TableID]int64 // scratch of applyRecord
	err    error                     // sticky: the commitlog failed
	// unsettled is a record whose append had an unknown outcome: it is
	// appended again before any other (see Log).
	unsettled []byte
	loopCtx   context.Context
}

// memState is a memtable and the log records it holds.
type memState struct {
	mt *memtable.Memtable
	// through is the position of the newest record applied; every record
	// at or before it, and after from (the previous memtable's through, or
	// where replay started), is in mt.
	from, through commitlog.Position
	// replayed marks a memtable filled by replay: a crash may have left
	// its flush partly committed.
	replayed bool
	first    time.Time // when the first record was applied; zero if empty
	// truncated are the tables truncated after the memtable was filled:
	// reads and the flush skip their entries.
	truncated map[storage.TableID]bool
	// created is the SSTables' creation time, set by the first flush
	// attempt; owned by the flush goroutine.
	created time.Time
	// oldest maps each table with entries in mt to the smallest write
	// timestamp among them (see Shard.Unflushed).
	oldest map[storage.TableID]int64
}

// request is one write waiting for the shard goroutine.
type request struct {
	ctx      context.Context
	enc      []byte // the encoded mutation
	table    storage.TableID
	prefix   []byte                          // partition prefix (conditional writes)
	cond     func(kv.Iterator) (bool, error) // nil for plain writes
	truncate bool
	// flush asks the shard goroutine to queue the active memtable; it
	// answers with the position through which the queued ones hold records.
	flush    bool
	through  commitlog.Position
	deadline time.Time

	done    chan struct{}
	err     error
	applied bool
}

// Open opens shard id: it opens its commitlog under cfg.Commitlog.Dir,
// replays the records that committed flushes do not hold into memtables,
// and starts the shard's goroutines. If the replayed memtables reach the
// memory limit, Open waits for flushes, as long as ctx allows.
func Open(ctx context.Context, cfg Config, id uint32, deps NodeDeps) (*Shard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil || deps.Committer == nil || deps.Reader == nil {
		return nil, errors.New("ingest: store, committer and reader are required")
	}
	if deps.Ranges < 0 || deps.Ranges > manifest.MaxRanges {
		return nil, fmt.Errorf("ingest: %d token ranges", deps.Ranges)
	}
	if deps.FS == nil {
		deps.FS = vfs.Default
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "ingest", "shard", id)
	var l Log
	var err error
	if deps.OpenLog != nil {
		l, err = deps.OpenLog(ctx, id, logger)
	} else {
		mode, _ := cfg.Commitlog.syncMode()
		l, err = commitlog.Open(commitlog.Options{
			FS:           deps.FS,
			Dir:          filepath.Join(cfg.Commitlog.Dir, fmt.Sprintf("shard-%05d", id)),
			Shard:        id,
			SegmentSize:  cfg.Commitlog.SegmentSize,
			Sync:         mode,
			SyncInterval: cfg.Commitlog.SyncPeriod,
			Logger:       logger,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: shard %d: %w", id, err)
	}
	s := &Shard{
		id:        id,
		cfg:       cfg,
		deps:      deps,
		log:       l,
		logger:    logger,
		maxRecord: l.MaxRecord(),
		reqs:      make(chan *request, 1024),
		quit:      make(chan struct{}),
		loopDone:  make(chan struct{}),
		flushed:   make(chan struct{}, 1),
		flushWake: make(chan struct{}, 1),
		flushDone: make(chan struct{}),
		loopCtx:   context.Background(),

		committedCh: make(chan struct{}),
	}
	s.active = s.newMem()
	s.mems = []*memState{s.active}
	s.m = newMetrics(deps.Registerer, id, s.memory, l.Stats)
	s.flushCtx, s.flushCancel = context.WithCancel(context.Background())
	go s.flushLoop()

	if err := s.replay(ctx); err != nil {
		s.flushCancel()
		<-s.flushDone
		l.Close()
		return nil, fmt.Errorf("ingest: shard %d: replay: %w", id, err)
	}
	go s.run()
	return s, nil
}

func (s *Shard) newMem() *memState {
	return &memState{mt: memtable.New(memtable.Options{Merge: model.Merge, ChunkSize: s.deps.ChunkSize})}
}

// replay applies the log records after the committed flushes' position.
//
// Memtables filled during replay are flushed while it goes on, so a table's
// rows must never reach a memtable if a later record truncates the table:
// the truncation could come after their flush committed them. A first pass
// therefore finds each table's last truncation, and the second skips the
// table's entries in the records before it.
func (s *Shard) replay(ctx context.Context) error {
	flushed, err := s.deps.Committer.Flushed(ctx, s.id)
	if err != nil {
		return err
	}
	s.active.from = flushed
	cuts, err := s.deps.Committer.Partial(ctx, s.id)
	if err != nil {
		return err
	}
	truncated := map[storage.TableID]commitlog.Position{}
	err = s.log.Replay(func(pos commitlog.Position, rec []byte) error {
		if pos.Compare(flushed) <= 0 || len(rec) == 0 || rec[0] != recordTruncate {
			return nil
		}
		table, err := decodeTruncate(rec)
		if err != nil {
			return fmt.Errorf("record at %v: %w", pos, err)
		}
		truncated[table] = pos
		return nil
	})
	if err != nil {
		return err
	}
	var n, skipped int
	err = s.log.Replay(func(pos commitlog.Position, rec []byte) error {
		if pos.Compare(flushed) <= 0 {
			skipped++
			return nil
		}
		// A memtable whose flush is recorded in part ends where it did,
		// so that the retried flush reuses the recorded SSTables.
		for len(cuts) > 0 && cuts[0].Compare(pos) < 0 {
			s.rotate()
			cuts = cuts[1:]
		}
		if len(cuts) == 0 {
			s.maybeRotate(time.Now())
		}
		for s.memory() >= s.cfg.MemoryLimit {
			if err := s.fencedErr(); err != nil {
				return err
			}
			if s.idle() {
				// Only the memtable held for its cut is left: cutting
				// it short (its flush then writes new SSTables) beats
				// waiting forever.
				s.rotate()
				continue
			}
			select {
			case <-s.flushed:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		s.active.replayed = true
		n++
		if len(rec) > 0 && rec[0] == recordTruncate {
			return nil // the first pass dropped the entries it removes
		}
		return s.applyRecord(pos, rec, truncated)
	})
	if err != nil {
		return err
	}
	if len(cuts) > 0 && s.active.through.Compare(cuts[0]) >= 0 {
		s.rotate()
	}
	s.m.replayed.Add(float64(n))
	s.logger.Info("replayed commitlog", "records", n, "skipped_flushed", skipped, "flushed_through", flushed.String(), "truncations", len(truncated))
	s.releaseMu.Lock()
	s.replayed = true
	if s.releasable.Compare(flushed) < 0 {
		s.releasable = flushed
	}
	s.releaseMu.Unlock()
	s.release()
	return nil
}

// Apply writes m and returns once it is durable in the commitlog and
// visible to reads. If ctx ends first, Apply returns ctx.Err() and m may or
// may not be applied. The caller may reuse m once Apply returns.
func (s *Shard) Apply(ctx context.Context, m *storage.Mutation) error {
	r, err := s.newRequest(ctx, m)
	if err != nil {
		return err
	}
	return s.submit(r)
}

// ApplyIf applies m, whose entries must all belong to one partition, if
// cond holds for the partition's current entries (memtables merged with the
// committed SSTables). No other write of the shard runs between the read
// and the write. It reports whether m was applied. The shard's other
// writes wait while cond runs and while the SSTables are read.
func (s *Shard) ApplyIf(ctx context.Context, m *storage.Mutation, cond func(current kv.Iterator) (bool, error)) (bool, error) {
	r, err := s.newRequest(ctx, m)
	if err != nil {
		return false, err
	}
	for i, e := range m.Entries {
		n, _ := keys.PartitionPrefixLen(e.Key) // validated
		if i == 0 {
			r.prefix = append([]byte(nil), e.Key[:n]...)
		} else if string(e.Key[:n]) != string(r.prefix) {
			return false, fmt.Errorf("%w: conditional mutation spans partitions", storage.ErrInvalidMutation)
		}
	}
	r.cond = cond
	if err := s.submit(r); err != nil {
		return false, err
	}
	return r.applied, nil
}

// Truncate removes every entry of table written before it from the shard's
// memtables, durably: the truncation is logged, and replay honours it. The
// table's committed SSTables are the manifest's to drop; once Truncate
// returns, no flush commits entries written before it.
func (s *Shard) Truncate(ctx context.Context, table storage.TableID) error {
	r := &request{
		ctx:      ctx,
		enc:      appendTruncate(nil, table),
		table:    table,
		truncate: true,
		deadline: time.Now().Add(s.cfg.WriteTimeout),
		done:     make(chan struct{}),
	}
	return s.submit(r)
}

// Flush queues the active memtable for flush, if it holds anything, and
// waits until every memtable queued so far is committed: then no write
// acknowledged before Flush was called needs the commitlog, and a reopen
// replays none of it. It returns early with ctx's error, with the error
// that fenced the shard, or with storage.ErrClosed if the shard is closed.
func (s *Shard) Flush(ctx context.Context) error {
	r := &request{ctx: ctx, flush: true, done: make(chan struct{})}
	if err := s.submit(r); err != nil {
		return err
	}
	for {
		s.mu.Lock()
		done := s.committed.Compare(r.through) >= 0
		fenced, wait := s.fenced, s.committedCh
		s.mu.Unlock()
		switch {
		case done:
			return nil
		case fenced != nil:
			return fenced
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.flushDone:
			// The flush goroutine ended: fenced, or the shard closed.
			s.mu.Lock()
			done, fenced = s.committed.Compare(r.through) >= 0, s.fenced
			s.mu.Unlock()
			switch {
			case done:
				return nil
			case fenced != nil:
				return fenced
			}
			return storage.ErrClosed
		}
	}
}

// rotateFor answers a Flush: acknowledged writes are all in memtables, so
// queueing the active one covers them, and the writes still pending may
// wait for the next Flush. It therefore runs ahead of them, even when they
// wait for memory.
func (s *Shard) rotateFor(pending []*request) []*request {
	n := 0
	for _, r := range pending {
		if !r.flush {
			pending[n] = r
			n++
			continue
		}
		s.rotate()
		s.mu.Lock()
		if len(s.mems) > 1 {
			r.through = s.mems[len(s.mems)-2].through
		}
		s.mu.Unlock()
		s.finish(r, nil)
	}
	clear(pending[n:])
	return pending[:n]
}

func (s *Shard) newRequest(ctx context.Context, m *storage.Mutation) (*request, error) {
	if err := validate(m); err != nil {
		return nil, err
	}
	enc := appendMutation(nil, m)
	if 1+len(enc) > s.maxRecord {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", storage.ErrTooLarge, len(enc), s.maxRecord-1)
	}
	return &request{
		ctx:      ctx,
		enc:      enc,
		table:    m.Table,
		deadline: time.Now().Add(s.cfg.WriteTimeout),
		done:     make(chan struct{}),
	}, nil
}

func (s *Shard) submit(r *request) error {
	select {
	case s.reqs <- r:
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-s.quit:
		return storage.ErrClosed
	}
	select {
	case <-r.done:
		return r.err
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-s.loopDone:
		select {
		case <-r.done:
			return r.err
		default:
			return storage.ErrClosed
		}
	}
}

// NewIter returns an iterator over a snapshot of the shard's memtables,
// active and flushing, for table's storage keys in [lower, upper) (nil
// bounds are open). Values sharing a key are reconciled with model.Merge.
// A reader merging it with SSTables must take it before choosing the
// SSTables, so that a memtable flushed in between is found in one of them.
func (s *Shard) NewIter(table storage.TableID, lower, upper []byte) kv.Iterator {
	s.mu.Lock()
	snaps := make([]memtable.Snapshot, 0, len(s.mems))
	for _, m := range s.mems {
		if !m.truncated[table] {
			snaps = append(snaps, m.mt.Snapshot())
		}
	}
	s.mu.Unlock()
	lo, hi := tableBounds(table, lower, upper)
	its := make([]kv.Iterator, len(snaps))
	for i, sn := range snaps {
		its[i] = &tableIter{Iterator: sn.NewIter(lo, hi), table: table}
	}
	return kv.Merging(model.Merge, its...)
}

// memory returns the bytes of the active and flushing memtables.
func (s *Shard) memory() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, m := range s.mems {
		n += m.mt.Size()
	}
	return n
}

// Close stops the shard: waiting writes fail with storage.ErrClosed, flushes in
// progress are abandoned and the commitlog is closed. Memtables are not
// flushed: their records are in the commitlog, which the next Open replays
// (Flush first to leave nothing to replay).
func (s *Shard) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		<-s.loopDone
		s.flushCancel()
		<-s.flushDone
		s.closeErr = s.log.Close()
	})
	return s.closeErr
}

// run is the shard goroutine. It gathers the requests that arrived while
// it was busy and handles them as one batch.
func (s *Shard) run() {
	defer close(s.loopDone)
	tick := time.NewTicker(min(s.cfg.FlushAge/4+time.Millisecond, time.Second))
	defer tick.Stop()
	var pending []*request
	defer func() {
		for _, r := range pending {
			s.finish(r, storage.ErrClosed)
		}
	}()
	for {
		if len(pending) == 0 {
			select {
			case r := <-s.reqs:
				pending = append(pending, r)
			case <-tick.C:
				s.maybeRotate(time.Now())
				continue
			case <-s.quit:
				return
			}
		}
	drain:
		for {
			select {
			case r := <-s.reqs:
				pending = append(pending, r)
			default:
				break drain
			}
		}
		if pending = s.rotateFor(pending); len(pending) == 0 {
			continue
		}
		if err := s.fencedErr(); err != nil {
			for _, r := range pending {
				s.finish(r, err)
			}
			clear(pending)
			pending = pending[:0]
			continue
		}
		now := time.Now()
		s.maybeRotate(now)
		if s.memory() >= s.cfg.MemoryLimit {
			pending = s.expire(pending, now)
			if len(pending) == 0 {
				continue
			}
			wait := time.NewTimer(time.Until(pending[0].deadline))
			select {
			case <-s.flushed:
			case r := <-s.reqs:
				pending = append(pending, r)
			case <-wait.C:
			case <-s.quit:
				wait.Stop()
				return
			}
			wait.Stop()
			continue
		}
		s.process(pending)
		clear(pending)
		pending = pending[:0]
	}
}

// expire fails the requests whose deadline has passed with
// storage.ErrOverloaded. Requests are in arrival order, so their deadlines
// ascend (but for the moments between a request's creation and its arrival).
func (s *Shard) expire(pending []*request, now time.Time) []*request {
	i := 0
	for i < len(pending) && !pending[i].deadline.After(now) {
		s.m.overloaded.Inc()
		s.finish(pending[i], storage.ErrOverloaded)
		i++
	}
	n := copy(pending, pending[i:])
	clear(pending[n:])
	return pending[:n]
}

func (s *Shard) finish(r *request, err error) {
	r.err = err
	close(r.done)
}

// process writes a batch. Plain writes are grouped into one commitlog
// record; a conditional write first commits the group before it, so that
// its read sees every earlier write, then joins the next group.
func (s *Shard) process(batch []*request) {
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			s.finish(r, err) // the caller gave up: spare the work
			continue
		}
		if r.truncate {
			s.commitGroup()
			s.finish(r, s.truncate(r))
			continue
		}
		if r.cond == nil {
			s.add(r)
			continue
		}
		s.commitGroup()
		if s.err != nil {
			s.finish(r, s.err)
			continue
		}
		// The condition must see a write whose outcome is unknown as
		// the log will have it.
		if err := s.settle(); err != nil {
			s.finish(r, err)
			continue
		}
		ok, err := s.evaluate(r)
		if err != nil || !ok {
			s.finish(r, err)
			continue
		}
		r.applied = true
		s.add(r)
	}
	s.commitGroup()
}

func (s *Shard) evaluate(r *request) (ok bool, err error) {
	end := keys.AppendPartitionEnd(nil, r.prefix)
	mem := s.NewIter(r.table, r.prefix, end)
	sst, err := s.deps.Reader.NewIter(r.ctx, r.table, r.prefix, end)
	if err != nil {
		mem.Close()
		return false, fmt.Errorf("ingest: read partition: %w", err)
	}
	it := kv.Merging(model.Merge, mem, sst)
	defer it.Close()
	return r.cond(it)
}

func (s *Shard) add(r *request) {
	if len(s.group) > 0 && len(s.rec)+len(r.enc) > s.maxRecord {
		s.commitGroup()
	}
	if len(s.group) == 0 {
		s.rec = append(s.rec[:0], recordMutations)
	}
	s.rec = append(s.rec, r.enc...)
	s.group = append(s.group, r)
}

// commitGroup appends the group's record to the commitlog, applies it to
// the active memtable and acknowledges its writes.
func (s *Shard) commitGroup() {
	if len(s.group) == 0 {
		return
	}
	err := s.err
	if err == nil {
		var pos commitlog.Position
		if pos, err = s.logRecord(s.rec); err == nil {
			err = s.applied(pos, s.rec)
		}
	}
	s.m.batches.Inc()
	s.m.batchSize.Observe(float64(len(s.group)))
	s.m.mutations.Add(float64(len(s.group)))
	for _, r := range s.group {
		s.finish(r, err)
	}
	clear(s.group)
	s.group = s.group[:0]
}

// truncate logs the truncation of r.table and applies it.
func (s *Shard) truncate(r *request) error {
	if s.err != nil {
		return s.err
	}
	// Replay drops the table's entries logged before the truncation, so no
	// memtable needs to cover its position.
	pos, err := s.logRecord(r.enc)
	if err != nil {
		return err
	}
	return s.applied(pos, r.enc)
}

// logRecord appends rec to the log, after the unsettled record if there is
// one, which it applies once logged. An append whose outcome is unknown
// leaves rec unsettled and fails its writes with the log's retriable error;
// any other failure fails the shard.
func (s *Shard) logRecord(rec []byte) (commitlog.Position, error) {
	if err := s.settle(); err != nil {
		return commitlog.Position{}, err
	}
	pos, err := s.log.Append(s.loopCtx, rec)
	if err != nil {
		return pos, s.logFailed(err, rec)
	}
	return pos, nil
}

// settle appends the unsettled record, if there is one, and applies it.
func (s *Shard) settle() error {
	if s.unsettled == nil {
		return nil
	}
	pos, err := s.log.Append(s.loopCtx, s.unsettled)
	if err != nil {
		return s.logFailed(err, nil)
	}
	if err := s.applied(pos, s.unsettled); err != nil {
		return err
	}
	s.unsettled = nil
	return nil
}

// logFailed classifies a failed append of rec (nil: of the unsettled
// record).
func (s *Shard) logFailed(err error, rec []byte) error {
	if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrTimeout) {
		if rec != nil {
			s.unsettled = append([]byte(nil), rec...)
		}
		return fmt.Errorf("ingest: shard %d: %w", s.id, err)
	}
	s.err = fmt.Errorf("ingest: shard %d failed: %w", s.id, err)
	s.logger.Error("shard failed; writes refused until reopened", "err", err)
	return s.err
}

// applied applies a record the log holds at pos: a truncation to every
// memtable, mutations to the active one. A failure fails the shard.
func (s *Shard) applied(pos commitlog.Position, rec []byte) error {
	if len(rec) > 0 && rec[0] == recordTruncate {
		table, err := decodeTruncate(rec)
		if err != nil {
			return err
		}
		s.truncateMems(table)
		return nil
	}
	if err := s.applyRecord(pos, rec, nil); err != nil {
		s.err = fmt.Errorf("ingest: shard %d failed: %w", s.id, err)
		s.logger.Error("shard failed; writes refused until reopened", "err", err)
		return s.err
	}
	return nil
}

// truncateMems marks table truncated in every memtable holding entries,
// and starts a new active memtable for the writes that follow.
func (s *Shard) truncateMems(table storage.TableID) {
	s.truncMu.Lock()
	s.mu.Lock()
	for _, m := range s.mems {
		if m.first.IsZero() {
			continue // the empty active memtable: later writes stay
		}
		if m.truncated == nil {
			m.truncated = map[storage.TableID]bool{}
		}
		m.truncated[table] = true
	}
	s.mu.Unlock()
	s.truncMu.Unlock()
	s.rotate()
}

// applyRecord applies a logged record to the active memtable, less the
// mutations of tables truncated after pos.
func (s *Shard) applyRecord(pos commitlog.Position, rec []byte, truncated map[storage.TableID]commitlog.Position) error {
	a := s.active
	if s.recMin == nil {
		s.recMin = map[storage.TableID]int64{}
	}
	clear(s.recMin)
	err := decodeRecord(rec, func(m *storage.Mutation) error {
		if t, ok := truncated[m.Table]; ok && pos.Compare(t) < 0 {
			return nil
		}
		oldest, ok := s.recMin[m.Table]
		if !ok {
			oldest = math.MaxInt64
		}
		for _, e := range m.Entries {
			s.keyBuf = appendTableKey(s.keyBuf[:0], m.Table, e.Key)
			if err := a.mt.Set(s.keyBuf, e.Value); err != nil {
				return err
			}
			oldest = min(oldest, valueOldest(e.Value))
		}
		s.recMin[m.Table] = oldest
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply record at %v: %w", pos, err)
	}
	a.mt.Commit()
	s.mu.Lock()
	for t, ts := range s.recMin {
		if a.oldest == nil {
			a.oldest = map[storage.TableID]int64{}
		}
		if old, ok := a.oldest[t]; !ok || ts < old {
			a.oldest[t] = ts
		}
	}
	a.through = pos
	if a.first.IsZero() {
		a.first = time.Now()
	}
	s.mu.Unlock()
	return nil
}

// maybeRotate queues the active memtable for flush if it is large or old
// enough, and starts a new one.
func (s *Shard) maybeRotate(now time.Time) {
	a := s.active
	s.mu.Lock()
	empty := a.first.IsZero()
	s.mu.Unlock()
	if empty || (a.mt.Size() < s.cfg.MemtableSize && now.Sub(a.first) < s.cfg.FlushAge) {
		return
	}
	s.rotate()
}

// rotate makes the active memtable immutable, if it holds anything, and
// queues it for flush.
func (s *Shard) rotate() {
	s.mu.Lock()
	empty := s.active.first.IsZero()
	s.mu.Unlock()
	if empty {
		return
	}
	s.mu.Lock()
	from := s.active.through
	s.mu.Unlock()
	s.active = s.newMem()
	s.active.from = from
	s.mu.Lock()
	s.mems = append(s.mems, s.active)
	s.mu.Unlock()
	select {
	case s.flushWake <- struct{}{}:
	default:
	}
}

// idle reports whether no memtable is being flushed.
func (s *Shard) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mems) == 1
}

// fencedErr returns the error that fenced the shard, or nil.
func (s *Shard) fencedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fenced
}

func shardLabel(id uint32) string { return strconv.FormatUint(uint64(id), 10) }
