package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// cluster is two ingest nodes, each serving RPC and owning half of the
// ranges, and two Remote engines, as two frontends would run them.
type cluster struct {
	t       testing.TB
	ctx     context.Context
	m       *manifest.Manifest
	natsURL string
	store   objectstore.Store
	view    *manifest.View
	table   uuid.UUID
	nodes   [2]*ingest.Node
	servers [2]*rpc.Server
	remotes [2]*Remote
}

// owners of the test ranges: n0 owns 0 and 1, n1 owns 2 and 3.
var clusterOwner = [testRanges]int{0, 0, 1, 1}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	ctx := context.Background()
	js, natsURL := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// One View for the whole process: see Remote's comment on a View that
	// trails the node's.
	m, tbl, view := openCatalog(t, ctx, js, store)
	c := &cluster{t: t, ctx: ctx, m: m, natsURL: natsURL, store: store, view: view, table: tbl}
	for i := range c.nodes {
		id := fmt.Sprintf("n%d", i)
		mc := ingest.NewManifestCommitter(m, store, id)
		for r, o := range clusterOwner {
			if o == i {
				if _, err := mc.Claim(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg := ingest.DefaultConfig()
		cfg.Shards = 2
		cfg.MemtableSize = 1 << 20
		cfg.MemoryLimit = 4 << 20
		cfg.FlushAge = time.Hour
		cfg.WriteTimeout = 10 * time.Second
		cfg.Commitlog.Dir = "commitlog"
		cfg.Commitlog.SegmentSize = 256 << 10
		cfg.ObjectPrefix = "sst/" + id
		node, err := ingest.OpenNode(ctx, cfg, ingest.NodeDeps{
			FS:         vfs.NewMem(),
			Store:      store,
			Committer:  ingest.NewViewCommitter(mc, view),
			Reader:     ingest.NewViewReader(view, tablestore.NewReaderCache(store, nil, 0)),
			Registerer: prometheus.NewRegistry(),
			Ranges:     testRanges,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := rpc.NewServer(ingest.RPCHandler(node), rpc.Options{})
		go s.Serve(ln)
		t.Cleanup(func() { s.Close() })
		if err := m.Heartbeat(ctx, manifest.Member{ID: id, Roles: []string{"ingest"}, Addr: ln.Addr().String(), Shards: node.Shards()}); err != nil {
			t.Fatal(err)
		}
		c.nodes[i], c.servers[i] = node, s
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := view.WaitFor(wctx, func(v *manifest.View) bool {
		for r, o := range clusterOwner {
			if own, ok := v.Ownership(r); !ok || own.Owner != fmt.Sprintf("n%d", o) {
				return false
			}
		}
		return len(v.Members()) == len(c.nodes)
	}); err != nil {
		t.Fatal(err)
	}
	for i := range c.remotes {
		r, err := NewRemote(RemoteConfig{View: view, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		c.remotes[i] = r
	}
	return c
}

// ownerOf returns the index of the node owning pk.
func ownerOf(pk string) int { return clusterOwner[manifest.RangeOf(tokenOf(pk), testRanges)] }

// pksOf returns n partition keys owned by node i.
func pksOf(i, n int) []string {
	var pks []string
	for k := 0; len(pks) < n; k++ {
		if pk := fmt.Sprintf("p%d", k); ownerOf(pk) == i {
			pks = append(pks, pk)
		}
	}
	return pks
}

// check reads every partition of want through e, and scans the ring
// through e in pages of limit rows: both must show exactly want.
func (c *cluster) check(e Engine, want map[string]map[int64]string, limit int) {
	c.t.Helper()
	for pk, rows := range want {
		p, err := e.Read(c.ctx, Slice{Table: c.table, Key: []byte(pk), Now: 100})
		if err != nil {
			c.t.Fatalf("read %s: %v", pk, err)
		}
		cks, vs := values(c.t, p)
		if len(cks) != len(rows) {
			c.t.Fatalf("read %s: %d rows %v, want %d", pk, len(cks), cks, len(rows))
		}
		for i, ck := range cks {
			if rows[ck] != vs[i] {
				c.t.Fatalf("read %s ck %d: %q, want %q", pk, ck, vs[i], rows[ck])
			}
		}
	}
	got := map[string]map[int64]string{}
	var after []byte
	lastTok := int64(minInt64)
	for pages := 0; ; pages++ {
		if pages > 1000 {
			c.t.Fatal("scan does not end")
		}
		page, err := e.Scan(c.ctx, Scan{Table: c.table, First: minInt64, Last: maxInt64, After: after, Limit: limit, Now: 100})
		if err != nil {
			c.t.Fatalf("scan: %v", err)
		}
		for _, p := range page.Partitions {
			if p.Token < lastTok {
				c.t.Fatalf("scan: token %d after %d", p.Token, lastTok)
			}
			lastTok = p.Token
			cks, vs := values(c.t, &p)
			rows := got[string(p.Key)]
			if rows == nil {
				rows = map[int64]string{}
				got[string(p.Key)] = rows
			}
			for i, ck := range cks {
				if _, dup := rows[ck]; dup {
					c.t.Fatalf("scan: %s ck %d twice", p.Key, ck)
				}
				rows[ck] = vs[i]
			}
		}
		if after = page.Next; after == nil {
			break
		}
	}
	if len(got) != len(want) {
		c.t.Fatalf("scan: %d partitions, want %d", len(got), len(want))
	}
	for pk, rows := range want {
		for ck, v := range rows {
			if got[pk][ck] != v {
				c.t.Fatalf("scan %s ck %d: %q, want %q", pk, ck, got[pk][ck], v)
			}
		}
		if len(got[pk]) != len(rows) {
			c.t.Fatalf("scan %s: %d rows, want %d", pk, len(got[pk]), len(rows))
		}
	}
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

func TestRemoteWriteThroughOneReadThroughOther(t *testing.T) {
	c := newCluster(t)
	want := map[string]map[int64]string{}
	pks := append(pksOf(0, 6), pksOf(1, 6)...)
	// write applies one mutation holding every partition, so that Apply
	// splits it between the nodes, and one mutation per partition.
	write := func(e Engine, ts int64, tag string) {
		t.Helper()
		var all Mutation
		all.Table = c.table
		var per []*Mutation
		for _, pk := range pks {
			if want[pk] == nil {
				want[pk] = map[int64]string{}
			}
			v := fmt.Sprintf("%s-%s-1", tag, pk)
			all.Entries = append(all.Entries, insert(pk, 1, ts, v, 0, 100))
			want[pk][1] = v
			v = fmt.Sprintf("%s-%s-%d", tag, pk, ts)
			per = append(per, &Mutation{Table: c.table, Entries: []Entry{insert(pk, ts, ts, v, 0, 100)}})
			want[pk][ts] = v
		}
		if err := e.Apply(c.ctx, append(per, &all)...); err != nil {
			t.Fatal(err)
		}
	}
	write(c.remotes[0], 10, "a")
	for i, n := range c.nodes {
		it := n.NewIter(storage.TableIDOf(c.table), nil, nil)
		if !it.First() {
			t.Fatalf("node %d got none of the writes", i)
		}
		it.Close()
	}
	c.check(c.remotes[1], want, 0)
	c.check(c.remotes[1], want, 3)

	// After a flush the rows come from SSTables; newer writes from the
	// memtables overwrite some of them.
	for _, n := range c.nodes {
		if err := n.Flush(c.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.view.SSTables(c.table)) < 2 {
		t.Fatalf("%d SSTables after flushing both nodes", len(c.view.SSTables(c.table)))
	}
	c.check(c.remotes[1], want, 2)
	write(c.remotes[1], 20, "b")
	c.check(c.remotes[0], want, 0)
	c.check(c.remotes[0], want, 5)
	// The node-local engine agrees with the remote ones.
	for i, n := range c.nodes {
		l, err := NewLocal(LocalConfig{Node: n, View: c.view, Store: c.store})
		if err != nil {
			t.Fatal(err)
		}
		mine := map[string]map[int64]string{}
		for pk, rows := range want {
			if ownerOf(pk) == i {
				mine[pk] = rows
			}
		}
		for pk := range mine {
			p, err := l.Read(c.ctx, Slice{Table: c.table, Key: []byte(pk), Now: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Rows) != len(mine[pk]) {
				t.Fatalf("local read of %s on node %d: %d rows, want %d", pk, i, len(p.Rows), len(mine[pk]))
			}
		}
	}
}

func TestRemoteOwnerDown(t *testing.T) {
	c := newCluster(t)
	up, down := pksOf(0, 1)[0], pksOf(1, 1)[0]
	e := c.remotes[0]
	if err := e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(down, 1, 1, "x", 0, 100)}}); err != nil {
		t.Fatal(err)
	}
	c.servers[1].Close()

	err := e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(down, 2, 1, "y", 0, 100)}})
	if err == nil || !storage.Retriable(err) {
		t.Fatalf("write to the node that is down: %v, want a retriable error", err)
	}
	if _, err := e.Read(c.ctx, Slice{Table: c.table, Key: []byte(down), Now: 100}); err == nil || !storage.Retriable(err) {
		t.Fatalf("read from the node that is down: %v, want a retriable error", err)
	}
	// A batch touching both nodes: the live node's part is applied.
	err = e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(up, 1, 1, "u", 0, 100), insert(down, 3, 1, "z", 0, 100)}})
	if err == nil || !storage.Retriable(err) {
		t.Fatalf("batch over both nodes: %v, want a retriable error", err)
	}
	if err := e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(up, 2, 1, "v", 0, 100)}}); err != nil {
		t.Fatalf("write to the live node: %v", err)
	}
	p, err := c.remotes[1].Read(c.ctx, Slice{Table: c.table, Key: []byte(up), Now: 100})
	if err != nil {
		t.Fatal(err)
	}
	if cks, vs := values(t, p); !slices.Equal(cks, []int64{1, 2}) || !slices.Equal(vs, []string{"u", "v"}) {
		t.Fatalf("read from the live node: %v %v", cks, vs)
	}
	// A scan of the live node's ranges alone still works.
	first, _ := manifest.RangeBounds(0, testRanges)
	_, last := manifest.RangeBounds(1, testRanges)
	page, err := e.Scan(c.ctx, Scan{Table: c.table, First: first, Last: last, Now: 100})
	if err != nil || len(page.Partitions) != 1 || string(page.Partitions[0].Key) != up {
		t.Fatalf("scan of the live node's ranges: %+v, %v", page, err)
	}
}

func TestRemoteFreeRangeAndConditions(t *testing.T) {
	c := newCluster(t)
	pk := pksOf(1, 1)[0]
	r := manifest.RangeOf(tokenOf(pk), testRanges)
	if _, err := c.m.Release(c.ctx, r, "n1"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := c.view.WaitFor(wctx, func(v *manifest.View) bool { o, _ := v.Ownership(r); return o.Owner == "" }); err != nil {
		t.Fatal(err)
	}
	err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "x", 0, 100)}})
	if !errors.Is(err, ErrNoOwner) || !storage.Retriable(err) {
		t.Fatalf("write to a free range: %v, want ErrNoOwner, retriable", err)
	}
	ok, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "x", 0, 100)}}, 100,
		func(*Partition) (bool, error) { return true, nil })
	if ok || !errors.Is(err, ErrNoOwner) {
		t.Fatalf("ApplyIf to a free range: %v %v, want ErrNoOwner", ok, err)
	}
	if err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{{Key: []byte{1}, Value: nil}}}); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("malformed key: %v", err)
	}
	if err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table}); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("mutation without entries: %v", err)
	}
	// The node refuses what it cannot apply, and the error keeps its
	// identity over the hop.
	bad := insert(pksOf(0, 1)[0], 1, 1, "x", 0, 100)
	bad.Value = []byte{0xff}
	if err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{bad}}); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("malformed value: %v", err)
	}
	if err := c.remotes[0].Apply(c.ctx, nil); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("nil mutation: %v", err)
	}
}

// pageIter must agree with positioning over a sorted slice.
func TestPageIter(t *testing.T) {
	es := []storage.Entry{{Key: []byte("b")}, {Key: []byte("d")}, {Key: []byte("f")}}
	it := &pageIter{entries: es, i: -1}
	if !it.SeekGE([]byte("c")) || string(it.Key()) != "d" || !it.Prev() || string(it.Key()) != "b" || it.Prev() || !it.Next() || string(it.Key()) != "b" {
		t.Fatal("SeekGE/Prev/Next")
	}
	if !it.SeekLT([]byte("f")) || string(it.Key()) != "d" || it.SeekLT([]byte("b")) || it.SeekGE([]byte("g")) || it.Next() || !it.Prev() || string(it.Key()) != "f" {
		t.Fatal("SeekLT/SeekGE past the end")
	}
	if !it.Last() || string(it.Key()) != "f" || !it.First() || string(it.Key()) != "b" {
		t.Fatal("First/Last")
	}
}

// pages is a scanner that answers scans with fixed pages, one after the
// other, as a faulty or hostile peer could.
type pages []*rpc.Page

func (ps *pages) Scan(context.Context, rpc.ScanRequest) (*rpc.Page, error) {
	if len(*ps) == 0 {
		return &rpc.Page{}, nil
	}
	p := (*ps)[0]
	*ps = (*ps)[1:]
	return p, nil
}

func TestFetchRejectsBadPages(t *testing.T) {
	e := func(k string) storage.Entry { return storage.Entry{Key: []byte(k)} }
	for name, ps := range map[string]pages{
		"out of order":    {{Entries: []storage.Entry{e("c"), e("b")}}},
		"duplicate":       {{Entries: []storage.Entry{e("c"), e("c")}}},
		"below the lower": {{Entries: []storage.Entry{e("a")}}},
		"at the upper":    {{Entries: []storage.Entry{e("x")}}},
		"no progress":     {{Next: []byte("b")}},
		"goes back":       {{Entries: []storage.Entry{e("d")}, Next: []byte("e")}, {Entries: []storage.Entry{e("c")}}},
	} {
		if _, _, err := fetch(context.Background(), &ps, 1, []byte("b"), []byte("x"), nil); !errors.Is(err, rpc.ErrProtocol) {
			t.Errorf("%s: %v, want rpc.ErrProtocol", name, err)
		}
	}
	ps := pages{{Entries: []storage.Entry{e("b"), e("c")}, Next: []byte("d")}, {Entries: []storage.Entry{e("d"), e("w")}}}
	got, _, err := fetch(context.Background(), &ps, 1, []byte("b"), []byte("x"), nil)
	if err != nil || len(got) != 4 || string(got[3].Key) != "w" {
		t.Fatalf("good pages: %v, %v", got, err)
	}
}

// FuzzFetch feeds arbitrary pages, which come from the network, to fetch:
// it must refuse them or return keys in order and within bounds.
func FuzzFetch(f *testing.F) {
	f.Add([]byte("b\x00c\x00d"), []byte("c"))
	f.Add([]byte("c\x00b"), []byte(nil))
	f.Add([]byte("a\x00y"), []byte("b"))
	f.Fuzz(func(t *testing.T, joined, next []byte) {
		var es []storage.Entry
		for k := range bytes.SplitSeq(joined, []byte{0}) {
			es = append(es, storage.Entry{Key: k})
		}
		half := len(es) / 2
		ps := pages{{Entries: es[:half], Next: next}, {Entries: es[half:]}}
		lo, hi := []byte("b"), []byte("x")
		got, _, err := fetch(context.Background(), &ps, 1, lo, hi, nil)
		if err != nil {
			if !errors.Is(err, rpc.ErrProtocol) {
				t.Fatalf("error %v is not rpc.ErrProtocol", err)
			}
			return
		}
		for i, e := range got {
			if bytes.Compare(e.Key, lo) < 0 || bytes.Compare(e.Key, hi) >= 0 || (i > 0 && bytes.Compare(got[i-1].Key, e.Key) >= 0) {
				t.Fatalf("accepted key %q at %d out of order or bounds", e.Key, i)
			}
		}
	})
}

// TestRemoteFollowsNewAddress moves a node's RPC server to a new port, as a
// restart would: Remote writes to the new address once the member list says
// so, and drops its client of the old one.
func TestRemoteFollowsNewAddress(t *testing.T) {
	c := newCluster(t)
	pk := pksOf(1, 1)[0]
	e := c.remotes[0]
	if err := e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "x", 0, 100)}}); err != nil {
		t.Fatal(err)
	}
	c.servers[1].Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer(ingest.RPCHandler(c.nodes[1]), rpc.Options{})
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	addr := ln.Addr().String()
	if err := c.m.Heartbeat(c.ctx, manifest.Member{ID: "n1", Addr: addr, Shards: c.nodes[1].Shards()}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := c.view.WaitFor(wctx, func(v *manifest.View) bool {
		return slices.ContainsFunc(v.Members(), func(m manifest.Member) bool { return m.Addr == addr })
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 2, 1, "y", 0, 100)}}); err != nil {
		t.Fatalf("write after the move: %v", err)
	}
	p, err := e.Read(c.ctx, Slice{Table: c.table, Key: []byte(pk), Now: 100})
	if err != nil {
		t.Fatal(err)
	}
	if cks, _ := values(t, p); !slices.Equal(cks, []int64{1, 2}) {
		t.Fatalf("rows %v after the move", cks)
	}
	e.mu.Lock()
	_, kept := e.clients[addr]
	n := len(e.clients)
	e.mu.Unlock()
	if !kept || n != 1 {
		t.Fatalf("%d clients kept, new address among them: %v; want only the new one", n, kept)
	}
}

// eachNode reaches every owner once, skips free ranges, and joins errors.
func TestRemoteEachNode(t *testing.T) {
	c := newCluster(t)
	r := c.remotes[0]
	var mu sync.Mutex
	calls := map[*rpc.Client]int{}
	visit := func(cl *rpc.Client) error {
		mu.Lock()
		defer mu.Unlock()
		calls[cl]++
		return nil
	}
	if err := r.eachNode(c.ctx, visit); err != nil || len(calls) != 2 {
		t.Fatalf("%d nodes, %v, want 2", len(calls), err)
	}
	for cl, n := range calls {
		if n != 1 {
			t.Fatalf("client %p called %d times", cl, n)
		}
	}
	// Truncate through it: every node's memtables lose the table.
	for _, pk := range append(pksOf(0, 5), pksOf(1, 5)...) {
		if err := r.Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "x", 0, 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.eachNode(c.ctx, func(cl *rpc.Client) error { return cl.Truncate(c.ctx, storage.TableIDOf(c.table)) }); err != nil {
		t.Fatal(err)
	}
	for i, n := range c.nodes {
		it := n.NewIter(storage.TableIDOf(c.table), nil, nil)
		if it.First() {
			t.Errorf("node %d keeps entries of the truncated table", i)
		}
		it.Close()
	}
	boom := errors.New("boom")
	if err := r.eachNode(c.ctx, func(*rpc.Client) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("errors not joined: %v", err)
	}
	// n1 lets its ranges go: only n0 is left.
	for rg, o := range clusterOwner {
		if o == 1 {
			if _, err := c.m.Release(c.ctx, rg, "n1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	wctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := c.view.WaitFor(wctx, func(v *manifest.View) bool { o, _ := v.Ownership(testRanges - 1); return o.Owner == "" }); err != nil {
		t.Fatal(err)
	}
	clear(calls)
	if err := r.eachNode(c.ctx, visit); err != nil || len(calls) != 1 {
		t.Fatalf("%d nodes, %v, want 1", len(calls), err)
	}
}
