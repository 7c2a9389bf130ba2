package clustertest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// l0Trigger is the default strategy's L0 count from which a range is
// compacted: compaction has caught up once every range is below it.
const l0Trigger = 4

// newCompactor prepares a `sediment -target=compactor` process whose ID is
// id: a fast planner, a short ack wait, so that a dead compactor's job is
// delivered again soon, and a short garbage grace period.
func newCompactor(t *testing.T, bin, id string, n natsEndpoint, m *testserver.MinIOServer, cluster string) *node {
	t.Helper()
	nd := &node{id: id, dataDir: t.TempDir(), httpAddr: freeAddr(t), out: &syncBuffer{}}
	nd.prepare(t)
	nd.args = append(common(t, bin, "compactor", nd, n, m, cluster),
		"-compactor.workers=1",
		"-compactor.plan-interval=200ms",
		"-compactor.ack-wait=2s",
		"-gc.grace-period=1s",
		"-gc.interval=200ms",
	)
	return nd
}

// gauge reads the node's metric name from /metrics, summed over its
// series; ok is false if the node does not answer. Unlike metric it may
// run on any goroutine.
func (nd *node) gauge(name string) (sum float64, ok bool) {
	sum, _, _, err := nd.scrape(name)
	return sum, err == nil
}

// l0ByRange counts the live L0 SSTables of table per range.
func l0ByRange(t *testing.T, m *manifest.Manifest, table uuid.UUID) []int {
	t.Helper()
	ssts, err := m.SSTables(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, ranges)
	for _, s := range ssts {
		if s.Level == 0 {
			out[manifest.RangeOf(s.MinToken, ranges)]++
		}
	}
	return out
}

// TestCompactorFleet runs one ingest node, one frontend and three
// compactor processes against nats-server and MinIO. Rows written in many
// flushes queue compaction jobs; one compactor is killed with SIGKILL while
// it runs a job, and the two others finish the work, the dead one's job
// after the ack wait. Then every acknowledged row reads back exactly,
// every range's L0 is below the compaction trigger, and every SSTable
// object in the bucket is live in the manifest: the inputs of the jobs and
// the outputs of the killed attempt went on the garbage list and were
// deleted after the grace period, and no orphan is left.
func TestCompactorFleet(t *testing.T) {
	bin := buildSediment(t)
	ns := testserver.NATS(t)
	ms := testserver.MinIO(t)
	ctx := context.Background()
	obs := newObserver(t, ns, ms)
	if err := obs.m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	ingest := newNode(t, bin, "node-a", ns, ms, cluster)
	// Flushes go on however deep L0 gets while no compactor runs.
	ingest.args = append(ingest.args, "-ingest.flush-delay=20ms", "-ingest.flush-hold=100ms")
	fe := newFrontend(t, bin, "frontend-a", ns, ms, cluster)
	ingest.start(t)
	fe.start(t)

	admin := session(t, fe, "")
	createSchema(t, admin)
	s := session(t, fe, "ks")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := obs.v.WaitFor(wctx, func(v *manifest.View) bool { return v.Table("ks", "t") != nil })
	cancel()
	if err != nil {
		t.Fatal("the manifest has no table ks.t")
	}
	table := obs.v.Table("ks", "t").ID

	compactors := make([]*node, 3)
	for i := range compactors {
		compactors[i] = newCompactor(t, bin, fmt.Sprintf("compactor-%d", i+1), ns, ms, cluster)
		compactors[i].start(t)
	}

	// Rows in batches that fill the memtables again and again, so that
	// flushes keep queueing jobs, until stopped.
	l := &ledger{attempted: map[string]string{}, acked: map[string]string{}}
	const batch = 500
	stopWrites := make(chan struct{})
	written := make(chan int)
	go func() {
		next := 0
		defer func() { written <- next }()
		for {
			select {
			case <-stopWrites:
				return
			default:
			}
			l.concurrently(s, next, next+batch, 8, nil)
			next += batch
			time.Sleep(200 * time.Millisecond)
		}
	}()

	// Kill the first compactor seen running a job. The bucket is stalled
	// while the test looks again: a job still running then cannot finish
	// its upload, let alone commit, so the kill lands in the middle of it.
	victim := -1
	for deadline := time.Now().Add(40 * time.Second); victim < 0; {
		if time.Now().After(deadline) {
			close(stopWrites)
			t.Fatalf("no compactor caught running a job within 40s (%d rows written)", <-written)
		}
		for i, c := range compactors {
			if running, ok := c.gauge("sediment_compaction_running_jobs"); !ok || running == 0 {
				continue
			}
			ms.Pause(t)
			if running, ok := c.gauge("sediment_compaction_running_jobs"); ok && running > 0 {
				c.kill()
				victim = i
			}
			ms.Resume(t)
			break
		}
	}
	t.Logf("killed %s during a job", compactors[victim].id)
	survivors := slices.Delete(slices.Clone(compactors), victim, victim+1)
	// More writes, and so more jobs, for the survivors.
	acked, deadline := l.ackedCount(), time.Now().Add(30*time.Second)
	for l.ackedCount() < acked+2*batch && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(stopWrites)
	t.Logf("%d rows written", <-written)

	// The survivors drain the queue, the dead one's job included once its
	// ack wait is over, and compaction catches up.
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		queued, ok := survivors[0].gauge("sediment_compaction_queued_jobs")
		l0 := l0ByRange(t, obs.m, table)
		if ok && queued == 0 && slices.Max(l0) < l0Trigger {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 45s: %v jobs queued, L0 by range %v", queued, l0)
		}
	}
	// The dead compactor's job was delivered again and finished by a
	// survivor: an attempt's name ends with its delivery count.
	redelivered := regexp.MustCompile(`msg="compaction job (committed|dropped)".* attempt=[0-9a-f]+-[0-9]+-([2-9]|[0-9]{2,})\b`)
	var again string
	for _, c := range survivors {
		if again == "" {
			again = redelivered.FindString(c.out.String())
		}
	}
	if again == "" {
		t.Fatal("no survivor finished a job delivered again")
	}
	t.Logf("a survivor finished the dead one's job: %s", again)
	committed := 0.0
	for _, c := range survivors {
		n, _ := c.gauge("sediment_compaction_jobs_committed_total")
		committed += n
	}
	if committed == 0 {
		t.Fatal("the surviving compactors committed no job")
	}
	l.check(t, "after compaction with a compactor killed", s)

	// Every SSTable object is live, or garbage on its way out: once the
	// grace period is over, only live ones are left.
	cfg := objectstore.DefaultConfig()
	cfg.Backend, cfg.Endpoint, cfg.Bucket = "minio", ms.Endpoint, ms.Bucket
	cfg.AccessKeyID, cfg.SecretAccessKey, cfg.Insecure = ms.AccessKey, ms.SecretKey, true
	store, err := objectstore.New(ctx, cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var objects, live, garbage []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		objects, live, garbage = nil, nil, nil
		ssts, err := obs.m.SSTables(ctx, table)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ssts {
			live = append(live, s.Key)
		}
		gs, err := obs.m.Garbage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			garbage = append(garbage, g.Key)
		}
		err = store.List(ctx, "", func(a objectstore.Attrs) error {
			if strings.HasSuffix(a.Key, ".sst") {
				objects = append(objects, a.Key)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(objects)
		slices.Sort(live)
		if slices.Equal(objects, live) && len(garbage) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var orphans []string
			for _, o := range objects {
				if !slices.Contains(live, o) && !slices.Contains(garbage, o) {
					orphans = append(orphans, o)
				}
			}
			t.Fatalf("30s after compaction: %d objects, %d live, %d garbage listed; neither live nor listed: %v",
				len(objects), len(live), len(garbage), orphans)
		}
	}
	t.Logf("%d SSTables live, every object in the bucket among them; %v jobs committed by the survivors", len(live), committed)
}
