package bulk

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Options configure a load.
type Options struct {
	Keyspace, Table string
	// Format is "csv" (default) or "json" (JSON lines).
	Format string
	CSV    CSVOptions
	Text   TextOptions
	// Header says the first CSV record names the fields.
	Header bool
	// Columns name the CSV fields in order (cqlsh COPY's column list);
	// without them and without a header, the table's columns in
	// definition order.
	Columns []string
	// Mapping renames input fields to columns (DSBulk's -m); a field not
	// named keeps its name.
	Mapping map[string]string
	// WriteTime is every row's write timestamp (µs); 0 for the load's
	// start. WriteTimeField, if set, names an input field holding it (µs,
	// or a timestamp in text), which then is no column.
	WriteTime      int64
	WriteTimeField string
	// TTL, if > 0, makes every loaded cell expire after so many seconds.
	TTL int32
	// MaxErrors stops the load, which then commits nothing, once more
	// records than this are rejected; < 0 never stops.
	MaxErrors int
	// Workers convert rows in parallel (default GOMAXPROCS: conversion
	// is CPU-bound).
	Workers int
	// Memory bounds the rows held for sorting before they spill to
	// TempDir (default 256 MiB).
	Memory  int64
	TempDir string
	// ObjectPrefix starts the SSTables' object keys (default "sst/load",
	// inside the orphan sweep's default prefixes).
	ObjectPrefix string
	// ID names a new load (default a random one).
	ID uuid.UUID
	// Resume continues load Resume, which must be pending, instead of
	// starting one: ranges whose SSTable it already added are skipped.
	// The input must be the same.
	Resume uuid.UUID
	// Rejects receives the rejected records; nil drops them (they are
	// still counted).
	Rejects *Rejects
	// Progress, if set, is called with the counters about every second.
	Progress func(Stats)
}

// Deps are what a load writes through.
type Deps struct {
	Manifest *manifest.Manifest
	View     *manifest.View
	Store    objectstore.Store
	FS       vfs.FS
	Logger   *slog.Logger
}

// Stats count a load's progress.
type Stats struct {
	Load     uuid.UUID `json:"load"`
	State    string    `json:"state"`
	Records  int64     `json:"records"`
	Rows     int64     `json:"rows"`
	Rejected int64     `json:"rejected"`
	// InputBytes are the bytes read from the inputs, InputTotal their
	// size when known (0 otherwise).
	InputBytes int64 `json:"input_bytes"`
	InputTotal int64 `json:"input_total,omitempty"`
	SSTables   int   `json:"sstables"`
	// SSTableBytes are the bytes uploaded.
	SSTableBytes int64   `json:"sstable_bytes"`
	Skipped      int     `json:"ranges_resumed,omitempty"`
	Seconds      float64 `json:"seconds"`
	// WriteSeconds is the part of Seconds spent merging the sorted runs
	// into SSTables and uploading them, after every input was read.
	WriteSeconds float64 `json:"write_seconds"`
}

// ErrTooManyErrors stops a load whose rejects passed MaxErrors.
var ErrTooManyErrors = errors.New("bulk: too many rejected records")

// counters are the live Stats.
type counters struct {
	records, rows, rejected, inBytes, sstBytes atomic.Int64
	sstables                                   atomic.Int64
	writeNanos                                 atomic.Int64
}

// Load reads every input into table Options.Keyspace.Table and commits it
// in one step. On an error the load stays pending (Resume continues it;
// manifest.AbandonLoad drops it), except after ErrTooManyErrors, when it is
// abandoned.
func Load(ctx context.Context, d Deps, o Options, inputs []Input) (Stats, error) {
	start := time.Now()
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Memory <= 0 {
		o.Memory = 256 << 20
	}
	if o.ObjectPrefix == "" {
		o.ObjectPrefix = "sst/load"
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	tbl := d.View.Table(o.Keyspace, o.Table)
	if tbl == nil {
		return Stats{}, fmt.Errorf("bulk: table %s.%s does not exist", o.Keyspace, o.Table)
	}
	id := o.Resume
	var done map[int][]manifest.SSTable
	if id == uuid.Nil {
		if id = o.ID; id == uuid.Nil {
			id = uuid.New()
		}
		if err := d.Manifest.CreateLoad(ctx, id, tbl.ID); err != nil {
			return Stats{}, err
		}
	} else {
		l, err := d.Manifest.GetLoad(ctx, id)
		if err != nil {
			return Stats{}, err
		}
		if l.Table != tbl.ID || l.State != manifest.LoadPending {
			return Stats{}, fmt.Errorf("bulk: load %s is %s, of another table or done", id, l.State)
		}
		if done, err = d.Manifest.LoadParts(ctx, id); err != nil {
			return Stats{}, err
		}
	}
	l, err := d.Manifest.GetLoad(ctx, id)
	if err != nil {
		return Stats{}, err
	}
	if o.WriteTime == 0 {
		// Fixed by the load's record, so a resumed load writes the same
		// bytes as the attempt it continues.
		o.WriteTime = l.Created.UnixMicro()
	}
	var c counters
	stats := func(state string) Stats {
		return Stats{
			Load: id, State: state, Records: c.records.Load(), Rows: c.rows.Load(), Rejected: c.rejected.Load(),
			InputBytes: c.inBytes.Load(), InputTotal: totalSize(inputs), SSTables: int(c.sstables.Load()),
			SSTableBytes: c.sstBytes.Load(), Skipped: len(done), Seconds: time.Since(start).Seconds(),
			WriteSeconds: time.Duration(c.writeNanos.Load()).Seconds(),
		}
	}
	if o.Progress != nil {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					o.Progress(stats(manifest.LoadPending))
				case <-stop:
					return
				}
			}
		})
		defer func() { close(stop); wg.Wait() }()
	}
	ld := &loader{d: d, o: o, tbl: tbl, id: id, c: &c, done: done}
	err = ld.run(ctx, inputs)
	if errors.Is(err, ErrTooManyErrors) {
		// Nothing of it may show; what was added goes to the garbage.
		if aerr := d.Manifest.AbandonLoad(context.WithoutCancel(ctx), id); aerr != nil {
			return stats(manifest.LoadPending), errors.Join(err, aerr)
		}
		return stats(manifest.LoadAbandoned), err
	}
	if err != nil {
		return stats(manifest.LoadPending), err
	}
	if err := d.Manifest.CommitLoad(ctx, id); err != nil {
		return stats(manifest.LoadPending), err
	}
	return stats(manifest.LoadCommitted), nil
}

func totalSize(inputs []Input) int64 {
	var n int64
	for _, in := range inputs {
		if in.Size < 0 {
			return 0
		}
		n += in.Size
	}
	return n
}

type loader struct {
	d    Deps
	o    Options
	tbl  *manifest.Table
	id   uuid.UUID
	c    *counters
	done map[int][]manifest.SSTable
	// rejectMu orders rejects and the MaxErrors check.
	rejectMu sync.Mutex
}

// record is one input record on its way to a worker.
type record struct {
	source string
	line   int
	raw    string
	fields []Field           // CSV
	object map[string][]byte // JSON lines: raw JSON by field name
}

// reject writes a rejected record and fails once MaxErrors is passed.
func (l *loader) reject(source string, line int, raw, reason string) error {
	l.rejectMu.Lock()
	defer l.rejectMu.Unlock()
	n := l.c.rejected.Add(1)
	if l.o.Rejects != nil {
		if err := l.o.Rejects.Write(source, line, reason, raw); err != nil {
			return err
		}
	}
	if l.o.MaxErrors >= 0 && n > int64(l.o.MaxErrors) {
		return fmt.Errorf("%w: %d, more than -max-errors=%d", ErrTooManyErrors, n, l.o.MaxErrors)
	}
	return nil
}

func (l *loader) run(ctx context.Context, inputs []Input) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tmp, err := os.MkdirTemp(l.o.TempDir, "sediment-load-")
	if err != nil {
		return fmt.Errorf("bulk: %w", err)
	}
	defer os.RemoveAll(tmp)
	ins, err := l.newInserter(ctx)
	if err != nil {
		return err
	}
	recs := make(chan []record, l.o.Workers*2)
	sorters := make([]*sorter, l.o.Workers)
	var wg sync.WaitGroup
	for w := range sorters {
		s := newSorter(l.d.FS, tmp, fmt.Sprintf("w%d", w), l.o.Memory/int64(l.o.Workers))
		sorters[w] = s
		wg.Go(func() {
			if err := l.convert(ctx, ins, s, recs); err != nil {
				cancel(err)
			}
		})
	}
	rerr := l.read(ctx, inputs, ins, recs)
	close(recs)
	wg.Wait()
	defer func() {
		for _, s := range sorters {
			s.remove()
		}
	}()
	if rerr != nil {
		cancel(rerr)
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	var srcs []source
	for _, s := range sorters {
		ss, err := s.sources()
		if err != nil {
			return err
		}
		srcs = append(srcs, ss...)
	}
	if srcs, err = reduce(l.d.FS, tmp, srcs, maxFanIn); err != nil {
		return err
	}
	start := time.Now()
	defer func() { l.c.writeNanos.Add(int64(time.Since(start))) }()
	return l.write(ctx, srcs)
}

// inserter turns a row into storage entries through the CQL executor, so
// a loaded row is exactly what an INSERT of it writes: the executor plans
// the INSERT and builds its cells, and its engine, a capture, hands the
// entries to the calling worker's sorter instead of to an ingest node.
type inserter struct {
	prepared *exec.Prepared
	text     string
	columns  []string // the INSERT's columns
	types    []*cqltype.Type
	newExec  func() (*workerExec, error)
}

type workerExec struct {
	e    *exec.Executor
	cap  *captureEngine
	sess *exec.Session
}

// captureEngine is the engine of a loader's executor: Apply keeps the
// entries of the row being converted.
type captureEngine struct {
	engine.Engine // only Apply is called by an INSERT without conditions
	out           []*engine.Mutation
}

func (c *captureEngine) Apply(_ context.Context, ms ...*engine.Mutation) error {
	c.out = append(c.out, ms...)
	return nil
}

func (c *captureEngine) ApplyIf(context.Context, *engine.Mutation, int64, engine.Condition) (bool, error) {
	return false, errors.New("bulk: conditional writes are not loaded")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (l *loader) newInserter(ctx context.Context) (*inserter, error) {
	cols := l.o.Columns
	if len(cols) == 0 && !l.o.Header {
		for _, c := range l.tbl.Columns {
			cols = append(cols, c.Name)
		}
	}
	ins := &inserter{}
	ins.newExec = func() (*workerExec, error) {
		cap := &captureEngine{}
		e, err := exec.New(exec.Config{Engine: cap, Manifest: l.d.Manifest, View: l.d.View, Logger: l.d.Logger})
		if err != nil {
			return nil, err
		}
		return &workerExec{e: e, cap: cap, sess: exec.NewSession()}, nil
	}
	return ins, ins.setColumns(ctx, l, cols)
}

// setColumns prepares the INSERT of the named table columns (nil: the
// header decides later).
func (ins *inserter) setColumns(ctx context.Context, l *loader, cols []string) error {
	if cols == nil {
		return nil
	}
	if len(cols) == 0 {
		return errors.New("bulk: no column to load")
	}
	text := insertText(l, cols)
	w, err := ins.newExec()
	if err != nil {
		return err
	}
	p, err := w.e.Prepare(ctx, w.sess, text, "")
	if err != nil {
		return fmt.Errorf("bulk: %w", err)
	}
	ins.prepared, ins.columns, ins.text = p, cols, text
	ins.types = make([]*cqltype.Type, len(cols))
	for i := range cols {
		ins.types[i] = p.Binds[i].Type
	}
	return nil
}

// worker returns the executor of one worker, the INSERT prepared.
func (ins *inserter) worker(ctx context.Context) (*workerExec, error) {
	w, err := ins.newExec()
	if err != nil {
		return nil, err
	}
	if _, err := w.e.Prepare(ctx, w.sess, ins.text, ""); err != nil {
		return nil, fmt.Errorf("bulk: %w", err)
	}
	return w, nil
}

// entries returns the storage entries of one row's bound values.
func (w *workerExec) entries(ctx context.Context, ins *inserter, vals [][]byte, unset []bool) ([]*engine.Mutation, error) {
	w.cap.out = w.cap.out[:0]
	if _, err := w.e.Execute(ctx, w.sess, ins.prepared.ID, &exec.Params{Values: vals, Unset: unset}); err != nil {
		return nil, err
	}
	return w.cap.out, nil
}

// convert is one worker: records in, entries into s.
func (l *loader) convert(ctx context.Context, ins *inserter, s *sorter, in <-chan []record) error {
	conv, err := newConverter(l.o.Text)
	if err != nil {
		return err
	}
	var w *workerExec
	for batch := range in {
		if ctx.Err() != nil {
			continue // drain
		}
		if w == nil {
			// After the first batch: a header may have set the columns.
			if w, err = ins.worker(ctx); err != nil {
				return err
			}
		}
		for _, r := range batch {
			vals, unset, reason := l.values(conv, ins, r)
			var ms []*engine.Mutation
			if reason == "" {
				ms, err = w.entries(ctx, ins, vals, unset)
				if err != nil {
					reason = err.Error()
				}
			}
			if reason != "" {
				if err := l.reject(r.source, r.line, r.raw, reason); err != nil {
					return err
				}
				continue
			}
			for _, m := range ms {
				if m.Table != l.tbl.ID {
					return fmt.Errorf("bulk: a row of %s wrote to table %s", l.tbl.ID, m.Table)
				}
				for _, e := range m.Entries {
					if err := s.add(e.Key, e.Value); err != nil {
						return err
					}
				}
			}
			l.c.rows.Add(1)
		}
	}
	return nil
}

func insertText(l *loader, cols []string) string {
	q := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		q[i], marks[i] = quoteIdent(c), "?"
	}
	// Without -ttl the table's default_time_to_live applies, which an
	// explicit TTL of 0 would override.
	using := "USING TIMESTAMP ?"
	if l.o.TTL > 0 {
		using += " AND TTL ?"
	}
	return fmt.Sprintf("INSERT INTO %s.%s (%s) VALUES (%s) %s",
		quoteIdent(l.o.Keyspace), quoteIdent(l.o.Table), strings.Join(q, ", "), strings.Join(marks, ", "), using)
}

// values returns the bound values of a record (its columns, then the
// timestamp and, with Options.TTL, the TTL), or why it is rejected. A null or missing value is
// unset, as DSBulk binds it by default: a loaded row writes no tombstones.
func (l *loader) values(conv *converter, ins *inserter, r record) ([][]byte, []bool, string) {
	n := len(ins.columns)
	vals, unset := make([][]byte, n+2), make([]bool, n+2)
	ts := l.o.WriteTime
	if r.fields != nil {
		if len(r.fields) != n+boolInt(l.o.WriteTimeField != "") {
			return nil, nil, fmt.Sprintf("%d fields, want %d", len(r.fields), n+boolInt(l.o.WriteTimeField != ""))
		}
		for i, col := range ins.columns {
			v, err := conv.fromText(ins.types[i], r.fields[i])
			if err != nil {
				return nil, nil, fmt.Sprintf("column %s: %s", col, valueMessage(err, col))
			}
			vals[i] = v
		}
		if l.o.WriteTimeField != "" {
			t, err := parseWriteTime(r.fields[n].Value)
			if err != nil {
				return nil, nil, fmt.Sprintf("field %s: %v", l.o.WriteTimeField, err)
			}
			ts = t
		}
	} else {
		for name := range r.object {
			if name != l.o.WriteTimeField && !slices.Contains(ins.columns, l.column(name)) {
				return nil, nil, fmt.Sprintf("field %s names no column of %s.%s", name, l.o.Keyspace, l.o.Table)
			}
		}
		for i, col := range ins.columns {
			raw, ok := r.object[l.field(col)]
			if !ok {
				continue // null
			}
			v, err := fromJSON(ins.types[i], raw)
			if err != nil {
				return nil, nil, fmt.Sprintf("column %s: %s", col, valueMessage(err, col))
			}
			vals[i] = v
		}
		if raw, ok := r.object[l.o.WriteTimeField]; ok && l.o.WriteTimeField != "" {
			t, err := parseWriteTime(strings.Trim(string(raw), `"`))
			if err != nil {
				return nil, nil, fmt.Sprintf("field %s: %v", l.o.WriteTimeField, err)
			}
			ts = t
		}
	}
	for i := range n {
		unset[i] = vals[i] == nil
	}
	vals[n] = binary.BigEndian.AppendUint64(nil, uint64(ts))
	if l.o.TTL > 0 {
		vals[n+1] = binary.BigEndian.AppendUint32(nil, uint32(l.o.TTL))
	} else {
		vals, unset = vals[:n+1], unset[:n+1]
	}
	return vals, unset, ""
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// column returns the column an input field loads into.
func (l *loader) column(field string) string {
	if c, ok := l.o.Mapping[field]; ok {
		return c
	}
	return field
}

// field returns the input field that loads into column col.
func (l *loader) field(col string) string {
	for f, c := range l.o.Mapping {
		if c == col {
			return f
		}
	}
	return col
}

// parseWriteTime reads a write time: µs since the epoch, or a timestamp.
func parseWriteTime(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("%q is neither µs since the epoch nor a timestamp", s)
}

// valueMessage is the text of a conversion or execution error.
func valueMessage(err error, col string) string {
	var ve interface{ Message(string) string }
	if errors.As(err, &ve) {
		return ve.Message(col)
	}
	return err.Error()
}

// write turns the merged entries into one SSTable per token range, each
// added to the manifest as a part of the load as soon as it is uploaded,
// so that the orphan sweep never finds it unreferenced.
func (l *loader) write(ctx context.Context, srcs []source) error {
	// The layout is the manifest's, read now: issue 14 may change it.
	n, err := l.d.Manifest.RangeCount(ctx)
	if err != nil {
		return err
	}
	var (
		w     *tablestore.Writer
		cur   = -1
		key   string
		start = time.Now()
	)
	// A range's SSTable is closed (its last part uploaded) and added to
	// the manifest in the background while the merge encodes the next
	// ones: up to closers at once, each holding its upload's part buffer.
	const closers = 4
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, closers)
		errs = make(chan error, 1)
	)
	closeRange := func(w *tablestore.Writer, key string, r int) error {
		t, err := w.Close()
		if err != nil {
			return err
		}
		p := t.Props
		sst := manifest.SSTable{
			Key: key, Size: t.Size, Level: 0, MinToken: t.MinToken, MaxToken: t.MaxToken,
			FirstKey: p.FirstKey, LastKey: p.LastKey, MinTimestamp: p.MinTimestamp, MaxTimestamp: p.MaxTimestamp,
			Created: start.UTC(), Load: l.id,
		}
		if _, err := l.d.Manifest.CommitSSTables(ctx, manifest.Commit{Table: l.tbl.ID, Range: r, Add: []manifest.SSTable{sst}}); err != nil {
			return err
		}
		l.c.sstables.Add(1)
		l.c.sstBytes.Add(t.Size)
		return nil
	}
	finish := func() error {
		if w == nil {
			return nil
		}
		sem <- struct{}{}
		cw, ck, cr := w, key, cur
		w = nil
		wg.Go(func() {
			defer func() { <-sem }()
			if err := closeRange(cw, ck, cr); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}
	defer wg.Wait()
	err = merge(srcs, func(k, v []byte) error {
		tok, err := keys.Token(k)
		if err != nil {
			return fmt.Errorf("bulk: %w", err)
		}
		r := manifest.RangeOf(tok, n)
		if r != cur {
			if err := finish(); err != nil {
				return err
			}
			cur = r
			if len(l.done[r]) > 0 {
				return nil // resumed: the range is in
			}
			key = fmt.Sprintf("%s/%s/%s/%05d.sst", l.o.ObjectPrefix, l.tbl.ID, l.id, r)
			if w, err = tablestore.Create(ctx, l.d.Store, key, sstable.WriterOptions{WriterID: "load/" + l.id.String(), CreatedAt: start}); err != nil {
				return err
			}
		}
		if w == nil {
			return nil
		}
		return w.Add(k, v)
	})
	if err == nil {
		err = finish()
	}
	if err != nil && w != nil {
		w.Abort()
	}
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
