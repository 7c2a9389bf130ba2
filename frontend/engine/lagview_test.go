package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// gatedProxy forwards TCP connections to target and holds every byte back,
// either way, while closed: a View behind it stops learning of changes,
// without a reconnect that would make it load them afresh.
type gatedProxy struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newGatedProxy(t *testing.T, target string) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProxy{ln: ln, target: target, open: make(chan struct{})}
	close(p.open)
	var wg sync.WaitGroup
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		p.setOpen(true)
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, c, s)
			cmu.Unlock()
			wg.Go(func() { p.pipe(s, c) })
			wg.Go(func() { p.pipe(c, s) })
		}
	})
	return p
}

func (p *gatedProxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

func (p *gatedProxy) setOpen(open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		if !open {
			p.open = make(chan struct{})
		}
	default:
		if open {
			close(p.open)
		}
	}
}

// pipe copies src to dst, each chunk once the gate is open.
func (p *gatedProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			return
		}
	}
}

// TestRemoteLaggingView holds a frontend's View back while the owning node
// flushes and drops its memtable: a read through that frontend must not
// answer without the flushed write, and once the View moves on it finds it.
func TestRemoteLaggingView(t *testing.T) {
	c := newCluster(t)
	u, err := url.Parse(c.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newGatedProxy(t, u.Host)
	// Through the proxy, with the embedded server's credentials.
	pu := *u
	pu.Host = proxy.ln.Addr().String()
	nc, err := nats.Connect(pu.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := manifest.Open(c.ctx, js, c.store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lagView, err := fm.Watch(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lagView.Close)
	e, err := NewRemote(RemoteConfig{View: lagView, Store: c.store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	wctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := lagView.WaitFor(wctx, func(v *manifest.View) bool { return len(v.Members()) == len(c.nodes) }); err != nil {
		t.Fatal(err)
	}

	pk := pksOf(0, 1)[0]
	if err := e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "flushed", 0, 100)}}); err != nil {
		t.Fatal(err)
	}
	proxy.setOpen(false)
	if err := c.nodes[0].Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	// The node's memtables no longer hold the write and the lagging View
	// does not list its SSTable: only waiting can find it.
	it := c.nodes[0].NewIter(storage.TableIDOf(c.table), nil, nil)
	if it.First() {
		t.Fatal("the node's memtables still hold entries after the flush")
	}
	it.Close()
	if n := len(lagView.SSTables(c.table)); n != 0 {
		t.Fatalf("the held-back view lists %d SSTables", n)
	}

	// While the View is held back, reads wait rather than answer without
	// the write.
	short, cancelShort := context.WithTimeout(c.ctx, 300*time.Millisecond)
	p, err := e.Read(short, Slice{Table: c.table, Key: []byte(pk), Now: 100})
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		cks, _ := values(t, p)
		t.Fatalf("read with the view held back: rows %v, err %v; want it to wait", cks, err)
	}
	short, cancelShort = context.WithTimeout(c.ctx, 300*time.Millisecond)
	pg, err := e.Scan(short, Scan{Table: c.table, First: minInt64, Last: maxInt64, Now: 100})
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("scan with the view held back: %d partitions, err %v; want it to wait", len(pg.Partitions), err)
	}

	// A read that starts held back finishes, complete, once the View
	// catches up.
	type result struct {
		p   *Partition
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := e.Read(wctx, Slice{Table: c.table, Key: []byte(pk), Now: 100})
		done <- result{p, err}
	}()
	proxy.setOpen(true)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if cks, vs := values(t, r.p); !slices.Equal(cks, []int64{1}) || vs[0] != "flushed" {
		t.Fatalf("read after the view caught up: rows %v %v", cks, vs)
	}
	c.check(e, map[string]map[int64]string{pk: {1: "flushed"}}, 10)
}
