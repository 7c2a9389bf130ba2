package ingest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
)

// TestBackpressure fails every upload: flushes retry, memtables fill to the
// memory limit, writes wait and then fail with storage.ErrOverloaded. When the
// bucket recovers, flushes resume by themselves, writes succeed again and
// every acknowledged write is readable.
func TestBackpressure(t *testing.T) {
	e := newEnv(t)
	e.cfg.WriteTimeout = 50 * time.Millisecond
	s := e.open()
	defer s.Close()
	ctx := context.Background()
	e.faults.Inject(faultstore.Rule{Op: faultstore.OpWriter, Err: errors.New("bucket down")})

	acked := map[string]string{}
	val := string(make([]byte, 200))
	i := 0
	write := func() error {
		m := rowMutation(1, "p"+strconv.Itoa(i%100), int64(i), 1, val+strconv.Itoa(i))
		err := s.Apply(ctx, m)
		if err == nil {
			acked[string(m.Entries[0].Key)] = val + strconv.Itoa(i)
		}
		i++
		return err
	}
	var err error
	for err == nil {
		err = write()
		if mem := s.memory(); mem > e.cfg.MemoryLimit+64<<10 {
			t.Fatalf("memtables use %d bytes, limit %d", mem, e.cfg.MemoryLimit)
		}
	}
	if !errors.Is(err, storage.ErrOverloaded) {
		t.Fatalf("write failed with %v, want ErrOverloaded", err)
	}
	if counterValue(s.m.flushFailures) == 0 || counterValue(s.m.flushes) != 0 {
		t.Fatalf("%v failed and %v good flushes while the bucket is down", counterValue(s.m.flushFailures), counterValue(s.m.flushes))
	}
	// Overloaded writes were not applied.
	if got := contents(t, s, e.committer, 1); len(got) != len(acked) {
		t.Fatalf("%d rows readable, %d acknowledged", len(got), len(acked))
	}

	e.faults.Reset()
	testwait.For(t, "writes to resume", func() bool { return write() == nil })
	testwait.For(t, "flushes to drain", func() bool { return s.flushing() == 0 && counterValue(s.m.flushes) > 0 })
	for range 100 {
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	got := contents(t, s, e.committer, 1)
	for k, v := range acked {
		if got[k] != v {
			t.Fatalf("acknowledged row %x lost", k)
		}
	}
	if len(got) != len(acked) {
		t.Fatalf("%d rows readable, %d acknowledged", len(got), len(acked))
	}
}
