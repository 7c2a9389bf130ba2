package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/token"
)

// durableHandler is a NullHandler that acknowledges a write only once it is
// synced to a commitlog, as an ingest node does, with no engine work
// around it: one log per core, the write going to the log of its
// partition's token, and one goroutine per log that gathers the writes
// arriving while the previous group syncs and appends them as one record
// (the ingest shard's loop, less the memtable).
type durableHandler struct {
	*NullHandler
	logs []*groupLog
}

var _ transport.Handler = (*durableHandler)(nil)

// groupLog is a commitlog and the goroutine that appends to it.
type groupLog struct {
	log  *commitlog.Log
	reqs chan *logWrite
	done chan struct{}
}

// logWrite is one write waiting for its group's sync.
type logWrite struct {
	rec    []byte
	synced chan error
}

// openDurable wraps h with one commitlog per core, in the directories 0, 1,
// ... of dir. stop stops the logs.
func openDurable(h *NullHandler, dir string) (_ *durableHandler, stop func() error, err error) {
	d := &durableHandler{NullHandler: h}
	stop = func() error {
		var errs []error
		for _, g := range d.logs {
			close(g.reqs)
			<-g.done
			errs = append(errs, g.log.Close())
		}
		return errors.Join(errs...)
	}
	for i := range runtime.GOMAXPROCS(0) {
		l, err := commitlog.Open(commitlog.Options{Dir: filepath.Join(dir, fmt.Sprint(i)), Shard: uint32(i)})
		if err != nil {
			return nil, nil, errors.Join(err, stop())
		}
		g := &groupLog{log: l, reqs: make(chan *logWrite, 1024), done: make(chan struct{})}
		go g.run()
		d.logs = append(d.logs, g)
	}
	return d, stop, nil
}

// run appends the writes that arrived while the previous group synced as
// one record, and answers them once it is durable.
func (g *groupLog) run() {
	defer close(g.done)
	var group []*logWrite
	var rec []byte
	for w := range g.reqs {
		group, rec = append(group[:0], w), append(rec[:0], w.rec...)
	drain:
		for {
			select {
			case w, ok := <-g.reqs:
				if !ok {
					break drain
				}
				group, rec = append(group, w), append(rec, w.rec...)
			default:
				break drain
			}
		}
		_, err := g.log.Append(context.Background(), rec)
		for _, w := range group {
			w.synced <- err
		}
	}
}

// Execute answers a prepared statement; a write once it is durable.
func (h *durableHandler) Execute(ctx context.Context, s *transport.Session, e *wire.Execute) (wire.Result, error) {
	res, err := h.NullHandler.Execute(ctx, s, e)
	if err != nil {
		return nil, err
	}
	if _, write := res.(*wire.Void); write {
		if err := h.append([][]wire.Value{e.Params.Values}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Batch answers a batch once its statements are durable, in the log of the
// first one's partition.
func (h *durableHandler) Batch(ctx context.Context, s *transport.Session, b *wire.Batch) (wire.Result, error) {
	res, err := h.NullHandler.Batch(ctx, s, b)
	if err != nil {
		return nil, err
	}
	stmts := make([][]wire.Value, len(b.Children))
	for i, c := range b.Children {
		stmts[i] = c.Values
	}
	if err := h.append(stmts); err != nil {
		return nil, err
	}
	return res, nil
}

// append logs the bound values of stmts, length-prefixed: about the size
// of the mutation an ingest node logs for them. The first value of the
// first statement is its partition key (every workload statement binds the
// key first). It waits for the sync even if the request is cancelled: the
// write is logged either way.
func (h *durableHandler) append(stmts [][]wire.Value) error {
	if len(stmts) == 0 || len(stmts[0]) == 0 {
		return nil
	}
	w := &logWrite{synced: make(chan error, 1)}
	for _, vals := range stmts {
		for _, v := range vals {
			w.rec = binary.AppendUvarint(w.rec, uint64(len(v.Bytes)))
			w.rec = append(w.rec, v.Bytes...)
		}
	}
	g := h.logs[token.Shard(token.Murmur3(stmts[0][0].Bytes), len(h.logs))]
	g.reqs <- w
	if err := <-w.synced; err != nil {
		return wire.Errorf(wire.CodeServer, "loadgen: commitlog: %v", err)
	}
	return nil
}
