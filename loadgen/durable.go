package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sedimentdb/sediment/commitlog"
	"github.com/sedimentdb/sediment/frontend"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/token"
)

// durableHandler is a NullHandler that acknowledges a write only once it is
// synced to a commitlog: one log per core, the write going to the log of its
// partition's token, in commitlog.Batch mode. That is the durability an
// ingest node gives each write, with no engine work around it, so its
// throughput bounds any server that syncs one log per core before it
// acknowledges, on this disk and with this client.
type durableHandler struct {
	*NullHandler
	logs []*commitlog.Log
}

var _ frontend.Handler = (*durableHandler)(nil)

// openDurable wraps h with one commitlog per core in a new directory under
// dir. close closes the logs and removes that directory.
func openDurable(h *NullHandler, dir string) (_ *durableHandler, close func() error, err error) {
	tmp, err := os.MkdirTemp(dir, "sediment-bench-commitlog-")
	if err != nil {
		return nil, nil, err
	}
	d := &durableHandler{NullHandler: h}
	close = func() error {
		var errs []error
		for _, l := range d.logs {
			errs = append(errs, l.Close())
		}
		errs = append(errs, os.RemoveAll(tmp))
		return errors.Join(errs...)
	}
	for i := range runtime.GOMAXPROCS(0) {
		l, err := commitlog.Open(commitlog.Options{Dir: filepath.Join(tmp, fmt.Sprint(i)), Shard: uint32(i)})
		if err != nil {
			return nil, nil, errors.Join(err, close())
		}
		d.logs = append(d.logs, l)
	}
	return d, close, nil
}

// Execute answers a prepared statement; a write once it is durable.
func (h *durableHandler) Execute(ctx context.Context, s *frontend.Session, e *wire.Execute) (wire.Result, error) {
	res, err := h.NullHandler.Execute(ctx, s, e)
	if err != nil {
		return nil, err
	}
	if _, write := res.(*wire.Void); write {
		return res, h.append(ctx, [][]wire.Value{e.Params.Values})
	}
	return res, nil
}

// Batch answers a batch once its statements are durable, in the log of the
// first one's partition.
func (h *durableHandler) Batch(ctx context.Context, s *frontend.Session, b *wire.Batch) (wire.Result, error) {
	res, err := h.NullHandler.Batch(ctx, s, b)
	if err != nil {
		return nil, err
	}
	stmts := make([][]wire.Value, len(b.Children))
	for i, c := range b.Children {
		stmts[i] = c.Values
	}
	return res, h.append(ctx, stmts)
}

// append logs the bound values of stmts as one record, length-prefixed,
// about the size of the mutation an ingest node logs for them. The first
// value of the first statement is its partition key (every workload
// statement binds the key first).
func (h *durableHandler) append(ctx context.Context, stmts [][]wire.Value) error {
	if len(stmts) == 0 || len(stmts[0]) == 0 {
		return nil
	}
	var rec []byte
	for _, vals := range stmts {
		for _, v := range vals {
			rec = binary.AppendUvarint(rec, uint64(len(v.Bytes)))
			rec = append(rec, v.Bytes...)
		}
	}
	l := h.logs[token.Shard(token.Murmur3(stmts[0][0].Bytes), len(h.logs))]
	if _, err := l.Append(ctx, rec); err != nil {
		return wire.Errorf(wire.CodeServer, "loadgen: commitlog: %v", err)
	}
	return nil
}
