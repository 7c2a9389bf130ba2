// Package streamlog is a shard's write-ahead log kept in a NATS JetStream
// stream, so that it outlives the machine that wrote it: with a stream of
// three replicas an appended record is acknowledged once a Raft quorum of
// NATS servers has it.
//
// # Layout
//
// One stream per cluster holds the logs of every ingest shard, each on its
// own subject:
//
//	stream   <cluster>_WAL, subjects <cluster>.wal.>, file storage, R replicas
//	subject  <cluster>.wal.<node>.<shard>
//	message  one record (a shard's group commit), or an open marker:
//	         header Sediment-Log: open, no body
//
// A record's Position is its stream sequence (Position.Segment; Offset is 0):
// stream sequences grow, so positions order a subject's records.
//
// # Fencing
//
// Every message is published with Nats-Expected-Last-Subject-Sequence set to
// the sequence of the writer's previous message on the subject. Open first
// publishes an open marker the same way, expecting the subject's current last
// sequence: from then on every append of an older writer of the subject (an
// earlier process of the node, or one that other nodes took over) expects a
// sequence that is no longer the last, and fails with storage.ErrFenced.
// Replay reads the records before the marker, so nothing the older writer
// got acknowledged is missed, and nothing it appends later is accepted.
//
// # Unknown outcomes
//
// A publish whose answer is lost (a NATS server died, a leader election ran
// past the append timeout) may or may not have been stored. Append then
// fails with storage.ErrUnavailable if the stream answers no request (it has
// no quorum), else with storage.ErrTimeout, and keeps the record pending:
// the caller must append the same record again before any other. The retry carries the
// same Nats-Msg-Id and expected sequence, so JetStream's duplicate window
// stores it once; past that window, the subject's last message tells whether
// the first attempt landed.
//
// # Purge
//
// Release purges the subject's messages up to a flushed position, keeping
// always the writer's newest message: it is the sequence the next append
// expects, and a subject left empty would make that expectation fail.
package streamlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/storage"
)

// markerHeader marks a message as an open marker rather than a record.
const markerHeader = "Sediment-Log"

// headerRoom is what a record's message leaves of the server's max_payload
// for its headers (message ID, expected sequence).
const headerRoom = 512

// Options configure a Log.
type Options struct {
	JetStream jetstream.JetStream
	// Cluster names the stream and the subjects' prefix.
	Cluster string
	// Node and Shard name the log's subject; neither may contain '.', '*',
	// '>' or white space.
	Node  string
	Shard uint32
	// Replicas of the stream when Open creates it (default 1). A cluster
	// that must survive the loss of a NATS server uses 3.
	Replicas int
	// AppendTimeout bounds an Append, retries included (default 2s); past
	// it Append fails with storage.ErrUnavailable.
	AppendTimeout time.Duration
	// Logger receives warnings; nothing is logged if nil.
	Logger *slog.Logger
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// StreamName is the name of the cluster's log stream.
func StreamName(cluster string) string { return cluster + "_WAL" }

// Subject is the subject of the log of a node's shard.
func Subject(cluster, node string, shard uint32) string {
	return cluster + ".wal." + node + "." + strconv.FormatUint(uint64(shard), 10)
}

// Log is one shard's log on its subject. Append and Release may run
// concurrently; Append calls are serialised by the caller (the shard
// goroutine).
type Log struct {
	opts    Options
	js      jetstream.JetStream
	stream  jetstream.Stream
	subject string
	log     *slog.Logger
	epoch   uint64 // the sequence of this writer's open marker
	max     int

	mu      sync.Mutex
	last    uint64   // sequence of this writer's newest stored message
	n       uint64   // records appended, naming their message IDs
	pending *pending // a record whose append has an unknown outcome
	err     error    // sticky: fenced
	closed  bool

	appends, publishes, publishNanos atomic.Uint64
}

type pending struct {
	id  string
	rec []byte
}

var (
	// ErrOutOfOrder is returned by an Append of another record while one is
	// pending.
	ErrOutOfOrder = errors.New("streamlog: append of another record while one has an unknown outcome")
	errClosed     = errors.New("streamlog: closed")
)

// Open creates the cluster's stream if needed, fences any earlier writer
// of the subject with an open marker, and returns the log. It retries while
// JetStream is unavailable, as long as ctx allows.
func Open(ctx context.Context, opts Options) (*Log, error) {
	if opts.JetStream == nil {
		return nil, errors.New("streamlog: no JetStream")
	}
	if !tokenRE.MatchString(opts.Cluster) || !tokenRE.MatchString(opts.Node) {
		return nil, fmt.Errorf("streamlog: cluster %q and node %q must be subject tokens", opts.Cluster, opts.Node)
	}
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.AppendTimeout == 0 {
		opts.AppendTimeout = 2 * time.Second
	}
	if opts.Replicas < 1 || opts.Replicas > 5 || opts.AppendTimeout < 0 {
		return nil, fmt.Errorf("streamlog: %d replicas, append timeout %v", opts.Replicas, opts.AppendTimeout)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{
		opts:    opts,
		js:      opts.JetStream,
		subject: Subject(opts.Cluster, opts.Node, opts.Shard),
		log:     logger.With("component", "streamlog", "shard", opts.Shard),
		max:     int(opts.JetStream.Conn().MaxPayload()) - headerRoom,
	}
	for {
		// A request to a stream whose leader died goes unanswered until a
		// new one is elected: each attempt gets a deadline of its own.
		actx, cancel := context.WithTimeout(ctx, openAttemptTimeout)
		err := l.open(actx)
		cancel()
		if err == nil {
			return l, nil
		}
		l.log.Warn("opening the log stream; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("streamlog: open %s: %w (%w)", l.subject, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (l *Log) open(ctx context.Context) error {
	name := StreamName(l.opts.Cluster)
	s, err := l.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = l.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        name,
			Description: "Sediment write-ahead logs, one subject per ingest shard",
			Subjects:    []string{l.opts.Cluster + ".wal.>"},
			Storage:     jetstream.FileStorage,
			Replicas:    l.opts.Replicas,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardNew, // never drop a record to make room
			Duplicates:  2 * time.Minute,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = l.js.Stream(ctx, name)
		}
	}
	if err != nil {
		return err
	}
	l.stream = s
	for {
		last, err := l.lastSeq(ctx)
		if err != nil {
			return err
		}
		msg := nats.NewMsg(l.subject)
		msg.Header.Set(markerHeader, "open")
		ack, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		if isWrongLast(err) {
			continue // the older writer appended meanwhile: read again
		}
		if err != nil {
			return err
		}
		l.epoch, l.last = ack.Sequence, ack.Sequence
		return nil
	}
}

// lastSeq returns the sequence of the subject's last message, 0 if none.
func (l *Log) lastSeq(ctx context.Context) (uint64, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, l.subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// MaxRecord is the largest record Append takes: the server's max_payload
// less room for headers.
func (l *Log) MaxRecord() int { return l.max }

// Subject is the log's subject.
func (l *Log) Subject() string { return l.subject }

// Replay calls fn with every record before the open marker that Release
// has not purged, in log order.
func (l *Log) Replay(fn func(pos commitlog.Position, rec []byte) error) error {
	ctx := context.Background()
	c, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{l.subject}})
	if err != nil {
		return fmt.Errorf("streamlog: replay %s: %w", l.subject, err)
	}
	it, err := c.Messages()
	if err != nil {
		return fmt.Errorf("streamlog: replay %s: %w", l.subject, err)
	}
	defer it.Stop()
	for {
		// The marker is always there to be read, so a long wait means
		// JetStream is away, not that the log ended.
		msg, err := it.Next(jetstream.NextMaxWait(time.Minute))
		if err != nil {
			return fmt.Errorf("streamlog: replay %s: %w", l.subject, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("streamlog: replay %s: %w", l.subject, err)
		}
		seq := md.Sequence.Stream
		if seq >= l.epoch {
			return nil
		}
		if msg.Headers().Get(markerHeader) != "" {
			continue
		}
		if err := fn(commitlog.Position{Segment: seq}, msg.Data()); err != nil {
			return err
		}
	}
}

// Append publishes rec and returns its position once the stream has stored
// it. It fails with storage.ErrFenced once another writer opened the
// subject, and with storage.ErrUnavailable or storage.ErrTimeout when
// JetStream did not confirm the record within the append timeout: then the
// record may be stored or not, and the next Append must be of the same
// record (see the package comment).
func (l *Log) Append(ctx context.Context, rec []byte) (commitlog.Position, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return commitlog.Position{}, errClosed
	}
	if l.err != nil {
		l.mu.Unlock()
		return commitlog.Position{}, l.err
	}
	if len(rec) > l.max {
		l.mu.Unlock()
		return commitlog.Position{}, fmt.Errorf("%w: record of %d bytes, the log takes at most %d", storage.ErrTooLarge, len(rec), l.max)
	}
	p := l.pending
	if p == nil {
		l.n++
		p = &pending{id: l.subject + ":" + strconv.FormatUint(l.epoch, 10) + ":" + strconv.FormatUint(l.n, 10), rec: rec}
	} else if string(p.rec) != string(rec) {
		l.mu.Unlock()
		return commitlog.Position{}, ErrOutOfOrder
	}
	expect := l.last
	l.mu.Unlock()

	seq, err := l.publish(ctx, p, expect)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.pending = nil
		l.last = seq
		l.appends.Add(1)
		return commitlog.Position{Segment: seq}, nil
	case errors.Is(err, storage.ErrFenced):
		l.pending = nil
		l.err = err
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrTimeout):
		p.rec = append([]byte(nil), rec...) // the caller may reuse rec
		l.pending = p
	}
	return commitlog.Position{}, err
}

// publish stores p after expect, retrying until the append timeout.
func (l *Log) publish(ctx context.Context, p *pending, expect uint64) (uint64, error) {
	deadline := time.Now().Add(l.opts.AppendTimeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	msg := nats.NewMsg(l.subject)
	msg.Data = p.rec
	backoff := 10 * time.Millisecond
	var last error
	for {
		start := time.Now()
		ack, err := l.js.PublishMsg(ctx, msg, jetstream.WithMsgID(p.id), jetstream.WithExpectLastSequencePerSubject(expect))
		l.publishes.Add(1)
		l.publishNanos.Add(uint64(time.Since(start)))
		if err == nil {
			return ack.Sequence, nil
		}
		if isWrongLast(err) {
			// Either the first attempt landed and the duplicate window
			// has passed, or another writer opened the subject.
			m, gerr := l.stream.GetLastMsgForSubject(ctx, l.subject)
			if gerr == nil && m.Header.Get(jetstream.MsgIDHeader) == p.id {
				return m.Sequence, nil
			}
			if gerr == nil || errors.Is(gerr, jetstream.ErrMsgNotFound) {
				// Another writer's message is last, or another writer
				// dropped the log: this writer never purges its newest.
				return 0, fmt.Errorf("%w: %s was opened by another writer", storage.ErrFenced, l.subject)
			}
			err = gerr
		}
		last = err
		if errors.Is(err, nats.ErrConnectionClosed) {
			break
		}
		if time.Until(deadline) < backoff {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		if ctx.Err() != nil {
			break
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
	class := storage.ErrTimeout
	if !l.quorum() {
		class = storage.ErrUnavailable
	}
	return 0, fmt.Errorf("%w: log %s did not confirm a record within %v: %v", class, l.subject, l.opts.AppendTimeout, last)
}

// quorum reports whether the stream has a leader that hears from a quorum
// of its replicas: without one, a write is Unavailable, as Cassandra says
// when too few replicas are alive; with one, it was only slow. A leader
// that lost its followers goes on answering for a while before it steps
// down, so its answer alone does not tell.
func (l *Log) quorum() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	info, err := l.stream.Info(ctx)
	if err != nil {
		return false
	}
	c := info.Cluster
	if c == nil || len(c.Replicas) == 0 {
		return true // one replica: answering is being available
	}
	if c.Leader == "" {
		return false
	}
	live := 1
	for _, p := range c.Replicas {
		if p.Current && !p.Offline && p.Active < peerSilence {
			live++
		}
	}
	return live > (len(c.Replicas)+1)/2
}

// peerSilence is how long a replica may go unheard and count as alive.
const peerSilence = time.Second

// openAttemptTimeout bounds one attempt of Open.
const openAttemptTimeout = 5 * time.Second

// probeTimeout bounds the question whether the stream has a quorum.
const probeTimeout = 500 * time.Millisecond

// Release purges the records before upTo, as commitlog.Log.Release does,
// but never the writer's newest message.
func (l *Log) Release(upTo commitlog.Position) error {
	first := upTo.Segment // the first message kept
	if upTo.Offset > 0 {
		first++
	}
	l.mu.Lock()
	keep := min(first, l.last)
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return errClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(l.subject), jetstream.WithPurgeSequence(keep)); err != nil {
		return fmt.Errorf("streamlog: purge %s before %d: %w", l.subject, keep, err)
	}
	return nil
}

// Drop purges every message of the subject up to the open marker: for a
// node that took over the log's writer and holds its records now.
func (l *Log) Drop(ctx context.Context) error {
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(l.subject), jetstream.WithPurgeSequence(l.epoch+1)); err != nil {
		return fmt.Errorf("streamlog: drop %s: %w", l.subject, err)
	}
	return nil
}

// Shards returns the shards of node that have a log on the cluster's
// stream, none if the stream does not exist.
func Shards(ctx context.Context, js jetstream.JetStream, cluster, node string) ([]uint32, error) {
	s, err := js.Stream(ctx, StreamName(cluster))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	prefix := cluster + ".wal." + node + "."
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+"*"))
	if err != nil {
		return nil, err
	}
	var shards []uint32
	for subject := range info.State.Subjects {
		n, err := strconv.ParseUint(subject[len(prefix):], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("streamlog: subject %s", subject)
		}
		shards = append(shards, uint32(n))
	}
	slices.Sort(shards)
	return shards, nil
}

// Stats counts the log's work: Syncs are publishes (attempts included) and
// SyncTime the time spent waiting for their acknowledgements, the
// replicated log's durability latency.
func (l *Log) Stats() commitlog.Stats {
	return commitlog.Stats{
		Appends:  l.appends.Load(),
		Batches:  l.appends.Load(),
		Syncs:    l.publishes.Load(),
		SyncTime: time.Duration(l.publishNanos.Load()),
	}
}

// Close closes the log; the connection is the caller's.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	l.closed = true
	return nil
}
