package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// gate is a Handler decorator that holds requests of table held until
// released, counting those it holds.
type gate struct {
	rpc.Handler
	held    storage.TableID
	release chan struct{}
	waiting atomic.Int32
	arrived chan context.Context
}

func newGate(h rpc.Handler, held storage.TableID) *gate {
	return &gate{Handler: h, held: held, release: make(chan struct{}), arrived: make(chan context.Context, 100)}
}

func (g *gate) Apply(ctx context.Context, m *storage.Mutation) error {
	if m.Table == g.held {
		g.waiting.Add(1)
		defer g.waiting.Add(-1)
		g.arrived <- ctx
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Handler.Apply(ctx, m)
}

// readAll returns the node's memtable entries of table in [lower, upper).
func readAll(t *testing.T, n *ingest.Node, table storage.TableID, lower, upper []byte, reverse bool) []storage.Entry {
	t.Helper()
	it := n.NewIter(table, lower, upper)
	defer it.Close()
	first, next := it.First, it.Next
	if reverse {
		first, next = it.Last, it.Prev
	}
	var out []storage.Entry
	for ok := first(); ok; ok = next() {
		out = append(out, storage.Entry{Key: bytes.Clone(it.Key()), Value: bytes.Clone(it.Value())})
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, it kv.Iterator) int {
	t.Helper()
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConcurrentApplies pipelines many writers over one connection and
// checks that every acknowledged write is on the node.
func TestConcurrentApplies(t *testing.T) {
	for _, conns := range []int{1, 4} {
		t.Run(fmt.Sprintf("conns=%d", conns), func(t *testing.T) { testConcurrentApplies(t, conns) })
	}
}

func testConcurrentApplies(t *testing.T, conns int) {
	n := openNode(t, vfs.NewMem(), "log", 2)
	ln := &countingListener{Listener: listen(t)}
	s := rpc.NewServer(ingest.RPCHandler(n), rpc.Options{})
	go s.Serve(ln)
	defer s.Close()
	c := dial(t, ln.Addr().String(), rpc.Options{Conns: conns, MaxInFlight: 16})
	const writers, each = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := c.Apply(context.Background(), rowMutation(1, pk(w), int64(i), 1, "v")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	testwait.Wait(t, "the clients", &wg)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := count(t, n.NewIter(1, nil, nil)); got != writers*each {
		t.Fatalf("node holds %d rows, want %d", got, writers*each)
	}
	// Connections are reused: one dial per slot, however many requests.
	if got := ln.accepted.Load(); got != int32(conns) {
		t.Fatalf("%d connections for %d slots", got, conns)
	}
}

type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return nc, err
}

// TestOutOfOrder holds one request on the server while a later one on the
// same connection is answered first.
func TestOutOfOrder(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	g := newGate(ingest.RPCHandler(n), 7)
	addr, _ := serve(t, g, rpc.Options{})
	c := dial(t, addr, rpc.Options{Conns: 1})
	first := make(chan error, 1)
	go func() { first <- c.Apply(context.Background(), rowMutation(7, "held", 0, 1, "v")) }()
	testwait.Recv(t, "the held request to reach the server", g.arrived)
	if err := c.Apply(context.Background(), rowMutation(1, "later", 0, 1, "v")); err != nil {
		t.Fatalf("a request behind a held one: %v", err)
	}
	select {
	case err := <-first:
		t.Fatalf("held request answered before release: %v", err)
	default:
	}
	close(g.release)
	if err := testwait.Recv(t, "the held request's answer", first); err != nil {
		t.Fatal(err)
	}
	if count(t, n.NewIter(7, nil, nil)) != 1 || count(t, n.NewIter(1, nil, nil)) != 1 {
		t.Fatal("writes missing on the node")
	}
}

func TestScanPages(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 3)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := dial(t, addr, rpc.Options{})
	ctx := context.Background()
	for i := range 60 {
		for ck := range 4 {
			if err := n.Apply(ctx, rowMutation(1, pk(i), int64(ck), 1, fmt.Sprint(i, ck))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := n.Apply(ctx, rowMutation(2, "other", 0, 1, "x")); err != nil {
		t.Fatal(err)
	}
	all := readAll(t, n, 1, nil, nil, false)
	lower, upper := all[37].Key, all[201].Key
	for _, r := range []rpc.ScanRequest{
		{Table: 1, Limit: 7},
		{Table: 1, Limit: 7, Reverse: true},
		{Table: 1, Lower: lower, Upper: upper, Limit: 10},
		{Table: 1, Lower: lower, Upper: upper, Limit: 1, Reverse: true},
		{Table: 1, Lower: lower, Upper: upper},
		{Table: 3},
	} {
		t.Run(fmt.Sprintf("%+v", r), func(t *testing.T) {
			want := readAll(t, n, r.Table, r.Lower, r.Upper, r.Reverse)
			var got []storage.Entry
			pages := 0
			for req := r; ; {
				p, err := c.Scan(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				if r.Limit > 0 && len(p.Entries) > r.Limit {
					t.Fatalf("page of %d entries, limit %d", len(p.Entries), r.Limit)
				}
				got = append(got, p.Entries...)
				if p.Next == nil {
					break
				}
				if len(p.Entries) == 0 {
					t.Fatal("a page without entries resumes")
				}
				req = req.Resume(p)
			}
			if len(got) != len(want) {
				t.Fatalf("scanned %d entries in %d pages, want %d", len(got), pages, len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
					t.Fatalf("entry %d differs", i)
				}
			}
			if r.Limit > 0 && pages != max(1, (len(want)+r.Limit-1)/r.Limit) {
				t.Fatalf("%d pages for %d entries of limit %d", pages, len(want), r.Limit)
			}
		})
	}
}

// failing answers every request with err.
type failing struct{ err error }

func (f failing) Apply(context.Context, *storage.Mutation) error           { return f.err }
func (f failing) Scan(context.Context, rpc.ScanRequest) (*rpc.Page, error) { return nil, f.err }
func (f failing) ApplyIf(context.Context, *storage.Mutation, rpc.Digest) (bool, error) {
	return false, f.err
}
func (f failing) Truncate(context.Context, storage.TableID) error { return f.err }
func (f failing) Flush(context.Context) error                     { return f.err }

func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	for _, want := range []error{storage.ErrOverloaded, storage.ErrFenced, storage.ErrClosed, storage.ErrTooLarge, context.DeadlineExceeded} {
		addr, _ := serve(t, failing{fmt.Errorf("shard 2: %w", want)}, rpc.Options{})
		c := dial(t, addr, rpc.Options{})
		err := c.Apply(ctx, rowMutation(1, "p", 0, 1, "v"))
		if !errors.Is(err, want) {
			t.Fatalf("apply failed with %v, want %v", err, want)
		}
		if _, err := c.Scan(ctx, rpc.ScanRequest{Table: 1}); !errors.Is(err, want) {
			t.Fatalf("scan failed with %v, want %v", err, want)
		}
		if ok, err := c.ApplyIf(ctx, rowMutation(1, "p", 0, 1, "v"), rpc.Digest{}); ok || !errors.Is(err, want) {
			t.Fatalf("applyif answered %v, %v, want %v", ok, err, want)
		}
		if err := c.Truncate(ctx, 1); !errors.Is(err, want) {
			t.Fatalf("truncate failed with %v, want %v", err, want)
		}
		if err := c.Flush(ctx); !errors.Is(err, want) {
			t.Fatalf("flush failed with %v, want %v", err, want)
		}
		if storage.Retriable(err) != (want == storage.ErrOverloaded) {
			t.Fatalf("Retriable(%v) = %v", err, storage.Retriable(err))
		}
	}

	// A real node: an invalid mutation, then a closed node.
	n := openNode(t, vfs.NewMem(), "log", 1)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := dial(t, addr, rpc.Options{})
	bad := &storage.Mutation{Table: 1, Entries: []storage.Entry{{Key: []byte("junk"), Value: []byte("junk")}}}
	if err := c.Apply(ctx, bad); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("invalid mutation: %v", err)
	}
	n.Close()
	if err := c.Apply(ctx, rowMutation(1, "p", 0, 1, "v")); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("closed node: %v", err)
	}
	if err := c.Flush(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("flush of a closed node: %v", err)
	}
}

// TestServerKilled breaks the connection under a request in flight: it
// fails retriably, requests fail while the server is down, and the client
// reconnects once it is back on the same address.
func TestServerKilled(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	g := newGate(ingest.RPCHandler(n), 7)
	ln := listen(t)
	addr := ln.Addr().String()
	s := rpc.NewServer(g, rpc.Options{})
	go s.Serve(ln)
	c := dial(t, addr, rpc.Options{Conns: 1})
	ctx := context.Background()

	inFlight := make(chan error, 1)
	go func() { inFlight <- c.Apply(ctx, rowMutation(7, "held", 0, 1, "v")) }()
	testwait.Recv(t, "the held request to reach the server", g.arrived)
	s.Close()
	err := <-inFlight
	if !errors.Is(err, rpc.ErrConnLost) || !errors.Is(err, storage.ErrTimeout) || !storage.Retriable(err) {
		t.Fatalf("request in flight on a killed server: %v, want ErrConnLost, a timeout", err)
	}
	if err := c.Apply(ctx, rowMutation(1, "p", 0, 1, "v")); !errors.Is(err, storage.ErrUnavailable) || !storage.Retriable(err) {
		t.Fatalf("request while the server is down: %v, want ErrUnavailable", err)
	}

	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s2 := rpc.NewServer(ingest.RPCHandler(n), rpc.Options{})
	go s2.Serve(ln2)
	defer s2.Close()
	if err := c.Apply(ctx, rowMutation(1, "p", 0, 1, "v")); err != nil {
		t.Fatalf("after the server came back: %v", err)
	}
	p, err := c.Scan(ctx, rpc.ScanRequest{Table: 1})
	if err != nil || len(p.Entries) != 1 {
		t.Fatalf("scan after reconnecting: %v", err)
	}
}

func TestContextCancel(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	g := newGate(ingest.RPCHandler(n), 7)
	addr, _ := serve(t, g, rpc.Options{})
	c := dial(t, addr, rpc.Options{Conns: 1})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Apply(ctx, rowMutation(7, "held", 0, 1, "v")) }()
	testwait.Recv(t, "the held request to reach the server", g.arrived)
	cancel()
	if err := testwait.Recv(t, "the cancelled request to end", done); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	// The connection is still good.
	if err := c.Apply(context.Background(), rowMutation(1, "p", 0, 1, "v")); err != nil {
		t.Fatal(err)
	}

	// A deadline travels with the request: the server gives up too.
	dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer dcancel()
	go func() { done <- c.Apply(dctx, rowMutation(7, "held", 1, 1, "v")) }()
	sctx := testwait.Recv(t, "the request to reach the server", g.arrived)
	if _, ok := sctx.Deadline(); !ok {
		t.Fatal("the server's request has no deadline")
	}
	testwait.Recv(t, "the server to give up at the deadline", sctx.Done())
	if err := testwait.Recv(t, "the request past its deadline to end", done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request past its deadline: %v", err)
	}

	// A cancelled context fails before sending anything.
	if _, err := c.Scan(ctx, rpc.ScanRequest{Table: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("scan with a cancelled context: %v", err)
	}
}

// TestMaxInFlight: past the bound, requests wait for a slot on the client.
func TestMaxInFlight(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	g := newGate(ingest.RPCHandler(n), 7)
	addr, _ := serve(t, g, rpc.Options{})
	c := dial(t, addr, rpc.Options{Conns: 1, MaxInFlight: 2})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if err := c.Apply(context.Background(), rowMutation(7, pk(i), 0, 1, "v")); err != nil {
				t.Error(err)
			}
		})
	}
	testwait.Recv(t, "the held request to reach the server", g.arrived)
	testwait.Recv(t, "the held request to reach the server", g.arrived)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Apply(ctx, rowMutation(1, "p", 0, 1, "v")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third request with two slots held: %v", err)
	}
	if got := count(t, n.NewIter(1, nil, nil)); got != 0 {
		t.Fatal("the waiting request was sent")
	}
	close(g.release)
	testwait.Wait(t, "the held requests", &wg)
	if err := c.Apply(context.Background(), rowMutation(1, "p", 0, 1, "v")); err != nil {
		t.Fatal(err)
	}
}

func TestFrameLimit(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := dial(t, addr, rpc.Options{Conns: 1, MaxFrame: 1 << 10})
	big := rowMutation(1, "p", 0, 1, string(make([]byte, 2<<10)))
	if err := c.Apply(context.Background(), big); err == nil || storage.Retriable(err) {
		t.Fatalf("request past the frame limit: %v", err)
	}
	// Nothing was sent; the connection is intact.
	if err := c.Apply(context.Background(), rowMutation(1, "p", 0, 1, "v")); err != nil {
		t.Fatal(err)
	}
}

func TestClosedClient(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := rpc.Dial(addr, rpc.Options{})
	if err := c.Apply(context.Background(), rowMutation(1, "p", 0, 1, "v")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Apply(context.Background(), rowMutation(1, "p", 0, 1, "v")); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("closed client: %v", err)
	}
}

func TestServe(t *testing.T) {
	n := openNode(t, vfs.NewMem(), "log", 1)
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- rpc.Serve(ln, ingest.RPCHandler(n)) }()
	c := dial(t, ln.Addr().String(), rpc.Options{})
	if err := c.Apply(context.Background(), rowMutation(1, "p", 0, 1, "v")); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := testwait.Recv(t, "Serve to return", served); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve returned %v after its listener closed", err)
	}
}
