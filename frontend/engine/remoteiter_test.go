package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/storage"
)

// memPeer is a scanner over sorted entries that answers scans in pages
// of size entries, counting them.
type memPeer struct {
	entries []storage.Entry
	size    int
	scans   int
	mark    uint64 // every page's commit mark
}

func (m *memPeer) Scan(_ context.Context, r rpc.ScanRequest) (*rpc.Page, error) {
	m.scans++
	i := sort.Search(len(m.entries), func(i int) bool { return bytes.Compare(m.entries[i].Key, r.Lower) >= 0 })
	p := &rpc.Page{Mark: m.mark}
	for ; i < len(m.entries) && (r.Upper == nil || bytes.Compare(m.entries[i].Key, r.Upper) < 0); i++ {
		if len(p.Entries) == m.size {
			p.Next = m.entries[i].Key
			break
		}
		p.Entries = append(p.Entries, m.entries[i])
	}
	return p, nil
}

// TestRemoteIterMatchesModel walks random moves over two peers' segments,
// paged two entries at a time, against the same entries in memory.
func TestRemoteIterMatchesModel(t *testing.T) {
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var a, b []storage.Entry
		for i := range 60 {
			if rng.IntN(3) == 0 {
				continue
			}
			e := storage.Entry{Key: key(i), Value: []byte{byte(i)}}
			if i < 30 {
				a = append(a, e)
			} else {
				b = append(b, e)
			}
		}
		pa, pb := &memPeer{entries: a, size: 2}, &memPeer{entries: b, size: 2}
		segs := []segment{{c: pa, lo: key(5), hi: key(30)}, {c: pb, lo: key(30), hi: nil}}
		var want []storage.Entry
		for _, e := range append(append([]storage.Entry(nil), a...), b...) {
			if bytes.Compare(e.Key, key(5)) >= 0 {
				want = append(want, e)
			}
		}
		it := &remoteIter{ctx: context.Background(), segs: segs}
		model := &pageIter{entries: want, i: -1}
		if it.First() != model.First() {
			t.Fatalf("round %d: First disagrees", round)
		}
		for step := range 30 {
			var op string
			var got, exp bool
			switch k := key(rng.IntN(64)); rng.IntN(10) {
			case 0, 1:
				op, got, exp = fmt.Sprintf("SeekGE(%s)", k), it.SeekGE(k), model.SeekGE(k)
			case 2:
				op, got, exp = "First", it.First(), model.First()
			case 3:
				if round%4 != 0 {
					continue // most rounds stay forward, as scans do
				}
				switch rng.IntN(3) {
				case 0:
					op, got, exp = fmt.Sprintf("SeekLT(%s)", k), it.SeekLT(k), model.SeekLT(k)
				case 1:
					op, got, exp = "Last", it.Last(), model.Last()
				default:
					op, got, exp = "Prev", it.Prev(), model.Prev()
				}
			default:
				op, got, exp = "Next", it.Next(), model.Next()
			}
			if got != exp {
				t.Fatalf("round %d step %d %s: %v, want %v", round, step, op, got, exp)
			}
			if got && !bytes.Equal(it.Key(), model.Key()) {
				t.Fatalf("round %d step %d %s: at %s, want %s", round, step, op, it.Key(), model.Key())
			}
			if err := it.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRemoteIterFetchesByPage checks that a forward walk that stops early
// asks for no more pages than it used.
func TestRemoteIterFetchesByPage(t *testing.T) {
	var es []storage.Entry
	for i := range 100 {
		es = append(es, storage.Entry{Key: []byte(fmt.Sprintf("k%03d", i))})
	}
	p := &memPeer{entries: es, size: 10}
	it := &remoteIter{ctx: context.Background(), segs: []segment{{c: p, lo: []byte("k")}}}
	n := 0
	for ok := it.SeekGE([]byte("k010")); ok && n < 15; ok = it.Next() {
		n++
	}
	if p.scans != 2 {
		t.Fatalf("%d scans for 15 entries in pages of 10", p.scans)
	}
	// A peer's error stops the walk and is reported.
	bad := &pages{{Entries: []storage.Entry{{Key: []byte("b")}, {Key: []byte("a")}}}}
	it = &remoteIter{ctx: context.Background(), segs: []segment{{c: bad, lo: []byte("a")}}}
	if it.First() || it.Error() == nil {
		t.Fatalf("bad page: First succeeded or no error (%v)", it.Error())
	}
}

// TestRemoteIterMarks: a primed iterator knows its first page's mark and
// reuses that page for First; a later page whose mark passed the pinned
// revision fails, retriably, rather than miss what its node dropped.
func TestRemoteIterMarks(t *testing.T) {
	var es []storage.Entry
	for i := range 6 {
		es = append(es, storage.Entry{Key: []byte(fmt.Sprintf("k%d", i))})
	}
	peer := &memPeer{entries: es, size: 2, mark: 7}
	it := &remoteIter{ctx: context.Background(), table: 1, segs: []segment{{c: peer, lo: []byte("k")}}}
	if err := it.prime(); err != nil || it.mark() != 7 {
		t.Fatalf("prime: mark %d, err %v", it.mark(), err)
	}
	it.pin(7)
	if !it.First() || string(it.Key()) != "k0" || peer.scans != 1 {
		t.Fatalf("First after prime: %d scans", peer.scans)
	}
	if !it.Next() || !it.Next() || string(it.Key()) != "k2" {
		t.Fatal("second page at the pinned mark")
	}
	peer.mark = 8
	for it.Next() {
	}
	if err := it.Error(); !errors.Is(err, storage.ErrFlushRaced) || !storage.Retriable(err) {
		t.Fatalf("page past the pinned mark: %v", err)
	}
	// Moving back after the first page fetches every page again, checked too.
	peer.mark = 7
	it = &remoteIter{ctx: context.Background(), table: 1, segs: []segment{{c: peer, lo: []byte("k")}}}
	it.pin(6)
	if it.Last() || !errors.Is(it.Error(), storage.ErrFlushRaced) {
		t.Fatalf("Last past the pinned mark: %v", it.Error())
	}
}

// TestRetryRaced: a read that a flush raced starts again, a bounded number
// of times; other errors and a done context stop it at once.
func TestRetryRaced(t *testing.T) {
	raced := func(n int) (func() (int, error), *int) {
		calls := 0
		return func() (int, error) {
			calls++
			if calls <= n {
				return 0, storage.ErrFlushRaced
			}
			return calls, nil
		}, &calls
	}
	ctx := context.Background()
	read, calls := raced(3)
	if v, err := retryRaced(ctx, read); err != nil || v != 4 || *calls != 4 {
		t.Fatalf("3 races: %d, %v after %d calls", v, err, *calls)
	}
	read, calls = raced(100)
	if _, err := retryRaced(ctx, read); !errors.Is(err, storage.ErrFlushRaced) || *calls != raceRetries+1 {
		t.Fatalf("endless races: %v after %d calls", err, *calls)
	}
	other := errors.New("other")
	n := 0
	if _, err := retryRaced(ctx, func() (int, error) { n++; return 0, other }); err != other || n != 1 {
		t.Fatalf("other error: %v after %d calls", err, n)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	read, calls = raced(100)
	if _, err := retryRaced(done, read); !errors.Is(err, storage.ErrFlushRaced) || *calls != 1 {
		t.Fatalf("done context: %v after %d calls", err, *calls)
	}
}
