package streamlog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testserver"
)

func newJS(t *testing.T, n *testserver.NATSServer) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(n.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func open(t *testing.T, js jetstream.JetStream) *Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, Options{JetStream: js, Cluster: "c1", Node: "n1", Shard: 3, AppendTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

type record struct {
	pos commitlog.Position
	rec string
}

func replay(t *testing.T, l *Log) []record {
	t.Helper()
	var got []record
	if err := l.Replay(func(pos commitlog.Position, rec []byte) error {
		got = append(got, record{pos, string(rec)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func appendAll(t *testing.T, l *Log, recs ...string) []commitlog.Position {
	t.Helper()
	var ps []commitlog.Position
	for _, r := range recs {
		p, err := l.Append(context.Background(), []byte(r))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestReplayRelease appends, reopens and checks what replay returns, before
// and after a release.
func TestReplayRelease(t *testing.T) {
	js := newJS(t, testserver.NATS(t))
	l := open(t, js)
	if got := replay(t, l); len(got) != 0 {
		t.Fatalf("a new log replays %v", got)
	}
	ps := appendAll(t, l, "a", "b", "c")
	for i := 1; i < len(ps); i++ {
		if ps[i].Compare(ps[i-1]) <= 0 {
			t.Fatalf("positions %v do not grow", ps)
		}
	}
	l.Close()
	l = open(t, js)
	want := []record{{ps[0], "a"}, {ps[1], "b"}, {ps[2], "c"}}
	if got := replay(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay %v, want %v", got, want)
	}
	// Release everything before c, as a flush through b does.
	if err := l.Release(commitlog.Position{Segment: ps[1].Segment, Offset: 1}); err != nil {
		t.Fatal(err)
	}
	d := appendAll(t, l, "d")
	// Releasing past the newest message keeps it: the next append expects it.
	if err := l.Release(commitlog.Position{Segment: d[0].Segment + 100}); err != nil {
		t.Fatal(err)
	}
	e := appendAll(t, l, "e")
	l.Close()
	l = open(t, js)
	want = []record{{d[0], "d"}, {e[0], "e"}}
	if got := replay(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay after release %v, want %v", got, want)
	}
}

// TestFencing opens the subject a second time: the first writer's appends
// fail with ErrFenced, and the second replays all the first one stored.
func TestFencing(t *testing.T) {
	js := newJS(t, testserver.NATS(t))
	old := open(t, js)
	ps := appendAll(t, old, "a", "b")
	l := open(t, js)
	if _, err := old.Append(context.Background(), []byte("late")); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("append of a fenced writer: %v, want ErrFenced", err)
	}
	if _, err := old.Append(context.Background(), []byte("later")); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("second append of a fenced writer: %v, want ErrFenced", err)
	}
	want := []record{{ps[0], "a"}, {ps[1], "b"}}
	if got := replay(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay %v, want %v", got, want)
	}
	appendAll(t, l, "c")
}

// TestUnknownOutcome freezes the server during an append: it fails with
// ErrUnavailable, the record stays pending, another record is refused, and
// once the server is back the retry stores the record exactly once.
func TestUnknownOutcome(t *testing.T) {
	n := testserver.NATS(t)
	js := newJS(t, n)
	l := open(t, js)
	appendAll(t, l, "a")
	n.Pause(t)
	_, err := l.Append(context.Background(), []byte("b"))
	n.Resume(t)
	if !errors.Is(err, storage.ErrUnavailable) || !storage.Retriable(err) {
		t.Fatalf("append to a frozen server: %v, want ErrUnavailable", err)
	}
	if _, err := l.Append(context.Background(), []byte("c")); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("append of another record while one is pending: %v", err)
	}
	var p commitlog.Position
	deadline := time.Now().Add(30 * time.Second)
	for p, err = l.Append(context.Background(), []byte("b")); err != nil; p, err = l.Append(context.Background(), []byte("b")) {
		if !errors.Is(err, storage.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	c := appendAll(t, l, "c")
	l.Close()
	l = open(t, js)
	got := replay(t, l)
	if len(got) != 3 || got[1] != (record{p, "b"}) || got[2] != (record{c[0], "c"}) {
		t.Fatalf("replay %v: want a, then b once at %v, then c", got, p)
	}
}

// TestMaxRecord refuses a record larger than the server's max_payload with
// storage.ErrTooLarge and takes one of MaxRecord bytes.
func TestMaxRecord(t *testing.T) {
	l := open(t, newJS(t, testserver.NATS(t)))
	if l.MaxRecord() < 512<<10 {
		t.Fatalf("max record %d", l.MaxRecord())
	}
	if _, err := l.Append(context.Background(), make([]byte, l.MaxRecord()+1)); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("oversized append: %v", err)
	}
	if _, err := l.Append(context.Background(), make([]byte, l.MaxRecord())); err != nil {
		t.Fatal(err)
	}
}

// TestNoQuorum takes two servers away from of a three-server cluster under a log of
// three replicas: appends fail with storage.ErrUnavailable, and once a
// server is back the pending record is stored, once.
func TestNoQuorum(t *testing.T) {
	c := testserver.NATSClusterOf(t, 3)
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, Options{JetStream: js, Cluster: "c1", Node: "n1", Shard: 0, Replicas: 3, AppendTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, "a")
	// One killed, one stopped: a stopping server hands its leaderships
	// over, and the last one leads on, answering, without followers.
	c.Servers[0].Kill()
	c.Servers[1].Stop()
	_, err = l.Append(ctx, []byte("b"))
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("append without a quorum: %v, want ErrUnavailable", err)
	}
	c.Servers[0].Restart(t)
	var p commitlog.Position
	for p, err = l.Append(ctx, []byte("b")); err != nil; p, err = l.Append(ctx, []byte("b")) {
		if !storage.Retriable(err) || ctx.Err() != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l2, err := Open(ctx, Options{JetStream: js, Cluster: "c1", Node: "n1", Shard: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := replay(t, l2); len(got) != 2 || got[1] != (record{p, "b"}) {
		t.Fatalf("replay %v, want a, then b once at %v", got, p)
	}
}

// TestShardsDrop lists a node's logs, and drops one as a node that took
// it over does: its subject is gone, its writer fenced.
func TestShardsDrop(t *testing.T) {
	js := newJS(t, testserver.NATS(t))
	ctx := context.Background()
	if got, err := Shards(ctx, js, "c1", "n1"); err != nil || len(got) != 0 {
		t.Fatalf("shards before any log: %v, %v", got, err)
	}
	var logs []*Log
	for _, shard := range []uint32{0, 2} {
		l, err := Open(ctx, Options{JetStream: js, Cluster: "c1", Node: "n1", Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		appendAll(t, l, "a", "b")
		logs = append(logs, l)
	}
	other, err := Open(ctx, Options{JetStream: js, Cluster: "c1", Node: "n2", Shard: 1})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, other, "x")
	if got, err := Shards(ctx, js, "c1", "n1"); err != nil || fmt.Sprint(got) != "[0 2]" {
		t.Fatalf("shards of n1: %v, %v", got, err)
	}
	taker, err := Open(ctx, Options{JetStream: js, Cluster: "c1", Node: "n1", Shard: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := replay(t, taker); len(got) != 2 {
		t.Fatalf("the taker replays %v", got)
	}
	if err := taker.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := Shards(ctx, js, "c1", "n1"); err != nil || fmt.Sprint(got) != "[2]" {
		t.Fatalf("shards of n1 after the drop: %v, %v", got, err)
	}
	if _, err := logs[0].Append(ctx, []byte("late")); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("append to a dropped log: %v, want ErrFenced", err)
	}
}
