package bulk

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// The loader sorts the entries of its rows by storage key, in bounded
// memory: a sorter buffers entries up to its share of the memory budget,
// sorts them and spills them to a run file, and the merge streams every
// run in key order, merging the values of a key written more than once
// (model.Merge, so a row loaded twice reconciles as two writes would).
//
// A run file is a sequence of entries:
//
//	uvarint  key length
//	bytes    key
//	uvarint  value length
//	bytes    value

type entry struct{ key, value []byte }

// entryOverhead approximates the memory of an entry beyond its bytes.
const entryOverhead = 64

// sorter collects the entries of one worker.
type sorter struct {
	fs    vfs.FS
	dir   string
	name  string // run file prefix
	limit int64
	buf   []entry
	size  int64
	runs  []string
	// spilled counts the bytes written to run files.
	spilled int64
}

func newSorter(fs vfs.FS, dir, name string, limit int64) *sorter {
	return &sorter{fs: fs, dir: dir, name: name, limit: limit}
}

// add takes an entry; it keeps key and value, which must not change after.
func (s *sorter) add(key, value []byte) error {
	s.buf = append(s.buf, entry{key, value})
	s.size += int64(len(key)+len(value)) + entryOverhead
	if s.size >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *sorter) sortBuf() {
	// Not stable: the values of one key are merged, which commutes.
	slices.SortFunc(s.buf, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
}

// spill writes the buffer as a sorted run.
func (s *sorter) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	s.sortBuf()
	name := filepath.Join(s.dir, fmt.Sprintf("%s-%06d.run", s.name, len(s.runs)))
	n, err := writeRun(s.fs, name, func(emit func(key, value []byte) error) error {
		for _, e := range s.buf {
			if err := emit(e.key, e.value); err != nil {
				return err
			}
		}
		return nil
	})
	s.spilled += n
	if err != nil {
		return err
	}
	s.runs = append(s.runs, name)
	clear(s.buf)
	s.buf, s.size = s.buf[:0], 0
	return nil
}

// writeRun writes the run file name with the entries fill emits, in key
// order, and returns its size.
func writeRun(fs vfs.FS, name string, fill func(emit func(key, value []byte) error) error) (int64, error) {
	f, err := fs.Create(name)
	if err != nil {
		return 0, fmt.Errorf("bulk: spill: %w", err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	var (
		hdr [binary.MaxVarintLen64]byte
		n   int64
	)
	err = fill(func(key, value []byte) error {
		for _, b := range [][]byte{key, value} {
			k := binary.PutUvarint(hdr[:], uint64(len(b)))
			w.Write(hdr[:k])
			w.Write(b)
			n += int64(k + len(b))
		}
		return nil
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("bulk: spill %s: %w", name, err)
	}
	return n, nil
}

// maxFanIn bounds the sources one merge reads at once, each an open file
// with a read buffer.
const maxFanIn = 64

// reduce merges sources into run files under dir, fanIn at a time, until
// at most fanIn remain, so that a load with many runs keeps few files open.
func reduce(fs vfs.FS, dir string, srcs []source, fanIn int) ([]source, error) {
	for pass := 0; len(srcs) > fanIn; pass++ {
		name := filepath.Join(dir, fmt.Sprintf("merged-%06d.run", pass))
		group := srcs[:fanIn]
		_, err := writeRun(fs, name, func(emit func(key, value []byte) error) error {
			return merge(group, emit)
		})
		if err != nil {
			for _, s := range srcs[fanIn:] {
				s.close()
			}
			return nil, err
		}
		f, err := fs.Open(name)
		if err != nil {
			for _, s := range srcs[fanIn:] {
				s.close()
			}
			return nil, fmt.Errorf("bulk: open run: %w", err)
		}
		srcs = append(srcs[fanIn:], &runSource{f: f, r: bufio.NewReaderSize(f, 64<<10), name: name})
	}
	return srcs, nil
}

// remove deletes the run files.
func (s *sorter) remove() {
	for _, r := range s.runs {
		_ = s.fs.Remove(r) // temporary files: a leftover costs disk only
	}
	s.runs = nil
}

// source is one sorted stream of entries.
type source interface {
	// next returns the next entry, or false at the end.
	next() (entry, bool, error)
	close()
}

type memSource struct{ es []entry }

func (m *memSource) next() (entry, bool, error) {
	if len(m.es) == 0 {
		return entry{}, false, nil
	}
	e := m.es[0]
	m.es = m.es[1:]
	return e, true, nil
}
func (m *memSource) close() {}

type runSource struct {
	f    vfs.File
	r    *bufio.Reader
	name string
}

func (r *runSource) next() (entry, bool, error) {
	var e entry
	for i, dst := range []*[]byte{&e.key, &e.value} {
		n, err := binary.ReadUvarint(r.r)
		if err == io.EOF && i == 0 {
			return entry{}, false, nil
		}
		if err != nil {
			return entry{}, false, fmt.Errorf("bulk: run %s: %w", r.name, err)
		}
		*dst = make([]byte, n)
		if _, err := io.ReadFull(r.r, *dst); err != nil {
			return entry{}, false, fmt.Errorf("bulk: run %s: %w", r.name, err)
		}
	}
	return e, true, nil
}
func (r *runSource) close() { r.f.Close() }

// sources returns the sorter's sorted streams: its runs and its buffer.
func (s *sorter) sources() ([]source, error) {
	var out []source
	for _, name := range s.runs {
		f, err := s.fs.Open(name)
		if err != nil {
			for _, o := range out {
				o.close()
			}
			return nil, fmt.Errorf("bulk: open run: %w", err)
		}
		out = append(out, &runSource{f: f, r: bufio.NewReaderSize(f, 64<<10), name: name})
	}
	s.sortBuf()
	return append(out, &memSource{es: s.buf}), nil
}

// mergeHeap orders the heads of the sources by key, then by source.
type mergeHeap struct {
	heads []entry
	srcs  []int
	all   []source
}

func (h *mergeHeap) Len() int { return len(h.heads) }
func (h *mergeHeap) Less(i, j int) bool {
	if c := bytes.Compare(h.heads[i].key, h.heads[j].key); c != 0 {
		return c < 0
	}
	return h.srcs[i] < h.srcs[j]
}
func (h *mergeHeap) Swap(i, j int) {
	h.heads[i], h.heads[j] = h.heads[j], h.heads[i]
	h.srcs[i], h.srcs[j] = h.srcs[j], h.srcs[i]
}
func (h *mergeHeap) Push(x any) { panic("bulk: mergeHeap grows only in merge") }
func (h *mergeHeap) Pop() any {
	n := len(h.heads) - 1
	h.heads, h.srcs = h.heads[:n], h.srcs[:n]
	return nil
}

// merge calls fn with every key of the sources once, in key order, its
// values merged.
func merge(srcs []source, fn func(key, value []byte) error) error {
	defer func() {
		for _, s := range srcs {
			s.close()
		}
	}()
	h := &mergeHeap{all: srcs}
	for i, s := range srcs {
		e, ok, err := s.next()
		if err != nil {
			return err
		}
		if ok {
			h.heads, h.srcs = append(h.heads, e), append(h.srcs, i)
		}
	}
	heap.Init(h)
	advance := func() error {
		e, ok, err := srcs[h.srcs[0]].next()
		if err != nil {
			return err
		}
		if ok {
			h.heads[0] = e
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
		return nil
	}
	for h.Len() > 0 {
		cur := h.heads[0]
		if err := advance(); err != nil {
			return err
		}
		for h.Len() > 0 && bytes.Equal(h.heads[0].key, cur.key) {
			v, err := model.Merge(nil, cur.value, h.heads[0].value)
			if err != nil {
				return fmt.Errorf("bulk: merge %x: %w", cur.key, err)
			}
			cur.value = v
			if err := advance(); err != nil {
				return err
			}
		}
		if err := fn(cur.key, cur.value); err != nil {
			return err
		}
	}
	return nil
}
