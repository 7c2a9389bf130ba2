package bulk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/objectstore"
)

// Input is one file, object or stream to load.
type Input struct {
	Name string
	// Size in bytes, -1 if unknown (standard input).
	Size int64
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// BucketPrefix marks an argument naming objects in the bucket: every
// object whose key starts with what follows.
const BucketPrefix = "bucket:"

// Inputs expands the load's arguments: "-" is standard input, a directory
// its files (recursively, in name order), a glob its matches, and
// "bucket:<prefix>" the objects of store under the prefix.
func Inputs(ctx context.Context, store objectstore.Store, args []string) ([]Input, error) {
	var out []Input
	for _, a := range args {
		switch {
		case a == "-":
			out = append(out, Input{Name: "stdin", Size: -1, Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(os.Stdin), nil
			}})
		case strings.HasPrefix(a, BucketPrefix):
			if store == nil {
				return nil, fmt.Errorf("bulk: %s needs an object store", a)
			}
			prefix := strings.TrimPrefix(a, BucketPrefix)
			n := len(out)
			err := store.List(ctx, prefix, func(at objectstore.Attrs) error {
				key := at.Key
				out = append(out, Input{Name: BucketPrefix + key, Size: at.Size, Open: func(ctx context.Context) (io.ReadCloser, error) {
					return store.Get(ctx, key)
				}})
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("bulk: list %s: %w", a, err)
			}
			if len(out) == n {
				return nil, fmt.Errorf("bulk: no object under %s", a)
			}
		default:
			paths, err := filepath.Glob(a)
			if err != nil {
				return nil, fmt.Errorf("bulk: %s: %w", a, err)
			}
			if len(paths) == 0 {
				return nil, fmt.Errorf("bulk: %s: no such file", a)
			}
			for _, p := range paths {
				files, err := walk(p)
				if err != nil {
					return nil, err
				}
				out = append(out, files...)
			}
		}
	}
	return out, nil
}

// walk returns the file p, or the files under directory p.
func walk(p string) ([]Input, error) {
	var out []Input
	err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, Input{Name: path, Size: info.Size(), Open: func(context.Context) (io.ReadCloser, error) {
			return os.Open(path)
		}})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bulk: %w", err)
	}
	slices.SortFunc(out, func(a, b Input) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// countingReader counts the bytes read into n.
type countingReader struct {
	r io.Reader
	n *counters
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.inBytes.Add(int64(n))
	return n, err
}

const batchSize = 256

// read parses the inputs and sends their records to the workers in
// batches. The first header sets the columns (ins.setColumns), before the
// first batch goes out.
func (l *loader) read(ctx context.Context, inputs []Input, ins *inserter, out chan<- []record) error {
	var header []string
	for _, in := range inputs {
		rc, err := in.Open(ctx)
		if err != nil {
			return fmt.Errorf("bulk: open %s: %w", in.Name, err)
		}
		r := countingReader{rc, l.c}
		if l.o.Format == "json" {
			err = l.readJSON(ctx, in.Name, r, ins, out)
		} else {
			err = l.readCSV(ctx, in.Name, r, ins, &header, out)
		}
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) readCSV(ctx context.Context, name string, r io.Reader, ins *inserter, header *[]string, out chan<- []record) error {
	cr := NewCSVReader(r, l.o.CSV)
	var batch []record
	first := true
	for {
		fields, line, err := cr.Read()
		if err == io.EOF {
			break
		}
		var rerr *RecordError
		if errors.As(err, &rerr) {
			l.c.records.Add(1)
			if err := l.reject(name, rerr.Line, rerr.Raw, rerr.Reason); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("bulk: read %s: %w", name, err)
		}
		if first && l.o.Header {
			first = false
			if err := l.header(ctx, name, fields, ins, header); err != nil {
				return err
			}
			continue
		}
		first = false
		l.c.records.Add(1)
		batch = append(batch, record{source: name, line: line, raw: cr.raw.String(), fields: fields})
		if len(batch) == batchSize {
			if err := send(ctx, out, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	return send(ctx, out, batch)
}

// header checks a CSV header and, for the first input, sets the columns.
func (l *loader) header(ctx context.Context, name string, fields []Field, ins *inserter, header *[]string) error {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Value
	}
	if *header != nil {
		if !slices.Equal(names, *header) {
			return fmt.Errorf("bulk: %s: header %q differs from the first input's %q", name, names, *header)
		}
		return nil
	}
	*header = names
	if len(l.o.Columns) > 0 {
		return nil
	}
	var cols []string
	for i, n := range names {
		if n == l.o.WriteTimeField && l.o.WriteTimeField != "" {
			if i != len(names)-1 {
				return fmt.Errorf("bulk: %s: the write time field %s must come last", name, n)
			}
			continue
		}
		cols = append(cols, l.column(n))
	}
	return ins.setColumns(ctx, l, cols)
}

func send(ctx context.Context, out chan<- []record, batch []record) error {
	if len(batch) == 0 {
		return nil
	}
	select {
	case out <- batch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// readJSON reads JSON lines: one object per line, its keys naming fields.
func (l *loader) readJSON(ctx context.Context, name string, r io.Reader, ins *inserter, out chan<- []record) error {
	if ins.prepared == nil {
		cols := l.o.Columns
		if len(cols) == 0 {
			for _, c := range l.tbl.Columns {
				cols = append(cols, c.Name)
			}
		}
		if err := ins.setColumns(ctx, l, cols); err != nil {
			return err
		}
	}
	lr := newLineReader(r, l.o.CSV.MaxRecordBytes)
	var batch []record
	for {
		text, line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, errTooLong) {
			return fmt.Errorf("bulk: read %s: %w", name, err)
		}
		if err == nil && len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		l.c.records.Add(1)
		text = bytes.Clone(text) // the reader reuses its buffer; the record goes to a worker
		rec := record{source: name, line: line, raw: string(text)}
		var reason string
		switch {
		case err != nil:
			reason = fmt.Sprintf("line longer than %d bytes", lr.max)
		case !utf8.Valid(text):
			reason = "invalid UTF-8"
		default:
			obj, derr := decodeObject(text)
			if derr != nil {
				reason = derr.Error()
			}
			rec.object = obj
		}
		if reason != "" {
			if err := l.reject(name, line, rec.raw, reason); err != nil {
				return err
			}
			continue
		}
		batch = append(batch, rec)
		if len(batch) == batchSize {
			if err := send(ctx, out, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	return send(ctx, out, batch)
}

// decodeObject decodes one JSON lines record.
func decodeObject(text []byte) (map[string][]byte, error) {
	obj, err := values.DecodeObject(text)
	if err != nil {
		var ve *values.Error
		if errors.As(err, &ve) {
			return nil, errors.New(ve.Message("[json]"))
		}
		return nil, err
	}
	out := make(map[string][]byte, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	return out, nil
}

// fromJSON decodes one JSON value; JSON null is null.
func fromJSON(t *cqltype.Type, raw []byte) ([]byte, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	return values.FromJSON(t, json.RawMessage(raw))
}

// lineReader reads lines of at most max bytes.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line int
	buf  []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = 1 << 20
	}
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its end, and its number; a line over
// the limit comes back cut, with errTooLong, and is skipped whole.
func (lr *lineReader) next() ([]byte, int, error) {
	lr.buf = lr.buf[:0]
	lr.line++
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+1 {
				tooLong = true
				lr.buf = append(lr.buf, chunk[:max(0, lr.max-len(lr.buf))]...)
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(lr.buf) == 0 && !tooLong {
			return nil, 0, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, 0, err
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(lr.buf, []byte("\n")), []byte("\r"))
		if tooLong {
			return line, lr.line, errTooLong
		}
		return line, lr.line, nil
	}
}

// Rejects writes rejected records as JSON lines: where each was, why it
// was rejected and its text, so that none is lost and each can be fixed
// and loaded again.
type Rejects struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

// NewRejects writes rejects to w.
func NewRejects(w io.Writer) *Rejects { return &Rejects{w: w} }

// Reject is one line of a rejects file.
type Reject struct {
	Source string `json:"source"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
	Record string `json:"record"`
	// RecordBase64 holds the record's bytes when they are not UTF-8.
	RecordBase64 []byte `json:"record_base64,omitempty"`
}

// Write records one reject.
func (r *Rejects) Write(source string, line int, reason, raw string) error {
	rj := Reject{Source: source, Line: line, Reason: reason, Record: strings.TrimRight(raw, "\r\n")}
	if !utf8.ValidString(raw) {
		rj.Record, rj.RecordBase64 = strings.ToValidUTF8(rj.Record, "\uFFFD"), []byte(raw)
	}
	b, err := json.Marshal(rj)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	_, err = r.w.Write(append(b, '\n'))
	return err
}

// Count returns the rejects written.
func (r *Rejects) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
