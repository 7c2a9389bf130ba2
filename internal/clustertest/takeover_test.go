package clustertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/manifest"
)

// takeoverRounds is how many ingest nodes TestTakeover kills; `make
// test-long` sets SEDIMENT_TAKEOVER_ROUNDS=50.
func takeoverRounds(t *testing.T) int {
	if s := os.Getenv("SEDIMENT_TAKEOVER_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SEDIMENT_TAKEOVER_ROUNDS=%q", s)
		}
		return n
	}
	return 5
}

// TestTakeover runs three ingest nodes on the replicated log and a
// frontend, and in each round kills with kill -9 an ingest node that owns
// ranges, deletes its data directory, and writes on through gocql: the live
// nodes take its ranges over once its lease (-ingest.owner-lease) has
// passed, replaying its unflushed writes from the log. Every acknowledged
// write then reads back with its value, and nothing never written appears.
// The killed machine comes back empty, under a new node ID, as a new
// member. The time from the kill until every write of a batch spread over
// all ranges is acknowledged is recorded.
func TestTakeover(t *testing.T) {
	bin := buildSediment(t)
	nc := testserver.NATSClusterOf(t, 3)
	ms := testserver.MinIO(t)
	ctx := context.Background()
	obs := newObserverReplicas(t, nc, ms, 3)
	if err := obs.m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	// A minute's flush age keeps the writes of a round in memtables, so
	// that only the log can give them back.
	args := append(slices.Clone(replicated), "-ingest.owner-lease=1s", "-ingest.flush-age=1m")
	var nodes []*node
	for i := range 3 {
		nd := newNode(t, bin, fmt.Sprintf("node-%d", i), nc, ms, cluster)
		nd.args = append(nd.args, args...)
		nodes = append(nodes, nd)
	}
	// Each node claims the free ranges when it starts: give them out first.
	for r := range ranges {
		if _, err := obs.m.Assign(ctx, r, nodes[r%3].id); err != nil {
			t.Fatal(err)
		}
	}
	f := newFrontend(t, bin, "frontend", nc, ms, cluster)
	f.args = append(f.args, args...)
	for _, nd := range append(slices.Clone(nodes), f) {
		nd.start(t)
	}
	createSchema(t, session(t, f, ""))
	s := session(t, f, "ks")
	l := &ledger{attempted: map[string]string{}, acked: map[string]string{}}
	l.mustWriteAll(t, s, 0, 400, 8)
	l.check(t, "healthy", s)

	rng := rand.New(rand.NewPCG(1, 2))
	var took []time.Duration
	next := 400
	for round := range takeoverRounds(t) {
		owners := map[string]bool{}
		for r := range ranges {
			if o, ok := obs.v.Ownership(r); ok {
				owners[o.Owner] = true
			}
		}
		var victims []int
		for i, nd := range nodes {
			if owners[nd.id] {
				victims = append(victims, i)
			}
		}
		i := victims[rng.IntN(len(victims))]
		dead := nodes[i]
		replayed := func() (n float64) {
			for _, nd := range nodes {
				if nd != dead {
					sum, _ := nd.metric(t, "sediment_ingest_takeover_records_total")
					n += sum
				}
			}
			return n
		}
		before := replayed()
		// Writes in flight while it dies: their acknowledgements count.
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.concurrently(s, next, next+200, 4, nil)
		}()
		time.Sleep(100 * time.Millisecond)
		dead.kill()
		killed := time.Now()
		<-done
		next += 200
		if err := os.RemoveAll(dead.dataDir); err != nil {
			t.Fatal(err)
		}
		// A batch over every range, acknowledged once the survivors
		// serve the dead node's ranges.
		l.mustWriteAll(t, s, next, next+200, 8)
		next += 200
		took = append(took, time.Since(killed))
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := obs.v.WaitFor(wctx, func(v *manifest.View) bool {
			for r := range ranges {
				if o, ok := v.Ownership(r); !ok || o.Owner == dead.id {
					return false
				}
			}
			return true
		})
		cancel()
		if err != nil {
			t.Fatalf("round %d: %s still owns ranges: %v", round, dead.id, err)
		}
		l.check(t, fmt.Sprintf("round %d: %s killed", round, dead.id), s)
		if replayed() <= before {
			t.Fatalf("round %d: no survivor replayed a record of %s's log", round, dead.id)
		}
		// The survivors' gauges show every range owned, by them.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			owned, unowned := 0.0, 0.0
			for _, nd := range nodes {
				if nd != dead {
					o, _ := nd.metric(t, "sediment_ingest_ranges_owned")
					_, u := nd.metric(t, "sediment_ingest_ranges_unowned")
					owned, unowned = owned+o, max(unowned, u)
				}
			}
			if owned == ranges && unowned == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the survivors' gauges show %v ranges owned, %v unowned; want %d and 0", round, owned, unowned, ranges)
			}
		}

		// The machine comes back empty, as a new member.
		nd := newNode(t, bin, fmt.Sprintf("node-%d-r%d", i, round), nc, ms, cluster)
		nd.args = append(nd.args, args...)
		nd.start(t)
		nodes[i] = nd
	}
	// A node frozen past its lease (a long pause, a partition from NATS
	// and the frontends) is taken over; once it thaws, its log and its
	// flushes are fenced, so writes it still holds in flight are refused,
	// and nothing acknowledged is lost.
	var frozen *node
	for _, nd := range nodes {
		for r := range ranges {
			if o, ok := obs.v.Ownership(r); ok && o.Owner == nd.id {
				frozen = nd
			}
		}
	}
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Writes sent to the frozen node get no answer: the driver's own
	// timeout ends them, and the application retries, as here.
	l.mustWriteAllIf(t, s, next, next+200, 8, func(err error) bool {
		return retriableWrite(err) || errors.Is(err, context.DeadlineExceeded)
	})
	next += 200
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	l.mustWriteAll(t, s, next, next+200, 8)
	next += 200
	l.check(t, fmt.Sprintf("%s frozen past its lease, then thawed", frozen.id), s)
	for r := range ranges {
		if o, ok := obs.v.Ownership(r); ok && o.Owner == frozen.id {
			t.Fatalf("the thawed node %s owns range %d again", frozen.id, r)
		}
	}

	slices.Sort(took)
	t.Logf("figure: ingest.takeover_s.p50 %.2f s", took[len(took)/2].Seconds())
	t.Logf("figure: ingest.takeover_s.max %.2f s", took[len(took)-1].Seconds())
}
