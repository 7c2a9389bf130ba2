package engine

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
)

// scanner is the part of rpc.Handler that reads memtables.
type scanner interface {
	Scan(ctx context.Context, r rpc.ScanRequest) (*rpc.Page, error)
}

var _ scanner = (*rpc.Client)(nil)

// segment is a key span [lo, hi) (hi nil: open) of one peer's memtables.
type segment struct {
	c      scanner
	lo, hi []byte
}

// remoteIter iterates the memtable entries of segments, in key order. Going
// forward (SeekGE, First, Next) it asks for one page at a time; the first
// move backward (SeekLT, Last, Prev) fetches every page and walks them in
// memory from then on.
type remoteIter struct {
	ctx   context.Context
	table storage.TableID
	segs  []segment

	all *pageIter // set once every page is fetched

	// Forward: the page held, from segment seg, and the request of the
	// page after it (more false: the segment ends with this page).
	seg  int
	page []storage.Entry
	i    int
	req  rpc.ScanRequest
	more bool
	err  error

	// primed: the state is First's, loaded by prime, and unused yet.
	primed bool
	// maxMark is the highest commit mark of the pages fetched; pinned,
	// once set, the sstables revision of the SSTables merged with them.
	maxMark, pinned uint64
	isPinned        bool
}

var (
	_ kv.Iterator = (*remoteIter)(nil)
	_ marked      = (*remoteIter)(nil)
)

func (it *remoteIter) mark() uint64 { return it.maxMark }

func (it *remoteIter) pin(rev uint64) { it.pinned, it.isPinned = rev, true }

// noteMark records a page's commit mark, failing once past the pinned
// revision: the page may lack entries its node dropped after a flush that
// the merged SSTables do not list.
func (it *remoteIter) noteMark(m uint64) error {
	it.maxMark = max(it.maxMark, m)
	if it.isPinned && m > it.pinned {
		return fmt.Errorf("%w: page mark %d, SSTables of revision %d", storage.ErrFlushRaced, m, it.pinned)
	}
	return nil
}

// prime positions the iterator as First would, to learn the first page's
// mark; a First or SeekGE at or before the start then keeps that state.
func (it *remoteIter) prime() error {
	if len(it.segs) == 0 {
		return nil
	}
	it.SeekGE(it.segs[0].lo)
	it.primed = it.err == nil
	return it.err
}

// loadAll fetches every page and switches to walking them in memory.
func (it *remoteIter) loadAll() error {
	it.primed = false
	var entries []storage.Entry
	for _, s := range it.segs {
		var err error
		var m uint64
		entries, m, err = fetch(it.ctx, s.c, it.table, s.lo, s.hi, entries)
		if err == nil {
			err = it.noteMark(m)
		}
		if err != nil {
			it.err = err
			return err
		}
	}
	it.all = &pageIter{entries: entries, i: -1}
	return nil
}

// backward switches to walking every page in memory, if it has not.
func (it *remoteIter) backward() bool {
	return it.all != nil || (it.err == nil && it.loadAll() == nil)
}

// load asks for the page of it.req from segment it.seg.
func (it *remoteIter) load() bool {
	s := it.segs[it.seg]
	p, err := s.c.Scan(it.ctx, it.req)
	if err == nil {
		err = checkPage(p, it.req, s.hi)
	}
	if err == nil {
		err = it.noteMark(p.Mark)
	}
	if err != nil {
		it.err, it.page = err, nil
		return false
	}
	it.page, it.i = p.Entries, 0
	it.more = p.Next != nil
	if it.more {
		it.req = it.req.Resume(p)
	}
	return true
}

// settle moves on from an exhausted page to the next non-empty one.
func (it *remoteIter) settle() bool {
	for it.i >= len(it.page) {
		switch {
		case it.err != nil:
			return false
		case it.more:
		case it.seg+1 < len(it.segs):
			it.seg++
			s := it.segs[it.seg]
			it.req = rpc.ScanRequest{Table: it.table, Lower: s.lo, Upper: s.hi}
		default:
			return false
		}
		if !it.load() {
			return false
		}
	}
	return true
}

func (it *remoteIter) SeekGE(key []byte) bool {
	if it.all != nil {
		return it.all.SeekGE(key)
	}
	if it.err != nil {
		return false
	}
	if it.primed && bytes.Compare(key, it.segs[0].lo) <= 0 {
		it.primed = false
		return it.i < len(it.page)
	}
	it.primed = false
	it.page, it.i, it.more = nil, 0, false
	for it.seg = 0; it.seg < len(it.segs); it.seg++ {
		s := it.segs[it.seg]
		if s.hi == nil || bytes.Compare(key, s.hi) < 0 {
			lo := s.lo
			if bytes.Compare(key, lo) > 0 {
				lo = key
			}
			it.req = rpc.ScanRequest{Table: it.table, Lower: lo, Upper: s.hi}
			return it.load() && it.settle()
		}
	}
	return false
}

func (it *remoteIter) First() bool {
	if it.all != nil {
		return it.all.First()
	}
	if len(it.segs) == 0 {
		return false
	}
	return it.SeekGE(it.segs[0].lo)
}

func (it *remoteIter) Next() bool {
	it.primed = false
	if it.all != nil {
		return it.all.Next()
	}
	if it.i >= len(it.page) {
		return false
	}
	it.i++
	return it.settle()
}

func (it *remoteIter) SeekLT(key []byte) bool { return it.backward() && it.all.SeekLT(key) }
func (it *remoteIter) Last() bool             { return it.backward() && it.all.Last() }

func (it *remoteIter) Prev() bool {
	it.primed = false
	if it.all != nil {
		return it.all.Prev()
	}
	if it.i >= len(it.page) {
		return it.backward() && it.all.Last()
	}
	key := it.page[it.i].Key
	return it.backward() && it.all.SeekLT(key)
}

func (it *remoteIter) Key() []byte {
	if it.all != nil {
		return it.all.Key()
	}
	return it.page[it.i].Key
}

func (it *remoteIter) Value() []byte {
	if it.all != nil {
		return it.all.Value()
	}
	return it.page[it.i].Value
}

func (it *remoteIter) Error() error { return it.err }
func (it *remoteIter) Close() error { return nil }

// checkPage checks a memtable page a peer answered to req, in the segment
// ending at hi: its keys must be in order, at or after req.Lower and before
// hi, and its resume key must move on, since merges and resumes rely on
// all of that.
func checkPage(p *rpc.Page, req rpc.ScanRequest, hi []byte) error {
	prev := req.Lower
	for i, e := range p.Entries {
		if c := bytes.Compare(e.Key, prev); c < 0 || (c == 0 && i > 0) || (hi != nil && bytes.Compare(e.Key, hi) >= 0) {
			return fmt.Errorf("%w: memtable page out of order or bounds at key %x", rpc.ErrProtocol, e.Key)
		}
		prev = e.Key
	}
	if p.Next != nil && bytes.Compare(p.Next, prev) <= 0 {
		return fmt.Errorf("%w: memtable page does not advance", rpc.ErrProtocol)
	}
	return nil
}
