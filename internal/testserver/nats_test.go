package testserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as the real one does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestNATSMissingBinaryFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOPATH", t.TempDir())
	r := &fatalRecorder{TB: t}
	done := make(chan *NATSServer)
	go func() {
		defer close(done)
		done <- NATS(r)
	}()
	if n, ok := <-done; ok {
		n.Stop()
		t.Fatal("NATS returned without a nats-server binary")
	}
	if !strings.Contains(r.msg, NATSInstall) {
		t.Fatalf("failure message does not give the install command: %q", r.msg)
	}
}

// kvState is a bucket's contents: key → "value@revision".
func kvState(ctx context.Context, t *testing.T, kv jetstream.KeyValue) map[string]string {
	t.Helper()
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatalf("list keys: %v", err)
	}
	state := map[string]string{}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		state[k] = fmt.Sprintf("%s@%d", e.Value(), e.Revision())
	}
	return state
}

func TestNATSKeyValueSurvivesKill(t *testing.T) {
	n := NATS(t)
	if !strings.HasPrefix(n.URL(), "nats://127.0.0.1:") {
		t.Fatalf("URL %q is not on loopback", n.URL())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	nc := n.Connect(t)
	js, err := jetstream.New(nc)
	require(t, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ranges", History: 4})
	require(t, err)
	for _, kvp := range [][2]string{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}} {
		if _, err := kv.PutString(ctx, kvp[0], kvp[1]); err != nil {
			t.Fatalf("put %s: %v", kvp[0], err)
		}
	}
	require(t, kv.Delete(ctx, "c"))
	want := map[string]string{"a": "3@3", "b": "2@2"}
	if got := kvState(ctx, t, kv); !maps.Equal(got, want) {
		t.Fatalf("before kill: %v, want %v", got, want)
	}

	n.Kill()
	if c, err := nats.Connect(n.URL(), nats.Timeout(time.Second), nats.NoReconnect()); err == nil {
		c.Close()
		t.Fatal("killed server accepted a connection")
	}

	// The old connection reconnects by itself once the server is back.
	n.Restart(t)
	if got := kvState(ctx, t, kv); !maps.Equal(got, want) {
		t.Fatalf("after kill and restart: %v, want %v", got, want)
	}
	if _, err := kv.Get(ctx, "c"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("deleted key after restart: %v, want ErrKeyNotFound", err)
	}
	hist, err := kv.History(ctx, "a")
	require(t, err)
	var vals []string
	for _, e := range hist {
		vals = append(vals, string(e.Value()))
	}
	if !slices.Equal(vals, []string{"1", "3"}) {
		t.Fatalf("history of a after restart: %v, want [1 3]", vals)
	}
	// The stream's sequence survived too: the next write follows the delete.
	rev, err := kv.PutString(ctx, "d", "5")
	require(t, err)
	if rev != 6 {
		t.Fatalf("first revision after restart: %d, want 6", rev)
	}

	// A graceful stop and restart, from a fresh connection.
	n.Stop()
	n.Restart(t)
	js2, err := jetstream.New(n.Connect(t))
	require(t, err)
	kv2, err := js2.KeyValue(ctx, "ranges")
	require(t, err)
	want["d"] = "5@6"
	if got := kvState(ctx, t, kv2); !maps.Equal(got, want) {
		t.Fatalf("after stop and restart: %v, want %v", got, want)
	}

	n.Pause(t)
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	if _, err := kv2.Get(pctx, "a"); err == nil {
		t.Fatal("paused server answered")
	}
	n.Resume(t)
	if e, err := kv2.Get(ctx, "a"); err != nil || string(e.Value()) != "3" {
		t.Fatalf("after resume: %v, %v", e, err)
	}
	n.Stop()
	n.Stop() // idempotent
}

// TestNATSCluster writes to a stream of three replicas, kills one server,
// writes on, restarts it and reads every message back from it alone.
func TestNATSCluster(t *testing.T) {
	c := NATSClusterOf(t, 3)
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	// A request to a stream whose leader died goes unanswered until the
	// next election: each attempt gets a deadline of its own.
	attempt := func() context.Context {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		t.Cleanup(cancel)
		return actx
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			for {
				_, err := js.Publish(attempt(), "r3.x", []byte(strconv.Itoa(i)))
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond) // a leader election
			}
		}
	}
	publish(0, 10)
	c.Servers[0].Kill()
	publish(10, 20)
	c.Servers[0].Restart(t)
	// The restarted server and one that was stopped meanwhile form the
	// quorum now: every message must have survived.
	c.Servers[1].Stop()
	c.Servers[2].Stop()
	c.Servers[1].Restart(t)
	var st jetstream.Stream
	for st == nil {
		if st, err = js.Stream(attempt(), "R3"); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := range 20 {
		var m *jetstream.RawStreamMsg
		for m == nil {
			if m, err = st.GetMsg(attempt(), uint64(i+1)); err != nil {
				if ctx.Err() != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		if string(m.Data) != strconv.Itoa(i) {
			t.Fatalf("message %d holds %q", i+1, m.Data)
		}
	}
}
