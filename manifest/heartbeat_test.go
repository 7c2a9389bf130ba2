package manifest_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestBeaterRecordsFailures checks that a Beater renews its member every
// interval, and that Err reports a renewal that failed once NATS is gone.
func TestBeaterRecordsFailures(t *testing.T) {
	srv, err := manifest.StartEmbedded(filepath.Join(t.TempDir(), "nats"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(context.Background(), js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	b := m.NewBeater(20*time.Millisecond, func() manifest.Member {
		calls++
		return manifest.Member{ID: "n1", Addr: "127.0.0.1:1", Shards: calls}
	}, slog.New(slog.DiscardHandler))
	if err := b.Beat(context.Background()); err != nil || b.Err() != nil {
		t.Fatalf("first beat: %v, Err %v", err, b.Err())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	defer func() { cancel(); <-done }()

	// Each renewal stamps a new heartbeat and asks for the member again.
	var beats []time.Time
	waitUntil(t, "two more heartbeats", func() bool {
		mems, err := m.Members(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(mems) == 1 && !slices.Contains(beats, mems[0].Heartbeat) {
			beats = append(beats, mems[0].Heartbeat)
		}
		return len(beats) >= 3 && mems[0].Shards >= 3
	})
	if err := b.Err(); err != nil {
		t.Fatalf("heartbeats succeed but Err is %v", err)
	}
	srv.Shutdown()
	waitUntil(t, "a failed heartbeat", func() bool { return b.Err() != nil })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
