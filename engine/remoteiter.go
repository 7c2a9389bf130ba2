package engine

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/kv"
	"github.com/sedimentdb/sediment/rpc"
)

// segment is a key span [lo, hi) (hi nil: open) of one peer's memtables.
type segment struct {
	c      rpc.Handler
	lo, hi []byte
}

// remoteIter iterates the memtable entries of segments, in key order. Going
// forward (SeekGE, First, Next) it asks for one page at a time; the first
// move backward (SeekLT, Last, Prev) fetches every page and walks them in
// memory from then on.
type remoteIter struct {
	ctx   context.Context
	table ingest.TableID
	segs  []segment

	all *pageIter // set once every page is fetched

	// Forward: the page held, from segment seg, and the request of the
	// page after it (more false: the segment ends with this page).
	seg  int
	page []ingest.Entry
	i    int
	req  rpc.ScanRequest
	more bool
	err  error
}

var _ kv.Iterator = (*remoteIter)(nil)

// loadAll fetches every page and switches to walking them in memory.
func (it *remoteIter) loadAll() error {
	var entries []ingest.Entry
	for _, s := range it.segs {
		var err error
		if entries, err = fetch(it.ctx, s.c, it.table, s.lo, s.hi, entries); err != nil {
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
