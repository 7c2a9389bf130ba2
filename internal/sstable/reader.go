package sstable

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// ReaderAt reads a table's bytes, typically with ranged GETs of an object.
// Like io.ReaderAt, it returns an error when it reads fewer than len(p) bytes.
type ReaderAt interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// FromReaderAt adapts an io.ReaderAt, such as a local file or a
// bytes.Reader, to ReaderAt.
func FromReaderAt(r io.ReaderAt) ReaderAt { return ioReaderAt{r} }

type ioReaderAt struct{ r io.ReaderAt }

var _ ReaderAt = ioReaderAt{}

func (r ioReaderAt) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.ReadAt(p, off)
}

// DefaultTailSize is how much of a table's end Open reads at first. The
// filter dominates the metadata (10 bits per partition), so 256 KiB covers
// tables of about 200k partitions in one ranged read, which costs no more
// requests than a smaller one.
const DefaultTailSize = 256 << 10

// ReaderOptions configure a Reader. The zero value is usable.
type ReaderOptions struct {
	// TailSize is the size of Open's first read; a second read fetches the
	// rest of the metadata when it is larger.
	TailSize int
	// Split, when set, must be the writer's; Get then skips tables whose
	// filter excludes the key's partition.
	Split func(key []byte) int
}

// ReadStats count a Reader's reads of data blocks.
type ReadStats struct {
	BlockReads uint64 // data blocks fetched
	BlockBytes uint64 // their stored bytes
}

// Reader reads a table. It keeps the index, the filter and the properties in
// memory and fetches data blocks on demand. It is safe for concurrent use.
type Reader struct {
	r     ReaderAt
	size  int64
	opts  ReaderOptions
	props *Properties

	filter    bloomFilter
	hasFilter bool

	// The block index: separator i is seps[sepEnds[i-1]:sepEnds[i]].
	seps    []byte
	sepEnds []int
	handles []blockHandle

	blockReads, blockBytes atomic.Uint64
	getState               sync.Pool // *getState
}

// Open reads the footer and metadata of a table of the given size.
func Open(ctx context.Context, r ReaderAt, size int64, opts ReaderOptions) (*Reader, error) {
	if opts.TailSize <= 0 {
		opts.TailSize = DefaultTailSize
	}
	if size < footerLen {
		return nil, fmt.Errorf("%w: %d bytes is too small for a table", ErrCorrupt, size)
	}
	tailLen := min(size, int64(max(opts.TailSize, footerLen)))
	tail := make([]byte, tailLen)
	if err := readFull(ctx, r, tail, size-tailLen); err != nil {
		return nil, err
	}
	f, err := decodeFooter(tail[tailLen-footerLen:], size)
	if err != nil {
		return nil, err
	}
	// meta holds the metadata blocks, which end where the footer starts.
	metaStart := int64(f.index.offset)
	if size-footerLen-metaStart > maxDecodedLen {
		return nil, fmt.Errorf("%w: %d bytes of metadata", ErrCorrupt, size-footerLen-metaStart)
	}
	meta := tail[:tailLen-footerLen]
	if tailStart := size - tailLen; metaStart < tailStart {
		buf := make([]byte, size-footerLen-metaStart)
		if err := readFull(ctx, r, buf[:tailStart-metaStart], metaStart); err != nil {
			return nil, err
		}
		copy(buf[tailStart-metaStart:], meta)
		meta = buf
	} else {
		meta = meta[metaStart-tailStart:]
	}
	block := func(h blockHandle) ([]byte, error) {
		return decodeBlock(meta[h.offset-uint64(metaStart):h.end()-uint64(metaStart)], nil, maxDecodedLen)
	}

	rd := &Reader{r: r, size: size, opts: opts}
	propsBlock, err := block(f.props)
	if err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	if rd.props, err = decodeProperties(propsBlock); err != nil {
		return nil, err
	}
	filterBlock, err := block(f.filter)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	if len(filterBlock) > 0 {
		// A copy, so the filter does not pin the rest of the metadata.
		if rd.filter, err = decodeBloom(bytes.Clone(filterBlock)); err != nil {
			return nil, err
		}
		rd.hasFilter = true
	}
	indexBlock, err := block(f.index)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if err := rd.loadIndex(indexBlock, f.index.offset); err != nil {
		return nil, err
	}
	return rd, nil
}

// loadIndex decodes the index block, checking that separators increase and
// that the data blocks tile [0, dataEnd).
func (r *Reader) loadIndex(b []byte, dataEnd uint64) error {
	var it blockIter
	if err := it.init(b); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	var end uint64
	for ok := it.First(); ok; ok = it.Next() {
		h, good := decodeHandle(it.val)
		if !good || h.offset != end || h.length < trailerLen || h.end() > dataEnd || h.end() < h.offset {
			return fmt.Errorf("%w: index entry %d has a bad block handle", ErrCorrupt, len(r.handles))
		}
		if n := len(r.handles); n > 0 && bytes.Compare(r.sep(n-1), it.key) >= 0 {
			return fmt.Errorf("%w: index separators out of order", ErrCorrupt)
		}
		r.seps = append(r.seps, it.key...)
		r.sepEnds = append(r.sepEnds, len(r.seps))
		r.handles = append(r.handles, h)
		end = h.end()
	}
	if it.err != nil {
		return fmt.Errorf("index: %w", it.err)
	}
	if end != dataEnd {
		return fmt.Errorf("%w: data blocks end at %d, index starts at %d", ErrCorrupt, end, dataEnd)
	}
	return nil
}

func (r *Reader) sep(i int) []byte {
	start := 0
	if i > 0 {
		start = r.sepEnds[i-1]
	}
	return r.seps[start:r.sepEnds[i]]
}

// findBlock returns the first block that may hold keys >= key: the first
// whose separator is >= key, or len(handles).
func (r *Reader) findBlock(key []byte) int {
	return sort.Search(len(r.handles), func(i int) bool { return bytes.Compare(r.sep(i), key) >= 0 })
}

// Properties returns the table's properties. The caller must not modify them.
func (r *Reader) Properties() *Properties { return r.props }

// Size is the table's size in bytes.
func (r *Reader) Size() int64 { return r.size }

// Stats returns the number of data blocks read so far.
func (r *Reader) Stats() ReadStats {
	return ReadStats{BlockReads: r.blockReads.Load(), BlockBytes: r.blockBytes.Load()}
}

// MayContain reports whether the table may hold the partition with the given
// prefix (see WriterOptions.Split). False is certain.
func (r *Reader) MayContain(prefix []byte) bool {
	return !r.hasFilter || r.filter.mayContain(bloomHash(prefix))
}

// readBlock fetches data block i into *phys and returns its raw contents,
// which alias *phys or *raw.
func (r *Reader) readBlock(ctx context.Context, i int, phys, raw *[]byte) ([]byte, error) {
	h := r.handles[i]
	if cap(*phys) < int(h.length) {
		*phys = make([]byte, h.length)
	}
	p := (*phys)[:h.length]
	if err := readFull(ctx, r.r, p, int64(h.offset)); err != nil {
		return nil, err
	}
	r.blockReads.Add(1)
	r.blockBytes.Add(h.length)
	b, err := decodeBlock(p, *raw, maxDecodedLen)
	if err != nil {
		return nil, fmt.Errorf("data block %d at offset %d: %w", i, h.offset, err)
	}
	if len(p) == 0 || len(b) == 0 || &b[0] != &p[0] {
		*raw = b
	}
	return b, nil
}

type getState struct {
	phys, raw []byte
	it        blockIter
}

// Get returns a copy of the value stored under key. It reads at most one
// data block.
func (r *Reader) Get(ctx context.Context, key []byte) (value []byte, ok bool, err error) {
	if r.opts.Split != nil && r.hasFilter {
		n := r.opts.Split(key)
		if n < 0 || n > len(key) {
			return nil, false, fmt.Errorf("sstable: split returned %d for a key of %d bytes", n, len(key))
		}
		if !r.filter.mayContain(bloomHash(key[:n])) {
			return nil, false, nil
		}
	}
	i := r.findBlock(key)
	if i == len(r.handles) {
		return nil, false, nil
	}
	s, _ := r.getState.Get().(*getState)
	if s == nil {
		s = new(getState)
	}
	defer r.getState.Put(s)
	b, err := r.readBlock(ctx, i, &s.phys, &s.raw)
	if err != nil {
		return nil, false, err
	}
	if err := s.it.init(b); err != nil {
		return nil, false, fmt.Errorf("data block %d: %w", i, err)
	}
	if !s.it.SeekGE(key) {
		return nil, false, s.it.err
	}
	if !bytes.Equal(s.it.key, key) {
		return nil, false, nil
	}
	return append([]byte(nil), s.it.val...), true, nil
}

// readFull reads len(p) bytes at off or fails.
func readFull(ctx context.Context, r ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(ctx, p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("sstable: read %d bytes at offset %d: %w", len(p), off, err)
}
