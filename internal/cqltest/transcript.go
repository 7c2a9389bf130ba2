package cqltest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Transcripts run CQL behaviour tests written as a session would be, in
// the manner of ScyllaDB's test/cql: name.cql holds statements, each ending
// with ";" at the end of a line (lines starting with "--" are comments),
// and name.result beside it holds what a gocql session answers to each:
//
//	> SELECT c, v FROM t WHERE p = 1;
//	 c | v
//	---+---
//	 1 | a
//	(1 rows)
//
//	> SELECT * FROM t WHERE v = 'a';
//	Invalid: Cannot execute this query as it might involve data filtering ...
//
// Values are written as values.Text writes them, statements without rows
// answer OK; results come in one page. Each transcript runs in a fresh keyspace named after its file.
// With rewrite the .result files are written instead of compared, for a
// reviewer to read in the diff.
func (s *Server) RunTranscripts(t *testing.T, dir string, rewrite bool) {
	files, err := filepath.Glob(filepath.Join(dir, "*.cql"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts in %s", dir)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".cql")
		t.Run(name, func(t *testing.T) {
			stmts, err := readStatements(file)
			if err != nil {
				t.Fatal(err)
			}
			c := s.Cluster()
			c.Keyspace = "transcript_" + name
			// Conditional statements answer with columns of their own
			// ([applied], then the row read), not the prepared ones.
			c.DisableSkipMetadata = true
			sess := s.connectTo(t, c)
			var out strings.Builder
			for _, st := range stmts {
				fmt.Fprintf(&out, "> %s\n", st)
				out.WriteString(answer(sess, st))
				out.WriteString("\n")
			}
			result := strings.TrimSuffix(file, ".cql") + ".result"
			if rewrite {
				if err := os.WriteFile(result, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(result)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if got := out.String(); got != string(want) {
				t.Errorf("%s differs (run with -rewrite and read the diff):\n%s", result, lineDiff(string(want), got))
			}
		})
	}
}

// readStatements splits a transcript into its statements, each on one line.
func readStatements(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var stmts []string
	var cur []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		cur = append(cur, line)
		if strings.HasSuffix(line, ";") {
			stmts = append(stmts, strings.Join(cur, " "))
			cur = nil
		}
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("%s: statement without a final ';': %s", file, strings.Join(cur, " "))
	}
	return stmts, sc.Err()
}

// answer runs one statement and writes its rows or its error.
func answer(sess *gocql.Session, stmt string) string {
	// Unpaged, as cqlsh with PAGING OFF: Cassandra refuses to page some
	// statements (ORDER BY with IN), and paging has tests of its own.
	it := sess.Query(strings.TrimSuffix(stmt, ";")).PageSize(0).Iter()
	cols := it.Columns()
	var rows [][]string
	for {
		vals := make([]any, len(cols))
		raws := make([]rawValue, len(cols))
		for i := range vals {
			vals[i] = &raws[i]
		}
		if len(cols) == 0 || !it.Scan(vals...) {
			break
		}
		row := make([]string, len(cols))
		for i, r := range raws {
			row[i] = r.text
		}
		rows = append(rows, row)
	}
	if err := it.Close(); err != nil {
		return errorText(err) + "\n"
	}
	if len(cols) == 0 {
		return "OK\n"
	}
	return table(cols, rows)
}

// errorText names a server error by its protocol code, as cqlsh does.
func errorText(err error) string {
	var re gocql.RequestError
	if errors.As(err, &re) {
		return fmt.Sprintf("%s: %s", wire.ErrorCode(re.Code()), re.Message())
	}
	return "driver error: " + err.Error()
}

// table lays rows out as cqlsh does, columns padded to their widest cell.
func table(cols []gocql.ColumnInfo, rows [][]string) string {
	width := make([]int, len(cols))
	for i, c := range cols {
		width[i] = len(c.Name)
		for _, r := range rows {
			width[i] = max(width[i], len(r[i]))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString(" |")
			}
			fmt.Fprintf(&b, " %-*s", width[i], c)
		}
		// No trailing blanks: the files stay clean in review.
		trimmed := strings.TrimRight(b.String(), " ")
		b.Reset()
		b.WriteString(trimmed)
		b.WriteString("\n")
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	line(names)
	for i, w := range width {
		if i > 0 {
			b.WriteString("+")
		}
		b.WriteString(strings.Repeat("-", w+2))
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r)
	}
	fmt.Fprintf(&b, "(%d rows)\n", len(rows))
	return b.String()
}

// rawValue takes a column's serialized value from gocql and keeps its text.
type rawValue struct{ text string }

func (r *rawValue) UnmarshalCQL(info gocql.TypeInfo, data []byte) error {
	t, err := typeOf(info)
	if err != nil {
		return err
	}
	r.text = values.Text(t, data)
	return nil
}

// typeOf is the CQL type of a result column as the driver describes it.
func typeOf(info gocql.TypeInfo) (*cqltype.Type, error) {
	switch info.Type() {
	case gocql.TypeList, gocql.TypeSet, gocql.TypeMap:
		ct := info.(gocql.CollectionType)
		elem, err := typeOf(ct.Elem)
		if err != nil {
			return nil, err
		}
		switch info.Type() {
		case gocql.TypeList:
			return cqltype.ListOf(elem, false), nil
		case gocql.TypeSet:
			return cqltype.SetOf(elem, false), nil
		}
		key, err := typeOf(ct.Key)
		if err != nil {
			return nil, err
		}
		return cqltype.MapOf(key, elem, false), nil
	case gocql.TypeTuple:
		tt := info.(gocql.TupleTypeInfo)
		elems := make([]*cqltype.Type, len(tt.Elems))
		for i, e := range tt.Elems {
			var err error
			if elems[i], err = typeOf(e); err != nil {
				return nil, err
			}
		}
		return cqltype.TupleOf(elems...), nil
	case gocql.TypeUDT:
		ut := info.(gocql.UDTTypeInfo)
		names := make([]string, len(ut.Elements))
		types := make([]*cqltype.Type, len(ut.Elements))
		for i, f := range ut.Elements {
			names[i] = f.Name
			var err error
			if types[i], err = typeOf(f.Type); err != nil {
				return nil, err
			}
		}
		return cqltype.UDTOf(ut.KeySpace, ut.Name, names, types), nil
	}
	if t, ok := nativeTypes[info.Type()]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("cqltest: no text form for type %s", info)
}

var nativeTypes = map[gocql.Type]*cqltype.Type{
	gocql.TypeAscii:     cqltype.AsciiType,
	gocql.TypeBigInt:    cqltype.BigintType,
	gocql.TypeBlob:      cqltype.BlobType,
	gocql.TypeBoolean:   cqltype.BooleanType,
	gocql.TypeCounter:   cqltype.CounterType,
	gocql.TypeDate:      cqltype.DateType,
	gocql.TypeDecimal:   cqltype.DecimalType,
	gocql.TypeDouble:    cqltype.DoubleType,
	gocql.TypeDuration:  cqltype.DurationType,
	gocql.TypeFloat:     cqltype.FloatType,
	gocql.TypeInet:      cqltype.InetType,
	gocql.TypeInt:       cqltype.IntType,
	gocql.TypeSmallInt:  cqltype.SmallintType,
	gocql.TypeText:      cqltype.TextType,
	gocql.TypeVarchar:   cqltype.TextType,
	gocql.TypeTime:      cqltype.TimeType,
	gocql.TypeTimestamp: cqltype.TimestampType,
	gocql.TypeTimeUUID:  cqltype.TimeuuidType,
	gocql.TypeTinyInt:   cqltype.TinyintType,
	gocql.TypeUUID:      cqltype.UUIDType,
	gocql.TypeVarint:    cqltype.VarintType,
}

// lineDiff shows the first lines where want and got part.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %q\n  got:  %q", i+1, wl, gl)
		}
	}
	return "(no difference by line)"
}
