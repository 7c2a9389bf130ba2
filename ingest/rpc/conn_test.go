package rpc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
)

// These tests feed raw frames to a client or a server or reach into a
// connection, so they live in package rpc; the tests over a real ingest node
// are in package rpc_test.

// accepting answers every request with success.
type accepting struct{}

func (accepting) Apply(context.Context, *storage.Mutation) error                   { return nil }
func (accepting) Scan(context.Context, ScanRequest) (*Page, error)                 { return &Page{}, nil }
func (accepting) ApplyIf(context.Context, *storage.Mutation, Digest) (bool, error) { return true, nil }
func (accepting) Truncate(context.Context, storage.TableID) error                  { return nil }
func (accepting) Flush(context.Context) error                                      { return nil }

// holding is accepting, but holds the Applies of table 7 until release is
// closed, signalling each on arrived.
type holding struct {
	accepting
	arrived, release chan struct{}
}

func (h *holding) Apply(ctx context.Context, m *storage.Mutation) error {
	if m.Table == 7 {
		h.arrived <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// mutation is a mutation of table for servers that do not look at it.
func mutation(table storage.TableID) *storage.Mutation {
	return &storage.Mutation{Table: table, Entries: []storage.Entry{{Key: []byte("k"), Value: []byte("v")}}}
}

func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// TestServerGarbage: a server that answers garbage breaks the connection
// with a protocol error, not a panic or a wrong answer.
func TestServerGarbage(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		nc.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, opAck})
		time.Sleep(time.Second)
	}()
	c := Dial(ln.Addr().String(), Options{Conns: 1, MaxFrame: 1 << 20})
	defer c.Close()
	err := c.Apply(context.Background(), mutation(1))
	if !errors.Is(err, ErrConnLost) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("garbage answer: %v", err)
	}
}

// TestClientGarbage: a client that sends garbage is hung up on; the server
// serves others on.
func TestClientGarbage(t *testing.T) {
	ln := listen(t)
	s := NewServer(accepting{}, Options{MaxFrame: 1 << 20})
	go s.Serve(ln)
	defer s.Close()
	addr := ln.Addr().String()
	ctx := context.Background()
	for _, junk := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, opApply},
		{0, 0, 0, 6, 0, 0, 0, 1, 0x33, 0},
		{0, 0, 0, 6, 0, 0, 0, 1, opApply, 0xff},
	} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(junk)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		// An undecodable request is answered with an error frame; a frame
		// that cannot be read ends the connection.
		f, _, err := readFrame(nc, nil, 1<<20)
		if err == nil {
			if f.op != opError || !errors.Is(decodeError(f.body), ErrProtocol) {
				t.Fatalf("answer %#x to junk %x", f.op, junk)
			}
		}
		nc.Close()
	}
	c := Dial(addr, Options{})
	defer c.Close()
	if err := c.Apply(ctx, mutation(1)); err != nil {
		t.Fatal(err)
	}
}

// TestStreamWrap: IDs wrap around without meeting a request still waiting.
func TestStreamWrap(t *testing.T) {
	g := &holding{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	ln := listen(t)
	s := NewServer(g, Options{})
	go s.Serve(ln)
	defer s.Close()
	c := Dial(ln.Addr().String(), Options{Conns: 1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Apply(ctx, mutation(1)); err != nil {
		t.Fatal(err)
	}
	cc := c.slots[0].c
	cc.mu.Lock()
	cc.stream = 1<<32 - 2 // the held request takes the last ID, then 0
	cc.mu.Unlock()
	held := make(chan error, 1)
	go func() { held <- c.Apply(ctx, mutation(7)) }()
	<-g.arrived
	for range 4 {
		if err := c.Apply(ctx, mutation(1)); err != nil {
			t.Fatal(err)
		}
	}
	cc.mu.Lock()
	cc.stream = 1<<32 - 2 // wraps onto the held request's ID, which is skipped
	cc.mu.Unlock()
	if err := c.Apply(ctx, mutation(1)); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
