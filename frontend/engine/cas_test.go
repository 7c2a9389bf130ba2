package engine

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
)

// notExists is the condition of INSERT ... IF NOT EXISTS on row ck.
func notExists(t testing.TB, ck int64) Condition {
	return func(p *Partition) (bool, error) {
		cks, _ := values(t, p)
		for _, c := range cks {
			if c == ck {
				return false, nil
			}
		}
		return true, nil
	}
}

// valueOf returns row ck's v in pk as e reads it, "" if there is none.
func (c *cluster) valueOf(e Engine, pk string, ck int64) string {
	c.t.Helper()
	p, err := e.Read(c.ctx, Slice{Table: c.table, Key: []byte(pk), Now: 100})
	if err != nil {
		c.t.Fatal(err)
	}
	cks, vs := values(c.t, p)
	for i, k := range cks {
		if k == ck {
			return vs[i]
		}
	}
	return ""
}

func TestRemoteApplyIfNotExists(t *testing.T) {
	c := newCluster(t)
	for _, owner := range []int{0, 1} {
		pk := pksOf(owner, 1)[0]
		// Something in an SSTable and in a memtable already, so that the
		// digest covers a merge of both.
		for i, e := range []Entry{insert(pk, 5, 1, "old", 0, 100), insert(pk, 6, 1, "new", 0, 100)} {
			if err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{e}}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := c.nodes[owner].Flush(c.ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		ok, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 10, "first", 0, 100)}}, 100, notExists(t, 1))
		if !ok || err != nil {
			t.Fatalf("first insert if not exists: %v, %v", ok, err)
		}
		ok, err = c.remotes[1].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 20, "second", 0, 100)}}, 100, notExists(t, 1))
		if ok || err != nil {
			t.Fatalf("second insert if not exists: %v, %v, want false", ok, err)
		}
		if got := c.valueOf(c.remotes[1], pk, 1); got != "first" {
			t.Fatalf("row holds %q, want the first insert's", got)
		}
	}
}

// TestRemoteApplyIfCounter increments one counter from several writers
// through two frontends, each a read, then a write of the value plus one on
// the condition that the value is still the one read. The counter ends at
// the number of successful writes: none was lost to a concurrent one.
func TestRemoteApplyIfCounter(t *testing.T) {
	c := newCluster(t)
	pk := pksOf(1, 1)[0]
	const writers, each = 4, 8
	var applied, conflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		e := c.remotes[w%2]
		wg.Go(func() {
			for done := 0; done < each; {
				p, err := e.Read(c.ctx, Slice{Table: c.table, Key: []byte(pk), Now: 100})
				if err != nil {
					errs <- err
					return
				}
				v := int64(0)
				if _, vs := values(t, p); len(vs) == 1 {
					if v, err = strconv.ParseInt(vs[0], 10, 64); err != nil {
						errs <- err
						return
					}
				}
				// The value is its own timestamp: each new value wins.
				m := &Mutation{Table: c.table, Entries: []Entry{insert(pk, 0, v+1, strconv.FormatInt(v+1, 10), 0, 100)}}
				ok, err := e.ApplyIf(c.ctx, m, 100, func(p *Partition) (bool, error) {
					_, vs := values(t, p)
					cur := "0"
					if len(vs) == 1 {
						cur = vs[0]
					}
					return cur == strconv.FormatInt(v, 10), nil
				})
				switch {
				case errors.Is(err, ErrContended):
					conflicts.Add(1)
				case err != nil:
					errs <- err
					return
				case ok:
					applied.Add(1)
					done++
				default:
					conflicts.Add(1)
				}
			}
		})
	}
	testwait.Wait(t, "the conditional writers", &wg)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := c.valueOf(c.remotes[0], pk, 0)
	if want := strconv.FormatInt(applied.Load(), 10); got != want || applied.Load() != writers*each {
		t.Fatalf("counter at %s after %d successful increments (want %d), %d conflicts", got, applied.Load(), writers*each, conflicts.Load())
	}
	t.Logf("%d increments, %d lost races", applied.Load(), conflicts.Load())
}

// TestRemoteApplyIfFlushBetween flushes the partition into an SSTable
// between the frontend's read and its write: the digest, over the merged
// entries, does not change, so the first attempt applies.
func TestRemoteApplyIfFlushBetween(t *testing.T) {
	c := newCluster(t)
	pk := pksOf(0, 1)[0]
	n := c.nodes[ownerOf(pk)]
	if err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "a", 0, 100)}}); err != nil {
		t.Fatal(err)
	}
	if err := n.Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	// The same row again, newer, and a partition deletion older than
	// both: the merge of memtable and SSTable is not a plain union.
	for _, e := range []Entry{insert(pk, 1, 3, "b", 0, 100), deletePartition(pk, 0, 100), setStatic(pk, 2, "s")} {
		if err := c.remotes[0].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{e}}); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	ok, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 2, 5, "c", 0, 100)}}, 100, func(p *Partition) (bool, error) {
		calls++
		if calls == 1 {
			if err := n.Flush(c.ctx); err != nil {
				return false, err
			}
			it := n.NewIter(storage.TableIDOf(c.table), nil, nil)
			defer it.Close()
			if it.First() {
				t.Error("the flush left the partition in a memtable")
			}
		}
		return notExists(t, 2)(p)
	})
	if !ok || err != nil || calls != 1 {
		t.Fatalf("applied %v, %v after %d attempts, want applied at the first", ok, err, calls)
	}
	if got := c.valueOf(c.remotes[1], pk, 2); got != "c" {
		t.Fatalf("row 2 holds %q", got)
	}
}

// TestRemoteApplyIfConflictRereads: a write landing between the read and
// the conditional write makes the node refuse it; the next attempt reads
// the write and decides again.
func TestRemoteApplyIfConflictRereads(t *testing.T) {
	c := newCluster(t)
	pk := pksOf(1, 1)[0]
	calls := 0
	ok, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 5, "mine", 0, 100)}}, 100, func(p *Partition) (bool, error) {
		calls++
		if calls == 1 {
			// Another frontend inserts the row meanwhile.
			if err := c.remotes[1].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "theirs", 0, 100)}}); err != nil {
				return false, err
			}
		}
		return notExists(t, 1)(p)
	})
	if ok || err != nil || calls != 2 {
		t.Fatalf("applied %v, %v after %d attempts, want refused at the second", ok, err, calls)
	}
	if got := c.valueOf(c.remotes[0], pk, 1); got != "theirs" {
		t.Fatalf("row holds %q", got)
	}
	// A condition's error ends ApplyIf.
	boom := errors.New("boom")
	if _, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 2, 5, "x", 0, 100)}}, 100,
		func(*Partition) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Fatalf("condition error: %v", err)
	}
}

// TestRemoteApplyIfContended: a partition that changes between every read
// and its write exhausts the attempts.
func TestRemoteApplyIfContended(t *testing.T) {
	c := newCluster(t)
	pk := pksOf(0, 1)[0]
	calls := 0
	ok, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "x", 0, 100)}}, 100, func(p *Partition) (bool, error) {
		calls++
		err := c.remotes[1].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, int64(100+calls), 1, "y", 0, 100)}})
		return err == nil, err
	})
	if ok || !errors.Is(err, ErrContended) || !errors.Is(err, storage.ErrOverloaded) || calls != casAttempts {
		t.Fatalf("applied %v, %v after %d attempts, want ErrContended after %d", ok, err, calls, casAttempts)
	}
	if got := c.valueOf(c.remotes[0], pk, 1); got != "" {
		t.Fatalf("contended write applied: %q", got)
	}
	// The context bounds the retries too.
	ctx, cancel := context.WithCancel(c.ctx)
	ok, err = c.remotes[0].ApplyIf(ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 1, 1, "x", 0, 100)}}, 100, func(p *Partition) (bool, error) {
		cancel()
		err := c.remotes[1].Apply(c.ctx, &Mutation{Table: c.table, Entries: []Entry{insert(pk, 99, 1, "y", 0, 100)}})
		return err == nil, err
	})
	if ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, %v", ok, err)
	}
}

func TestRemoteApplyIfInvalid(t *testing.T) {
	c := newCluster(t)
	yes := func(*Partition) (bool, error) { return true, nil }
	a, b := pksOf(0, 1)[0], pksOf(1, 1)[0]
	for name, m := range map[string]*Mutation{
		"nil":            nil,
		"no entries":     {Table: c.table},
		"bad key":        {Table: c.table, Entries: []Entry{{Key: []byte{1}}}},
		"two partitions": {Table: c.table, Entries: []Entry{insert(a, 1, 1, "x", 0, 100), insert(b, 1, 1, "x", 0, 100)}},
	} {
		if ok, err := c.remotes[0].ApplyIf(c.ctx, m, 100, yes); ok || !errors.Is(err, storage.ErrInvalidMutation) {
			t.Errorf("%s: %v, %v, want ErrInvalidMutation", name, ok, err)
		}
	}
	// The node refuses what it cannot apply, over the hop too.
	ok, err := c.remotes[0].ApplyIf(c.ctx, &Mutation{Table: c.table, Entries: []Entry{{Key: rowKey(a, 1), Value: []byte{0xff}}}}, 100, yes)
	if ok || !errors.Is(err, storage.ErrInvalidMutation) || !errors.As(err, new(*rpc.Error)) {
		t.Fatalf("malformed value: %v, %v", ok, err)
	}
}
