package bulk

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/manifest"
)

// UnloadOptions configure an unload.
type UnloadOptions struct {
	Keyspace, Table string
	// Format is "csv" (default) or "json" (JSON lines, as SELECT JSON).
	Format string
	CSV    CSVOptions
	// Header writes the column names first (CSV).
	Header bool
	// Null is the text of a null in CSV (default the empty field).
	Null string
	// Workers read token ranges in parallel (default 2).
	Workers int
	// PageSize is the rows per page of a range's scan (default 5000).
	PageSize int
	TempDir  string
}

// UnloadStats count an unload.
type UnloadStats struct {
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
	// Revision is the sstables revision of the manifest the rows are as of.
	Revision uint64  `json:"revision"`
	Ranges   int     `json:"ranges"`
	Seconds  float64 `json:"seconds"`
}

// Unload writes every row of the table to w, as of one manifest version:
// the SSTables the View lists at one sstables revision (engine.Snapshot),
// without what is still in memtables, so a caller that wants the newest
// writes flushes the nodes first. Token ranges are read in parallel, each
// into a temporary file, and written to w in token order. Rows are read
// through the CQL executor (SELECT, SELECT JSON), so they read as a query
// returns them.
func Unload(ctx context.Context, d Deps, o UnloadOptions, w io.Writer) (UnloadStats, error) {
	start := time.Now()
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.PageSize <= 0 {
		o.PageSize = 5000
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	o.CSV.fill()
	tbl := d.View.Table(o.Keyspace, o.Table)
	if tbl == nil {
		return UnloadStats{}, fmt.Errorf("bulk: table %s.%s does not exist", o.Keyspace, o.Table)
	}
	snap := engine.NewSnapshot(d.View, d.Store, tbl.ID)
	n := max(d.View.RangeCount(), 1)
	e, err := exec.New(exec.Config{Engine: snap, Manifest: d.Manifest, View: d.View, Logger: d.Logger})
	if err != nil {
		return UnloadStats{}, err
	}
	var pk []string
	for _, id := range tbl.PartitionKey {
		for _, c := range tbl.Columns {
			if c.ID == id {
				pk = append(pk, quoteIdent(c.Name))
			}
		}
	}
	sel := "SELECT"
	if o.Format == "json" {
		sel = "SELECT JSON"
	}
	tok := "token(" + strings.Join(pk, ", ") + ")"
	text := fmt.Sprintf("%s * FROM %s.%s WHERE %s >= ? AND %s <= ?", sel, quoteIdent(o.Keyspace), quoteIdent(o.Table), tok, tok)
	tmp, err := os.MkdirTemp(o.TempDir, "sediment-unload-")
	if err != nil {
		return UnloadStats{}, fmt.Errorf("bulk: %w", err)
	}
	defer os.RemoveAll(tmp)

	var rows atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() {
			sess := exec.NewSession()
			p, err := e.Prepare(ctx, sess, text, "")
			if err != nil {
				cancel(err)
				return
			}
			for r := range next {
				if err := unloadRange(ctx, e, sess, p, o, r, n, filepath.Join(tmp, fmt.Sprintf("%05d", r)), &rows); err != nil {
					cancel(fmt.Errorf("bulk: range %d: %w", r, err))
				}
			}
		})
	}
	go func() {
		defer close(next)
		for r := range n {
			select {
			case next <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return UnloadStats{}, err
	}
	cw := &countingWriter{w: w}
	if o.Header && o.Format != "json" {
		cols, err := selectColumns(ctx, e, text)
		if err != nil {
			return UnloadStats{}, err
		}
		fields := make([]Field, len(cols))
		for i, c := range cols {
			fields[i] = Field{Value: c}
		}
		if _, err := cw.Write(AppendCSVRecord(nil, fields, o.CSV)); err != nil {
			return UnloadStats{}, err
		}
	}
	for r := range n {
		f, err := os.Open(filepath.Join(tmp, fmt.Sprintf("%05d", r)))
		if err != nil {
			return UnloadStats{}, fmt.Errorf("bulk: %w", err)
		}
		_, err = io.Copy(cw, f)
		f.Close()
		if err != nil {
			return UnloadStats{}, fmt.Errorf("bulk: write: %w", err)
		}
	}
	return UnloadStats{Rows: rows.Load(), Bytes: cw.n, Revision: snap.Revision(), Ranges: n, Seconds: time.Since(start).Seconds()}, nil
}

// selectColumns returns the result columns of the prepared SELECT.
func selectColumns(ctx context.Context, e *exec.Executor, text string) ([]string, error) {
	p, err := e.Prepare(ctx, exec.NewSession(), text, "")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(p.Columns))
	for i, c := range p.Columns {
		out[i] = c.Name
	}
	return out, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// unloadRange writes the rows of token range r of n to the file path.
func unloadRange(ctx context.Context, e *exec.Executor, sess *exec.Session, p *exec.Prepared, o UnloadOptions, r, n int, path string, rows *atomic.Int64) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	first, last := manifest.RangeBounds(r, n)
	bound := func(t int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t)) }
	params := &exec.Params{Values: [][]byte{bound(first), bound(last)}, PageSize: o.PageSize}
	var buf []byte
	fields := []Field{}
	for {
		res, err := e.Execute(ctx, sess, p.ID, params)
		if err != nil {
			return err
		}
		if res.Kind != exec.ResultRows {
			return errors.New("the SELECT returned no rows result")
		}
		buf = buf[:0]
		for _, row := range res.Rows {
			if o.Format == "json" {
				buf = append(append(buf, row[0]...), '\n')
				continue
			}
			fields = fields[:0]
			for i, v := range row {
				switch {
				case v == nil:
					fields = append(fields, Field{Value: o.Null})
				case len(v) == 0 && res.Columns[i].Type.Kind.Native():
					// An empty value, not a null: quoted.
					fields = append(fields, Field{Quoted: true})
				default:
					s := values.Text(res.Columns[i].Type, v)
					// A text equal to the null text is quoted, so it reads back as itself.
					fields = append(fields, Field{Value: s, Quoted: s == o.Null})
				}
			}
			buf = AppendCSVRecord(buf, fields, o.CSV)
		}
		if _, err := f.Write(buf); err != nil {
			return err
		}
		rows.Add(int64(len(res.Rows)))
		if res.PagingState == nil {
			return nil
		}
		params.PagingState = res.PagingState
	}
}
