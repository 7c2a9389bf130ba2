package rpc_test

import (
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// openNode opens an ingest node of shards shards with its commitlog on fs
// and its bucket in memory.
func openNode(tb testing.TB, fs vfs.FS, dir string, shards int) *ingest.Node {
	tb.Helper()
	n, _ := openNodeCommitter(tb, fs, dir, shards)
	return n
}

// openNodeCommitter is openNode that also returns the node's committer,
// which reads the SSTables its flushes committed.
func openNodeCommitter(tb testing.TB, fs vfs.FS, dir string, shards int) (*ingest.Node, *ingest.MemCommitter) {
	tb.Helper()
	bucket, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := ingest.DefaultConfig()
	cfg.Shards = shards
	cfg.FlushAge = time.Hour
	cfg.WriteTimeout = 5 * time.Second
	cfg.Commitlog.Dir = dir
	c := ingest.NewMemCommitter(bucket)
	n, err := ingest.OpenNode(context.Background(), cfg, ingest.NodeDeps{
		FS: fs, Store: bucket, Committer: c, Reader: c,
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n, c
}

// listen returns a loopback listener on a free port.
func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// serve serves h on a fresh loopback listener and returns its address and
// the server, closed when the test ends.
func serve(tb testing.TB, h rpc.Handler, opts rpc.Options) (string, *rpc.Server) {
	tb.Helper()
	ln := listen(tb)
	s := rpc.NewServer(h, opts)
	go s.Serve(ln)
	tb.Cleanup(func() { s.Close() })
	return ln.Addr().String(), s
}

func dial(tb testing.TB, addr string, opts rpc.Options) *rpc.Client {
	tb.Helper()
	c := rpc.Dial(addr, opts)
	tb.Cleanup(func() { c.Close() })
	return c
}

var ckTypes = []*cqltype.Type{cqltype.BigintType}

// rowKey is the key of row ck in partition pk of a table with one bigint
// clustering column.
func rowKey(pk string, ck int64) []byte {
	c := binary.BigEndian.AppendUint64(nil, uint64(ck))
	k, err := keys.RowKey(nil, token.Murmur3([]byte(pk)), []byte(pk), [][]byte{c}, ckTypes, []bool{false})
	if err != nil {
		panic(err)
	}
	return k
}

func rowValue(ts int64, v string) []byte {
	return model.AppendRow(nil, &model.Row{Cells: []model.Cell{{Column: 1, Timestamp: ts, Value: []byte(v)}}})
}

func rowMutation(table storage.TableID, pk string, ck, ts int64, v string) *storage.Mutation {
	return &storage.Mutation{Table: table, Entries: []storage.Entry{{Key: rowKey(pk, ck), Value: rowValue(ts, v)}}}
}

func pk(i int) string { return "p" + strconv.Itoa(i) }
