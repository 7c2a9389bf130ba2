package tablestore

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/objectstore"
)

// Split is the Split of every Sediment SSTable: the partition prefix of a
// storage key, which the partition filter holds. A key that is not a
// storage key is its own partition: the writers (shards, merges) check
// their keys before they write them.
func Split(key []byte) int {
	n, err := keys.PartitionPrefixLen(key)
	if err != nil {
		return len(key)
	}
	return n
}

// Writer writes one SSTable: to an upload (Create), or to any io.Writer
// (NewWriter).
type Writer struct {
	key      string             // object key, for errors; "" for NewWriter
	up       objectstore.Writer // nil for NewWriter
	dst      io.Writer
	n        int64 // bytes sent to dst
	sw       *sstable.Writer
	statsErr error // of the last value whose statistics failed
}

// Table describes a written SSTable.
type Table struct {
	// Size is the number of bytes written: the object's size.
	Size  int64
	Props *sstable.Properties
	// MinToken and MaxToken are the tokens of Props.FirstKey and LastKey.
	MinToken, MaxToken int64
}

// Create starts the SSTable object key in store, a streaming upload. opts
// configures the format (block size, buffer, compression, writer ID and
// creation time); Split and Stats are this package's. ctx bounds the
// upload: the store aborts it if ctx ends.
func Create(ctx context.Context, store objectstore.Store, key string, opts sstable.WriterOptions) (*Writer, error) {
	up, err := store.NewWriter(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("upload %s: %w", key, err)
	}
	w := NewWriter(up, opts)
	w.key, w.up = key, up
	return w, nil
}

// NewWriter returns a Writer of an SSTable to dst, configured as Create's.
func NewWriter(dst io.Writer, opts sstable.WriterOptions) *Writer {
	w := &Writer{dst: dst}
	opts.Split, opts.Stats = Split, w.stats
	w.sw = sstable.NewWriter(countingWriter{w}, opts)
	return w
}

// countingWriter counts the bytes the SSTable writer sends.
type countingWriter struct{ w *Writer }

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.dst.Write(p)
	c.w.n += int64(n)
	return n, err
}

// stats reports a value's statistics for the properties; a value that does
// not decode counts for nothing and fails Add.
func (w *Writer) stats(_, value []byte) sstable.EntryStats {
	st, err := model.ValueStats(value)
	if err != nil {
		w.statsErr = err
		return sstable.EntryStats{MinTimestamp: math.MaxInt64, MaxTimestamp: math.MinInt64, MinLocalDeletionTime: sstable.NoDeletionTime}
	}
	return sstable.EntryStats{
		MinTimestamp:         st.MinTimestamp,
		MaxTimestamp:         st.MaxTimestamp,
		MinLocalDeletionTime: st.MinLocalDeletionTime,
		Rows:                 uint64(st.Rows),
		Cells:                uint64(st.Cells),
		Tombstones:           uint64(st.Tombstones),
	}
}

// Add appends an entry; keys must come in increasing order, and values
// must be model values.
func (w *Writer) Add(key, value []byte) error {
	if err := w.sw.Add(key, value); err != nil {
		return w.fail("write", err)
	}
	if err := w.statsErr; err != nil {
		w.statsErr = nil
		return w.fail("write", fmt.Errorf("value of %x: %w", key, err))
	}
	return nil
}

// fail names the object, if any, in an error.
func (w *Writer) fail(op string, err error) error {
	if w.key == "" {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s %s: %w", op, w.key, err)
}

// Written returns the number of bytes sent so far.
func (w *Writer) Written() int64 { return w.n }

// Close finishes the SSTable and, for Create, its upload. An SSTable with
// no entries has no token range, and for Create nothing is stored (its
// upload is aborted) and its Size is 0. On an error, the upload is aborted
// or failed.
func (w *Writer) Close() (Table, error) {
	props, err := w.sw.Close()
	if err != nil {
		w.Abort()
		return Table{}, w.fail("write", err)
	}
	t := Table{Size: w.n, Props: props}
	if props.Entries == 0 {
		if w.up != nil {
			w.Abort()
			t.Size = 0
		}
		return t, nil
	}
	if t.MinToken, err = keys.Token(props.FirstKey); err == nil {
		t.MaxToken, err = keys.Token(props.LastKey)
	}
	if err != nil {
		w.Abort()
		return Table{}, w.fail("write", err)
	}
	if w.up != nil {
		if err := w.up.Close(); err != nil {
			return Table{}, w.fail("upload", err)
		}
	}
	return t, nil
}

// Abort abandons an upload started by Create; nothing is stored. It does
// nothing for NewWriter.
func (w *Writer) Abort() {
	if w.up != nil {
		_ = w.up.Abort() // the upload is abandoned either way
	}
}
