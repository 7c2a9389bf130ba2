package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Defaults chosen with BenchmarkWriterSweep and BenchmarkGet (see
// docs/sstable.md): flush speed hardly depends on the block size, while a
// point read's CPU grows with it; larger write buffers save write calls.
const (
	DefaultBlockSize       = 16 << 10
	DefaultBufferSize      = 256 << 10
	DefaultRestartInterval = 16
)

// Limits that keep every block below the reader's maxDecodedLen.
const (
	maxBlockSize = 64 << 20
	maxEntrySize = 128 << 20
)

// ErrOutOfOrder is returned by Add for a key that is not greater than the
// previous one.
var ErrOutOfOrder = errors.New("sstable: keys out of order")

// WriterOptions configure a Writer. The zero value is usable.
type WriterOptions struct {
	// BlockSize is the target size of a data block before compression,
	// at most 64 MiB. A block ends with the first entry that reaches it.
	BlockSize int
	// RestartInterval is the number of entries between restart points.
	RestartInterval int
	// BufferSize is the size of the write buffer in front of the io.Writer.
	BufferSize  int
	Compression Compression
	// BloomBitsPerKey sizes the partition filter: 0 means
	// DefaultBloomBitsPerKey, a negative value means no filter.
	BloomBitsPerKey int
	// Split returns the length of key's partition prefix, which the filter
	// holds. Entries of one partition must be adjacent, which holds when
	// prefixes are prefix-free. nil makes every key its own partition.
	Split func(key []byte) int
	// Stats reports the statistics of an entry; nil reports none.
	Stats func(key, value []byte) EntryStats
	// WriterID and CreatedAt are recorded in the properties.
	WriterID  string
	CreatedAt time.Time
}

func (o *WriterOptions) withDefaults() WriterOptions {
	r := *o
	if r.BlockSize <= 0 {
		r.BlockSize = DefaultBlockSize
	}
	r.BlockSize = min(r.BlockSize, maxBlockSize)
	if r.RestartInterval <= 0 {
		r.RestartInterval = DefaultRestartInterval
	}
	if r.BufferSize <= 0 {
		r.BufferSize = DefaultBufferSize
	}
	if r.BloomBitsPerKey == 0 {
		r.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	return r
}

// Writer streams a table to an io.Writer. Its memory is bounded by one data
// block, the write buffer, the block index and eight bytes per partition
// for the filter. A Writer is not safe for concurrent use.
type Writer struct {
	opts   WriterOptions
	w      *bufio.Writer
	offset uint64
	err    error // sticky write error
	closed bool

	block   blockBuilder
	index   blockBuilder
	comp    compressor
	lastKey []byte
	sepBuf  []byte

	lastSep []byte // the last index key
	scratch []byte
	trailer [trailerLen]byte // a field, so writing it does not allocate

	hashes     []uint64
	lastPrefix []byte

	props Properties
}

// NewWriter returns a Writer that writes a table to w.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	o := opts.withDefaults()
	if !o.Compression.valid() {
		o.Compression = NoCompression
	}
	wr := &Writer{
		opts:  o,
		w:     bufio.NewWriterSize(w, o.BufferSize),
		block: blockBuilder{restartInterval: o.RestartInterval},
		index: blockBuilder{restartInterval: o.RestartInterval},
		comp:  compressor{kind: o.Compression},
		props: Properties{
			FormatVersion:        FormatVersion,
			Compression:          o.Compression,
			BlockSize:            uint64(o.BlockSize),
			MinTimestamp:         math.MaxInt64,
			MaxTimestamp:         math.MinInt64,
			MinLocalDeletionTime: NoDeletionTime,
			WriterID:             o.WriterID,
			CreatedAt:            o.CreatedAt,
		},
	}
	if !opts.Compression.valid() {
		wr.err = fmt.Errorf("sstable: unknown compression %d", opts.Compression)
	}
	if o.BloomBitsPerKey > 0 {
		wr.props.BloomBitsPerKey = uint64(o.BloomBitsPerKey)
	}
	return wr
}

// Add appends an entry. Keys must be strictly increasing.
func (w *Writer) Add(key, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("sstable: add to closed writer")
	}
	if len(key)+len(value) > maxEntrySize {
		return fmt.Errorf("sstable: entry of %d bytes exceeds the limit of %d", len(key)+len(value), maxEntrySize)
	}
	first := w.props.Entries == 0
	// The prefix shared with the previous key serves both the order check
	// and the block's prefix compression.
	shared := sharedPrefix(key, w.lastKey)
	if !first && (shared == len(key) || (shared < len(w.lastKey) && key[shared] < w.lastKey[shared])) {
		return fmt.Errorf("%w: %q after %q", ErrOutOfOrder, key, w.lastKey)
	}
	prefix := key
	if w.opts.Split != nil {
		n := w.opts.Split(key)
		if n < 0 || n > len(key) {
			return fmt.Errorf("sstable: split returned %d for a key of %d bytes", n, len(key))
		}
		prefix = key[:n]
	}

	if w.block.estimatedSize() >= w.opts.BlockSize && !w.block.empty() {
		w.sepBuf = separator(w.sepBuf[:0], w.lastKey, key)
		if err := w.flushBlock(w.sepBuf); err != nil {
			return err
		}
	}

	if first || !bytes.Equal(prefix, w.lastPrefix) {
		w.props.Partitions++
		if w.opts.BloomBitsPerKey > 0 {
			w.hashes = append(w.hashes, bloomHash(prefix))
		}
		w.lastPrefix = append(w.lastPrefix[:0], prefix...)
	}
	if w.opts.Stats != nil {
		w.props.add(w.opts.Stats(key, value))
	}
	if first {
		w.props.FirstKey = append([]byte(nil), key...)
	}
	w.props.Entries++
	w.block.add(key, value, shared)
	w.lastKey = append(w.lastKey[:0], key...)
	return nil
}

// flushBlock writes the pending data block and indexes it under sep, a key
// >= every key of the block and < every later key. (Handing blocks to a
// compressing goroutine was measured: it cost more CPU in scheduling than
// it saved in elapsed time on a busy machine, so writes stay synchronous.)
func (w *Writer) flushBlock(sep []byte) error {
	err := w.writeData(w.block.finish(), sep)
	w.block.reset()
	if err != nil {
		w.err = err
	}
	return err
}

// writeData writes a data block and indexes it.
func (w *Writer) writeData(raw, sep []byte) error {
	h, err := w.writeBlock(raw, w.comp.kind)
	if err != nil {
		return err
	}
	w.scratch = appendHandle(append(w.scratch[:0], sep...), h)
	w.index.add(w.scratch[:len(sep)], w.scratch[len(sep):], sharedPrefix(sep, w.lastSep))
	w.lastSep = append(w.lastSep[:0], sep...)
	w.props.DataBlocks++
	w.props.DataSize += h.length
	return nil
}

// writeBlock compresses raw with kind (when that pays) and writes it with
// its trailer.
func (w *Writer) writeBlock(raw []byte, kind Compression) (blockHandle, error) {
	payload := raw
	if kind != NoCompression {
		payload, kind = w.comp.compress(raw)
	}
	trailer := appendTrailer(w.trailer[:0], payload, kind)
	h := blockHandle{offset: w.offset, length: uint64(len(payload) + trailerLen)}
	if _, err := w.w.Write(payload); err != nil {
		return h, err
	}
	if _, err := w.w.Write(trailer); err != nil {
		return h, err
	}
	w.offset += h.length
	return h, nil
}

// Close finishes the table: the last data block, the index, the filter, the
// properties and the footer, then flushes the write buffer. It does not
// close the underlying io.Writer.
func (w *Writer) Close() (*Properties, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, errors.New("sstable: writer already closed")
	}
	w.closed = true
	if !w.block.empty() {
		// The last key itself separates the last block from nothing.
		if err := w.flushBlock(w.lastKey); err != nil {
			return nil, err
		}
	}
	w.props.LastKey = append([]byte(nil), w.lastKey...)
	if w.props.Entries == 0 {
		w.props.LastKey = nil
	}

	var f footer
	var err error
	if f.index, err = w.writeBlock(w.index.finish(), w.comp.kind); err != nil {
		return nil, err
	}
	var filter []byte
	if w.opts.BloomBitsPerKey > 0 && len(w.hashes) > 0 {
		filter = buildBloom(w.hashes, w.opts.BloomBitsPerKey)
	}
	if f.filter, err = w.writeBlock(filter, NoCompression); err != nil {
		return nil, err
	}
	w.props.IndexSize, w.props.FilterSize = f.index.length, f.filter.length
	if f.props, err = w.writeBlock(w.props.encode(nil), NoCompression); err != nil {
		return nil, err
	}
	f.version = FormatVersion
	if _, err := w.w.Write(f.encode()); err != nil {
		w.err = err
		return nil, err
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
		return nil, err
	}
	w.hashes = nil
	p := w.props
	return &p, nil
}

func sharedPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// separator appends to dst a short key s with a <= s < b, for a < b.
func separator(dst, a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n < len(a) && n < len(b) {
		// a[n] < b[n]: bump the first byte after the shared prefix that can
		// be bumped while staying below b.
		if a[n] < 0xff && a[n]+1 < b[n] {
			return append(append(dst, a[:n]...), a[n]+1)
		}
		for i := n + 1; i < len(a); i++ {
			if a[i] < 0xff {
				return append(append(dst, a[:i]...), a[i]+1)
			}
		}
	}
	return append(dst, a...)
}
