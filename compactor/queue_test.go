package compactor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/manifest"
)

func testJob() QueuedJob {
	p := Plan{Table: testTable, Range: 2, OutputLevel: 1, TargetSize: 1 << 20, Inputs: []manifest.SSTable{
		{Key: "a.sst", Size: 10, Covers: []manifest.LogPosition{{Node: "n1", Shard: 1, Segment: 2, Offset: 3, Parts: 1}}},
		{Key: "b.sst", Size: 20, Level: 1},
	}}
	return QueuedJob{ID: JobID(p), Table: p.Table, Range: p.Range, Inputs: p.Inputs, OutputLevel: 1, TargetSize: p.TargetSize,
		GCGraceSeconds: 864000, Queued: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func TestJobID(t *testing.T) {
	j := testJob()
	p := j.Plan()
	if JobID(p) != j.ID || len(j.ID) != 32 {
		t.Fatalf("JobID %q", JobID(p))
	}
	other := p
	other.Inputs = p.Inputs[:1]
	if JobID(other) == j.ID {
		t.Fatal("plans with other inputs share an ID")
	}
	other = p
	other.OutputLevel = 2
	if JobID(other) == j.ID {
		t.Fatal("plans with other output levels share an ID")
	}
}

func TestDecodeJob(t *testing.T) {
	j := testJob()
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeJob(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != j.ID || got.Table != j.Table || len(got.Inputs) != 2 || got.Inputs[0].Covers[0] != j.Inputs[0].Covers[0] || got.Bytes() != 30 {
		t.Fatalf("round trip: %+v", got)
	}
	for name, mutate := range map[string]func(*QueuedJob){
		"id":       func(j *QueuedJob) { j.ID = "../x" },
		"table":    func(j *QueuedJob) { j.Table = uuid.Nil },
		"range":    func(j *QueuedJob) { j.Range = -1 },
		"inputs":   func(j *QueuedJob) { j.Inputs = nil },
		"dup":      func(j *QueuedJob) { j.Inputs[1].Key = j.Inputs[0].Key },
		"empty":    func(j *QueuedJob) { j.Inputs[0].Key = "" },
		"level":    func(j *QueuedJob) { j.OutputLevel = NumLevels },
		"gc grace": func(j *QueuedJob) { j.GCGraceSeconds = -2 },
	} {
		bad := testJob()
		bad.Inputs = append([]manifest.SSTable(nil), bad.Inputs...)
		mutate(&bad)
		data, err := json.Marshal(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeJob(data); !errors.Is(err, ErrCorruptJob) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, s := range []string{"", "{", "[]", `{"id":1}`, string(data) + "{}", strings.Replace(string(data), `"range"`, `"rang"`, 1)} {
		if _, err := decodeJob([]byte(s)); !errors.Is(err, ErrCorruptJob) {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func FuzzDecodeJob(f *testing.F) {
	data, err := json.Marshal(testJob())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"id":"00000000000000000000000000000000"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := decodeJob(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptJob) {
				t.Fatalf("error %v is not ErrCorruptJob", err)
			}
			return
		}
		if j.Table == uuid.Nil || len(j.Inputs) == 0 || j.Range < 0 || len(j.ID) != 32 {
			t.Fatalf("accepted %+v", j)
		}
	})
}

// TestCorruptMessage publishes a message that is no job: a worker
// terminates it, and the queue drains.
func TestCorruptMessage(t *testing.T) {
	f := newFleet(t, 1, time.Second)
	if _, err := f.q.js.Publish(f.ctx, f.q.subj, []byte("not a job")); err != nil {
		t.Fatal(err)
	}
	w := f.worker(nil)
	if ok, err := w.RunOne(f.ctx, time.Second); !ok || !errors.Is(err, ErrCorruptJob) {
		t.Fatalf("RunOne: %v, %v", ok, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := f.q.stream.Info(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("corrupt message still queued: %+v", info.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLongJobKeepsDelivery runs a job slower than the ack wait: the
// worker's in-progress acks and lease renewals keep it, so a second worker
// gets nothing and the job is delivered once.
func TestLongJobKeepsDelivery(t *testing.T) {
	f := newFleet(t, 1, 600*time.Millisecond)
	table := uuid.New()
	inputs, want := f.flushes(5, table, 0, 2)
	if err := f.q.Submit(f.ctx, plan(table, 0, inputs)); err != nil {
		t.Fatal(err)
	}
	slow := f.worker(nil)
	var attempt string
	merged := make(chan struct{})
	slow.beforeCommit = func(_ context.Context, a string) {
		attempt = a
		close(merged)
		time.Sleep(2 * time.Second) // several ack waits
	}
	done := make(chan error, 1)
	go func() {
		_, err := slow.RunOne(f.ctx, time.Second)
		done <- err
	}()
	testwait.Recv(t, "the slow worker to merge", merged)
	other := f.worker(nil)
	for finished := false; !finished; {
		ok, err := other.RunOne(f.ctx, 200*time.Millisecond)
		if err != nil || ok {
			t.Fatalf("second worker got a delivery: %v, %v", ok, err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
	}
	if !strings.HasSuffix(attempt, "-1") {
		t.Fatalf("attempt %s is not the first delivery", attempt)
	}
	f.checkCompacted(table, 0, inputs, want)
}

// TestShortPollsLoseNoDelivery polls the queue with waits far shorter than
// the ack wait while other goroutines keep the CPUs busy, and checks that
// every job published arrives without waiting for a redelivery: a delivery
// the server makes at the end of a poll must reach the client, not expire
// with the client's wait (which loses it until the ack wait has passed).
func TestShortPollsLoseNoDelivery(t *testing.T) {
	f := newFleet(t, 1, time.Minute) // a lost delivery would not come back in this test
	const jobs = 40
	for i := range jobs {
		if _, err := f.q.js.Publish(f.ctx, f.q.subj, fmt.Appendf(nil, "job %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		busy.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
					_ = i * i
				}
			}
		})
	}
	defer func() { close(stop); busy.Wait() }()
	got := 0
	deadline := time.Now().Add(20 * time.Second)
	for got < jobs {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs delivered within 20s of polling; the rest were lost until the ack wait", got, jobs)
		}
		m, err := f.q.next(f.ctx, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			got++
			if err := m.Ack(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
