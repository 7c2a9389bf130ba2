package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/crashtest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// processChildEnv, when set to a directory, turns the test binary into the
// child of TestKillProcess: it writes rows to a shard in that directory
// until it is killed.
const (
	processChildEnv = "SEDIMENT_INGEST_CRASH_DIR"
	processBaseEnv  = "SEDIMENT_INGEST_CRASH_BASE"
)

// objectCommitter is a FlushCommitter that survives the process: it keeps
// the list of flushes in one object, replaced with a conditional put, and
// serves reads through a MemCommitter rebuilt from it.
type objectCommitter struct {
	*MemCommitter
	store objectstore.Store

	mu      sync.Mutex
	etag    string
	flushes []Flush
}

const manifestKey = "manifest.json"

func openObjectCommitter(ctx context.Context, store objectstore.Store) (*objectCommitter, error) {
	c := &objectCommitter{MemCommitter: NewMemCommitter(store), store: store}
	attrs, err := store.Head(ctx, manifestKey)
	if objectstore.IsNotFound(err) {
		return c, nil
	} else if err != nil {
		return nil, err
	}
	r, err := store.Get(ctx, manifestKey)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := json.NewDecoder(r).Decode(&c.flushes); err != nil {
		return nil, err
	}
	c.etag = attrs.ETag
	for _, f := range c.flushes {
		if err := c.MemCommitter.Commit(ctx, f); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *objectCommitter) Commit(ctx context.Context, f Flush) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.flushes); n > 0 && f.Through.Compare(c.flushes[n-1].Through) <= 0 {
		return nil
	}
	data, err := json.Marshal(append(c.flushes, f))
	if err != nil {
		return err
	}
	cond := objectstore.IfAbsent()
	if c.etag != "" {
		cond = objectstore.IfMatch(c.etag)
	}
	etag, err := c.store.PutIf(ctx, manifestKey, data, cond)
	if err != nil {
		return err
	}
	c.etag = etag
	c.flushes = append(c.flushes, f)
	return c.MemCommitter.Commit(ctx, f)
}

func processConfig(dir string) Config {
	cfg := testConfig()
	cfg.Commitlog.Dir = filepath.Join(dir, "commitlog")
	cfg.FlushAge = 100 * time.Millisecond
	return cfg
}

func openProcessShard(ctx context.Context, dir string) (*Shard, *objectCommitter, error) {
	store, err := objectstore.NewFile(vfs.Default, filepath.Join(dir, "bucket"), nil)
	if err != nil {
		return nil, nil, err
	}
	c, err := openObjectCommitter(ctx, store)
	if err != nil {
		return nil, nil, err
	}
	s, err := Open(ctx, processConfig(dir), 0, NodeDeps{Store: store, Committer: c, Reader: c})
	return s, c, err
}

// TestKillProcess kills a process writing to a shard with SIGKILL at random
// moments, flushes included, then checks on restart that every acknowledged
// write is readable and stored once.
func TestKillProcess(t *testing.T) {
	if dir := os.Getenv(processChildEnv); dir != "" {
		processChild(dir, os.Getenv(processBaseEnv))
		return
	}
	budget := 6 * time.Second
	if testing.Short() {
		budget = 2 * time.Second
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	acked := map[uint64]bool{}
	start := time.Now()
	for round := 1; round <= 3 || time.Since(start) < budget; round++ {
		for _, id := range runProcessChild(t, dir, uint64(round)<<32, time.Duration(50+rng.IntN(300))*time.Millisecond) {
			acked[id] = true
		}
		ctx := context.Background()
		s, c, err := openProcessShard(ctx, dir)
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		got := contents(t, s, c, 1)
		for id := range acked {
			pk, ck := processRow(id)
			if got[string(rowKey(pk, ck))] != strconv.FormatUint(id, 10) {
				s.Close()
				t.Fatalf("round %d: acknowledged row %#x lost", round, id)
			}
		}
		testwait.For(t, "flushes to finish", func() bool { return s.flushing() == 0 })
		stored := count(t, s.NewIter(1, nil, nil))
		for _, sst := range c.SSTables(1) {
			stored += int(sst.Entries)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if stored != len(got) {
			t.Fatalf("round %d: %d entries stored for %d rows", round, stored, len(got))
		}
		t.Logf("round %d: %d rows, %d SSTables", round, len(got), len(c.SSTables(1)))
	}
	if len(acked) == 0 {
		t.Fatal("the child never acknowledged a write")
	}
}

// processRow places row id: ids of one round share partitions of 16 rows.
func processRow(id uint64) (string, int64) {
	return "p" + strconv.FormatUint(id/16, 10), int64(id % 16)
}

// runProcessChild runs the child, kills it about d after its first acknowledgement,
// and returns the ids it acknowledged.
func runProcessChild(t *testing.T, dir string, base uint64, d time.Duration) []uint64 {
	return crashtest.Run(t, "TestKillProcess", []string{processChildEnv + "=" + dir, processBaseEnv + "=" + strconv.FormatUint(base, 10)}, d)
}

// processChild writes rows from several goroutines and prints "ack <id>"
// for each acknowledged one, until killed.
func processChild(dir, baseStr string) {
	base, err := strconv.ParseUint(baseStr, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad base:", err)
		os.Exit(2)
	}
	s, _, err := openProcessShard(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var next atomic.Uint64
	var mu sync.Mutex
	val := strings.Repeat("x", 100)
	for range 8 {
		go func() {
			for {
				id := base + next.Add(1)
				pk, ck := processRow(id)
				m := rowMutation(1, pk, ck, 1, strconv.FormatUint(id, 10))
				m.Entries = append(m.Entries, storage.Entry{Key: rowKey(pk, ck+1000), Value: rowValue(1, val)})
				if err := s.Apply(context.Background(), m); err != nil {
					fmt.Fprintln(os.Stderr, "apply:", err)
					os.Exit(2)
				}
				mu.Lock()
				crashtest.Ack(id)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Minute) // the parent kills us long before
	os.Exit(3)
}

var _ FlushCommitter = (*objectCommitter)(nil)
