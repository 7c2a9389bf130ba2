package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
)

// TestReadSeesAcknowledgedWrites reads while writes go on and memtables are
// flushed underneath: every read must see every write acknowledged before it
// started, whichever side of a flush it is on, even with a View that learns
// of flushes late.
func TestReadSeesAcknowledgedWrites(t *testing.T) {
	te := newEnvWith(t, envOptions{memtableSize: 64 << 10, lag: 20 * time.Millisecond}) // flushes every few hundred rows
	now := time.Now().Unix()
	const parts = 4
	rows := 1500
	if testing.Short() {
		rows = 500
	}
	var acked [parts]atomic.Int64 // rows 0..acked-1 of partition p are acknowledged
	ctx, cancel := context.WithCancel(te.ctx)
	defer cancel()
	value := fmt.Sprintf("%0200d", 0)

	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			pk := "c" + strconv.Itoa(p)
			for i := range int64(rows) {
				if err := te.e.Apply(ctx, &Mutation{Table: te.table, Entries: []Entry{insert(pk, i, 1, value, 0, now)}}); err != nil {
					t.Error(err)
					return
				}
				acked[p].Store(i + 1)
			}
		})
	}
	errs := make(chan error, 1)
	var reads atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := 0; ; p = (p + 1) % parts {
			n := acked[p].Load()
			if n == int64(rows) && acked[(p+1)%parts].Load() == int64(rows) {
				return
			}
			pk := "c" + strconv.Itoa(p)
			part, err := te.e.Read(ctx, Slice{Table: te.table, Key: []byte(pk), Now: now})
			if err == nil && int64(len(part.Rows)) < n {
				err = fmt.Errorf("read of %s found %d rows, %d were acknowledged before it", pk, len(part.Rows), n)
			}
			if err != nil {
				errs <- err
				return
			}
			reads.Add(1)
		}
	}()
	testwait.Wait(t, "the writers", &wg)
	testwait.Recv(t, "the reader", done)
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if ssts := len(te.view.SSTables(te.table)); ssts == 0 {
		t.Fatal("no flush happened during the test")
	}
	t.Logf("%d reads, %d SSTables", reads.Load(), len(te.view.SSTables(te.table)))
}
