package commitlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sedimentdb/sediment/internal/vfs"
)

// SyncMode says when an appended record is acknowledged.
type SyncMode int

const (
	// Batch acknowledges a record once an fsync covering it has returned:
	// an acknowledged record survives a crash of the process or machine.
	// Records that arrive while an fsync runs are written and synced
	// together by the next one (group commit), so one fsync serves many
	// concurrent writers; the price is the latency of one fsync per append.
	Batch SyncMode = iota
	// Periodic acknowledges a record once it is written to the file (the
	// operating system's page cache) and syncs every SyncInterval. Appends
	// are fast, and records survive a crash of the process, but a power loss
	// or kernel crash loses what was acknowledged in the last SyncInterval.
	Periodic
)

func (m SyncMode) String() string {
	switch m {
	case Batch:
		return "batch"
	case Periodic:
		return "periodic"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// Options configure a Log.
type Options struct {
	// FS is the file system; vfs.Default if nil.
	FS vfs.FS
	// Dir holds the segments of this log and nothing else.
	Dir string
	// Shard is written into each segment header; Open refuses segments of
	// another shard.
	Shard uint32
	// SegmentSize is the size at which a new segment is started (default
	// 32 MiB). A record must fit in an empty segment.
	SegmentSize int64
	// Sync selects when appends are acknowledged (default Batch).
	Sync SyncMode
	// SyncInterval is the time between syncs in Periodic mode (default 1s).
	SyncInterval time.Duration
	// SkipCorrupt makes replay skip the rest of a segment at a corrupt record
	// (logging what is lost) instead of failing.
	SkipCorrupt bool
	// Logger receives warnings about torn tails and skipped data; nothing is
	// logged if nil.
	Logger *slog.Logger
}

const (
	defaultSegmentSize  = 32 << 20
	minSegmentSize      = 1 << 10
	defaultSyncInterval = time.Second
)

// Position locates a record: the segment sequence number and the offset of
// the record's frame in that segment. Positions order records in log order.
type Position struct {
	Segment uint64
	Offset  int64
}

// Compare returns -1, 0 or +1 as p is before, equal to, or after q.
func (p Position) Compare(q Position) int {
	if c := cmp.Compare(p.Segment, q.Segment); c != 0 {
		return c
	}
	return cmp.Compare(p.Offset, q.Offset)
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Segment, p.Offset) }

var (
	// ErrClosed is returned by operations on a closed Log.
	ErrClosed = errors.New("commitlog: closed")
	// ErrFailed is returned by appends after a write or sync failed: the
	// state of the file is unknown, so the log must be reopened (and
	// replayed) before it can be appended to again.
	ErrFailed = errors.New("commitlog: failed, reopen to recover")
	// ErrTooLarge is returned for a record that does not fit in a segment.
	ErrTooLarge = errors.New("commitlog: record larger than a segment")
)

// Log is the commitlog of one shard. Append is safe for concurrent use.
type Log struct {
	opts       Options
	fs         vfs.FS
	log        *slog.Logger
	maxRecord  int
	replaySegs []segment // segments found by Open, oldest first

	mu       sync.Mutex
	seq      uint64 // segment receiving the next record
	size     int64  // bytes of segment seq assigned so far
	cur      *batch // records waiting for the next write
	err      error  // sticky failure; wraps ErrFailed
	closed   bool
	segments []segment // complete segments that Release may remove, oldest first

	wake chan struct{} // an append is waiting (capacity 1)
	quit chan struct{} // Close was called
	done chan struct{} // the committer has exited

	// Owned by the committer goroutine.
	f     vfs.File // active segment
	fseq  uint64
	fsize int64
	dirty bool // f has unsynced writes (Periodic)

	stats struct{ appends, batches, syncs, syncNanos atomic.Uint64 }
}

// segment is a complete segment file.
type segment struct {
	seq  uint64
	size int64
}

// batch is a group of records that the committer writes, and in Batch mode
// syncs, together: the handle enqueue returns. Records enqueued while the
// committer is busy share one batch.
type batch struct {
	chunks []chunk // frames in log order, one chunk per segment touched
	n      int
	done   chan struct{}
	err    error // set before done is closed
}

type chunk struct {
	seq uint64
	buf []byte
}

func newBatch() *batch { return &batch{done: make(chan struct{})} }

// Open opens the log in opts.Dir, creating the directory if needed. It checks
// every segment header and the records of the newest segment, cutting off a
// torn tail left by a crash; older segments are checked by Replay. New
// records go to a new segment.
func Open(opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.SegmentSize == 0 {
		opts.SegmentSize = defaultSegmentSize
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = defaultSyncInterval
	}
	switch {
	case opts.Dir == "":
		return nil, errors.New("commitlog: no directory")
	case opts.SegmentSize < minSegmentSize || opts.SegmentSize > 1<<40:
		return nil, fmt.Errorf("commitlog: segment size %d out of range [%d, 1TiB]", opts.SegmentSize, minSegmentSize)
	case opts.Sync != Batch && opts.Sync != Periodic:
		return nil, fmt.Errorf("commitlog: unknown sync mode %d", opts.Sync)
	case opts.SyncInterval < 0:
		return nil, errors.New("commitlog: negative sync interval")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{
		opts:      opts,
		fs:        opts.FS,
		log:       logger.With("component", "commitlog", "shard", opts.Shard),
		maxRecord: int(min(opts.SegmentSize-segmentHeaderSize-frameHeaderSize, 1<<32-1)),
		cur:       newBatch(),
		wake:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if err := mkdirAllDurable(l.fs, opts.Dir); err != nil {
		return nil, fmt.Errorf("commitlog: create %s: %w", opts.Dir, err)
	}
	segs, err := l.listSegments()
	if err != nil {
		return nil, err
	}
	if len(segs) > 0 {
		last := &segs[len(segs)-1]
		keep, err := l.recoverNewest(last)
		if err != nil {
			return nil, err
		}
		if !keep {
			segs = segs[:len(segs)-1]
		}
	}
	for _, s := range segs {
		if err := l.checkHeader(s.seq); err != nil {
			return nil, err
		}
	}
	l.replaySegs = segs
	l.segments = slices.Clone(segs)
	l.seq = 1
	if len(segs) > 0 {
		l.seq = segs[len(segs)-1].seq + 1
	}
	l.size = segmentHeaderSize
	go l.run()
	return l, nil
}

// mkdirAllDurable creates dir and makes the names of the directories it
// created durable by syncing their parents.
func mkdirAllDurable(fsys vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		created = append(created, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range slices.Backward(created) {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

func segmentName(seq uint64) string { return fmt.Sprintf("%016x.log", seq) }

func (l *Log) path(seq uint64) string { return filepath.Join(l.opts.Dir, segmentName(seq)) }

// listSegments returns the segments in the directory, oldest first. Files
// whose names are not segment names are left alone.
func (l *Log) listSegments() ([]segment, error) {
	names, err := l.fs.ReadDir(l.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: list %s: %w", l.opts.Dir, err)
	}
	var segs []segment
	for _, name := range names {
		hex, ok := strings.CutSuffix(name, ".log")
		if !ok || len(hex) != 16 {
			continue
		}
		seq, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || seq == 0 {
			continue
		}
		fi, err := l.fs.Stat(filepath.Join(l.opts.Dir, name))
		if err != nil {
			return nil, fmt.Errorf("commitlog: %w", err)
		}
		segs = append(segs, segment{seq: seq, size: fi.Size()})
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmp.Compare(a.seq, b.seq) })
	return segs, nil
}

// corrupt returns an ErrCorrupt error naming the segment file and offset.
func (l *Log) corrupt(seq uint64, off int64, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, l.path(seq), off, fmt.Sprintf(format, args...))
}

func (l *Log) checkHeader(seq uint64) error {
	f, err := l.fs.Open(l.path(seq))
	if err != nil {
		return fmt.Errorf("commitlog: %w", err)
	}
	defer f.Close()
	b := make([]byte, segmentHeaderSize)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("commitlog: read %s: %w", l.path(seq), err)
	}
	return l.validHeader(seq, b[:n])
}

func (l *Log) validHeader(seq uint64, b []byte) error {
	h, err := decodeSegmentHeader(b)
	if err != nil {
		return l.corrupt(seq, 0, "%v", err)
	}
	if h.seq != seq {
		return l.corrupt(seq, 0, "header holds sequence number %d", h.seq)
	}
	if h.shard != l.opts.Shard {
		return fmt.Errorf("commitlog: %s belongs to shard %d, not %d", l.path(seq), h.shard, l.opts.Shard)
	}
	return nil
}

func (l *Log) readSegment(seq uint64) ([]byte, error) {
	f, err := l.fs.Open(l.path(seq))
	if err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("commitlog: read %s: %w", l.path(seq), err)
	}
	return data, nil
}

// recoverNewest checks the newest segment and cuts off a torn tail. It
// reports false if the segment held nothing but a torn header and has been
// removed.
func (l *Log) recoverNewest(s *segment) (keep bool, err error) {
	data, err := l.readSegment(s.seq)
	if err != nil {
		return false, err
	}
	name := l.path(s.seq)
	if len(data) < segmentHeaderSize || allZero(data) {
		// The crash came before the header was durable: no record was ever
		// acknowledged from this segment.
		l.log.Warn("removing segment with torn header", "file", name, "bytes", len(data))
		if err := l.fs.Remove(name); err != nil {
			return false, fmt.Errorf("commitlog: %w", err)
		}
		if err := l.fs.SyncDir(l.opts.Dir); err != nil {
			return false, fmt.Errorf("commitlog: sync %s: %w", l.opts.Dir, err)
		}
		return false, nil
	}
	if err := l.validHeader(s.seq, data); err != nil {
		return false, err
	}
	end, bad, _ := scanRecords(data, s.seq, func(int64, []byte) error { return nil })
	switch {
	case bad == nil:
		return true, nil
	case !bad.torn:
		if l.opts.SkipCorrupt {
			return true, nil // Replay skips and reports it
		}
		return false, l.corrupt(s.seq, bad.off, "%v", bad.status)
	}
	l.log.Warn("cutting off torn tail of newest segment", "file", name, "offset", end, "bytes", int64(len(data))-end, "reason", bad.status.String())
	if err := l.fs.Truncate(name, end); err != nil {
		return false, fmt.Errorf("commitlog: cut torn tail: %w", err)
	}
	// The shorter size must be durable before a newer segment exists, or a
	// crash could leave the torn tail in a segment that is no longer newest.
	f, err := l.fs.OpenAppend(name)
	if err != nil {
		return false, fmt.Errorf("commitlog: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("commitlog: sync %s: %w", name, err)
	}
	s.size = end
	return true, nil
}

// Replay calls fn, in log order, with every record in the segments that
// existed when the log was opened (less any removed by Release since). rec
// is only valid during the call. An error from fn stops the replay and is
// returned. A corrupt record fails the replay with an error matching
// ErrCorrupt, unless Options.SkipCorrupt is set.
func (l *Log) Replay(fn func(pos Position, rec []byte) error) error {
	for _, s := range l.replaySegs {
		l.mu.Lock()
		_, live := slices.BinarySearchFunc(l.segments, s.seq, func(a segment, seq uint64) int { return cmp.Compare(a.seq, seq) })
		l.mu.Unlock()
		if !live {
			continue
		}
		data, err := l.readSegment(s.seq)
		if err != nil {
			return err
		}
		if err := l.validHeader(s.seq, data); err != nil {
			return err
		}
		_, bad, err := scanRecords(data, s.seq, func(off int64, rec []byte) error {
			return fn(Position{Segment: s.seq, Offset: off}, rec)
		})
		if err != nil {
			return err
		}
		if bad == nil {
			continue
		}
		if !l.opts.SkipCorrupt {
			return l.corrupt(s.seq, bad.off, "%v", bad.status)
		}
		l.log.Error("skipping rest of corrupt segment", "file", l.path(s.seq), "offset", bad.off,
			"bytes_lost", int64(len(data))-bad.off, "reason", bad.status.String())
	}
	return nil
}

// Append adds rec to the log and returns its position once it is durable
// (Batch) or written (Periodic). Concurrent appends are committed together.
// If ctx ends first, Append returns ctx.Err() and the record may or may not
// be in the log. After a failed write or sync, every waiting and later
// append fails with an error matching ErrFailed.
func (l *Log) Append(ctx context.Context, rec []byte) (Position, error) {
	if err := ctx.Err(); err != nil {
		return Position{}, err
	}
	pos, c, err := l.enqueue(rec)
	if err != nil {
		return Position{}, err
	}
	select {
	case <-c.done:
		if c.err != nil {
			return Position{}, c.err
		}
		return pos, nil
	case <-ctx.Done():
		return Position{}, ctx.Err()
	}
}

// enqueue adds rec to the log without waiting: it returns the position rec
// will have and the batch that makes it durable (Batch) or written
// (Periodic). The caller may reuse rec at once. Records are committed in the
// order of their enqueue calls, and a batch fails if an earlier one did.
// enqueue fails at once with ErrTooLarge, ErrClosed, or the error (matching
// ErrFailed) that failed the log.
func (l *Log) enqueue(rec []byte) (Position, *batch, error) {
	if len(rec) > l.maxRecord {
		return Position{}, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(rec), l.maxRecord)
	}
	dataCRC := crc32.Checksum(rec, castagnoli)
	size := int64(frameHeaderSize + len(rec))

	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return Position{}, nil, l.err
	}
	if l.closed {
		l.mu.Unlock()
		return Position{}, nil, ErrClosed
	}
	if l.size+size > l.opts.SegmentSize {
		l.seq++
		l.size = segmentHeaderSize
	}
	pos := Position{Segment: l.seq, Offset: l.size}
	l.size += size
	c := l.cur
	if len(c.chunks) == 0 || c.chunks[len(c.chunks)-1].seq != l.seq {
		c.chunks = append(c.chunks, chunk{seq: l.seq})
	}
	ch := &c.chunks[len(c.chunks)-1]
	ch.buf = appendFrame(ch.buf, l.seq, dataCRC, rec)
	c.n++
	l.mu.Unlock()

	select {
	case l.wake <- struct{}{}:
	default: // the committer is already due to look
	}
	return pos, c, nil
}

// run is the committer: it takes the records gathered since its last round,
// writes them and, in Batch mode, syncs them, then wakes their appenders.
func (l *Log) run() {
	defer close(l.done)
	var tick <-chan time.Time
	if l.opts.Sync == Periodic {
		t := time.NewTicker(l.opts.SyncInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.wake:
			l.commitPending()
		case <-tick:
			// After a failure, never retry an fsync: a retry can succeed
			// although the kernel dropped the pages the failed one covered.
			if l.dirty && !l.failed() {
				if err := l.syncActive(); err != nil {
					l.fail(err)
				}
			}
		case <-l.quit:
			l.commitPending()
			l.closeActive()
			return
		}
	}
}

func (l *Log) commitPending() {
	l.mu.Lock()
	b := l.cur
	if b.n == 0 {
		l.mu.Unlock()
		return
	}
	l.cur = newBatch()
	err := l.err
	l.mu.Unlock()

	if err == nil {
		if err = l.commit(b); err != nil {
			err = l.fail(err)
		}
	}
	if err == nil {
		l.stats.appends.Add(uint64(b.n))
		l.stats.batches.Add(1)
	}
	b.err = err
	close(b.done)
}

// commit writes b's frames, starting new segments as needed.
func (l *Log) commit(b *batch) error {
	for _, c := range b.chunks {
		if l.f == nil || c.seq != l.fseq {
			if err := l.roll(c.seq); err != nil {
				return err
			}
		}
		if _, err := l.f.Write(c.buf); err != nil {
			return fmt.Errorf("commitlog: write %s: %w", l.path(l.fseq), err)
		}
		l.fsize += int64(len(c.buf))
		l.dirty = true
	}
	if l.opts.Sync == Batch {
		return l.syncActive()
	}
	return nil
}

func (l *Log) syncActive() error {
	l.stats.syncs.Add(1)
	start := time.Now()
	// fdatasync: the file's new size is synced with the data (it is needed
	// to read the data back); its modification time, which is not, is
	// left to the next journal commit.
	err := l.f.SyncData()
	l.stats.syncNanos.Add(uint64(time.Since(start)))
	if err != nil {
		return fmt.Errorf("commitlog: sync %s: %w", l.path(l.fseq), err)
	}
	l.dirty = false
	return nil
}

// roll completes the active segment and starts segment seq.
func (l *Log) roll(seq uint64) error {
	if l.f != nil {
		// Older segments must never hold a torn tail: sync before moving on.
		if err := l.syncActive(); err != nil {
			return err
		}
		if err := l.f.Close(); err != nil {
			return fmt.Errorf("commitlog: close %s: %w", l.path(l.fseq), err)
		}
		l.f = nil
		l.mu.Lock()
		l.segments = append(l.segments, segment{seq: l.fseq, size: l.fsize})
		l.mu.Unlock()
	}
	name := l.path(seq)
	f, err := l.fs.CreateExclusive(name)
	if err != nil {
		return fmt.Errorf("commitlog: create segment: %w", err)
	}
	l.f, l.fseq, l.fsize = f, seq, segmentHeaderSize
	if _, err := f.Write(segmentHeader{shard: l.opts.Shard, seq: seq}.encode()); err != nil {
		return fmt.Errorf("commitlog: write %s: %w", name, err)
	}
	l.dirty = true
	// The new name must be durable before any record in it is acknowledged.
	if err := l.fs.SyncDir(l.opts.Dir); err != nil {
		return fmt.Errorf("commitlog: sync %s: %w", l.opts.Dir, err)
	}
	return nil
}

// fail puts the log in the failed state and returns the error for waiters.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = fmt.Errorf("%w: %w", ErrFailed, err)
		l.log.Error("commitlog failed; appends refused until reopened", "err", err)
	}
	return l.err
}

func (l *Log) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err != nil
}

// closeActive syncs and closes the active segment at Close.
func (l *Log) closeActive() {
	if l.f == nil {
		return
	}
	if l.dirty && !l.failed() {
		if err := l.syncActive(); err != nil {
			l.fail(err)
		}
	}
	if err := l.f.Close(); err != nil {
		l.fail(fmt.Errorf("commitlog: close %s: %w", l.path(l.fseq), err))
	}
	l.f = nil
}

// MaxRecord is the largest record Append takes: one that fills an empty
// segment.
func (l *Log) MaxRecord() int { return l.maxRecord }

// Release removes the complete segments all of whose records are before
// upTo. The flush path passes the position of the first record that the
// durably stored SSTables do not cover. The segment being written is never
// removed. Release must not run concurrently with Replay.
func (l *Log) Release(upTo Position) error {
	l.mu.Lock()
	i := 0
	for i < len(l.segments) {
		s := l.segments[i]
		if s.seq > upTo.Segment || (s.seq == upTo.Segment && s.size > upTo.Offset) {
			break
		}
		i++
	}
	drop := slices.Clone(l.segments[:i])
	l.segments = slices.Delete(l.segments, 0, i)
	l.mu.Unlock()

	if len(drop) == 0 {
		return nil
	}
	for i, s := range drop {
		if err := l.fs.Remove(l.path(s.seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Keep what is left so that a later Release retries it.
			l.mu.Lock()
			l.segments = slices.Concat(drop[i:], l.segments)
			l.mu.Unlock()
			return fmt.Errorf("commitlog: release: %w", err)
		}
	}
	if err := l.fs.SyncDir(l.opts.Dir); err != nil {
		return fmt.Errorf("commitlog: release: sync %s: %w", l.opts.Dir, err)
	}
	return nil
}

// Close commits the records already appended, syncs and closes the log. It
// returns the error that failed the log, if any.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	close(l.quit)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Stats counts the log's work since Open.
type Stats struct {
	Appends uint64 // records committed
	Batches uint64 // group commits
	Syncs   uint64 // fsyncs of segment files
	// SyncTime is the time spent in those syncs: with Syncs, the disk's
	// sync latency, which bounds a Batch log's acknowledgements.
	SyncTime time.Duration
}

// Stats returns the counters of the log.
func (l *Log) Stats() Stats {
	return Stats{
		Appends:  l.stats.appends.Load(),
		Batches:  l.stats.batches.Load(),
		Syncs:    l.stats.syncs.Load(),
		SyncTime: time.Duration(l.stats.syncNanos.Load()),
	}
}
