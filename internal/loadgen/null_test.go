package loadgen

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/wire"
)

func TestNullHandler(t *testing.T) {
	ctx := context.Background()
	h := NewNullHandler("ks", "t", 5, netip.MustParseAddr("127.0.0.1"))
	w := newWorkloadStatements("ks", "t")
	code := func(err error) wire.ErrorCode {
		var we *wire.Error
		if !errors.As(err, &we) {
			t.Fatalf("%v is not a *wire.Error", err)
		}
		return we.Code
	}

	// The read is prepared with its shape, whatever its layout, and answers
	// one row of a blob of the row size.
	p, err := h.Prepare(ctx, nil, &wire.Prepare{Query: strings.ReplaceAll(w.read.text, " ", "\n\t ")})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Bound.Columns) != 2 || len(p.Bound.PKIndexes) != 1 || len(p.Result.Columns) != 1 || p.Result.Columns[0].Name != "v" {
		t.Fatalf("prepared read %+v", p)
	}
	two := []wire.Value{wire.BytesValue(make([]byte, 8)), wire.BytesValue(make([]byte, 8))}
	res, err := h.Execute(ctx, nil, &wire.Execute{ID: p.ID, Params: wire.QueryParams{Values: two, SkipMetadata: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rows, ok := res.(*wire.Rows); !ok || len(rows.Rows) != 1 || len(rows.Rows[0][0]) != 5 || !rows.Metadata.NoMetadata {
		t.Fatalf("read result %#v", res)
	}
	// Writes answer Void.
	p, err = h.Prepare(ctx, nil, &wire.Prepare{Query: w.insert.text})
	if err != nil {
		t.Fatal(err)
	}
	three := append(two, wire.BytesValue([]byte("x")))
	if res, err := h.Execute(ctx, nil, &wire.Execute{ID: p.ID, Params: wire.QueryParams{Values: three}}); err != nil {
		t.Fatal(err)
	} else if _, ok := res.(*wire.Void); !ok {
		t.Fatalf("insert result %#v", res)
	}
	// Too few values, unknown statements and IDs are errors.
	if _, err := h.Execute(ctx, nil, &wire.Execute{ID: p.ID, Params: wire.QueryParams{Values: two}}); code(err) != wire.CodeInvalid {
		t.Fatalf("insert with two values: %v", err)
	}
	if _, err := h.Prepare(ctx, nil, &wire.Prepare{Query: "SELECT * FROM ks.other"}); code(err) != wire.CodeInvalid {
		t.Fatalf("unknown statement: %v", err)
	}
	if _, err := h.Query(ctx, nil, &wire.Query{Query: "DROP TABLE ks.t"}); code(err) != wire.CodeInvalid {
		t.Fatalf("unknown query: %v", err)
	}
	_, err = h.Execute(ctx, nil, &wire.Execute{ID: []byte{1, 2}})
	if we := (*wire.Error)(nil); !errors.As(err, &we) || we.Code != wire.CodeUnprepared || string(we.ID) != "\x01\x02" {
		t.Fatalf("unknown ID: %v", err)
	}
	b := &wire.Batch{Children: []wire.BatchChild{{ID: p.ID, Values: three}, {ID: []byte{9}}}}
	if _, err := h.Batch(ctx, nil, b); code(err) != wire.CodeUnprepared {
		t.Fatalf("batch with an unknown ID: %v", err)
	}
	b.Children = b.Children[:1]
	if res, err := h.Batch(ctx, nil, b); err != nil {
		t.Fatal(err)
	} else if _, ok := res.(*wire.Void); !ok {
		t.Fatalf("batch result %#v", res)
	}
	// USE and DDL.
	if res, err := h.Query(ctx, nil, &wire.Query{Query: `USE "ks"`}); err != nil || res.(*wire.SetKeyspace).Keyspace != "ks" {
		t.Fatalf("USE: %#v %v", res, err)
	}
	for _, s := range w.setup {
		if res, err := h.Query(ctx, nil, &wire.Query{Query: s}); err != nil {
			t.Fatal(err)
		} else if _, ok := res.(*wire.Void); !ok {
			t.Fatalf("%s: %#v", s, res)
		}
	}
	// system.local names this node and its token.
	res, err = h.Query(ctx, nil, &wire.Query{Query: "SELECT * FROM system.local WHERE key='local'"})
	if err != nil {
		t.Fatal(err)
	}
	rows := res.(*wire.Rows)
	for i, c := range rows.Metadata.Columns {
		switch c.Name {
		case "rpc_address":
			if string(rows.Rows[0][i]) != "\x7f\x00\x00\x01" {
				t.Fatalf("rpc_address %x", rows.Rows[0][i])
			}
		case "tokens":
			if string(rows.Rows[0][i]) != "\x00\x00\x00\x01\x00\x00\x00\x010" {
				t.Fatalf("tokens %x", rows.Rows[0][i])
			}
		}
	}
}

func TestCollection(t *testing.T) {
	if got := textMap([]byte("k"), []byte("vv")); string(got) != "\x00\x00\x00\x01\x00\x00\x00\x01k\x00\x00\x00\x02vv" {
		t.Fatalf("map %q", got)
	}
	if got := set([]byte("a"), []byte("b")); string(got) != "\x00\x00\x00\x02\x00\x00\x00\x01a\x00\x00\x00\x01b" {
		t.Fatalf("set %q", got)
	}
}

// FuzzNullHandler: whatever a client sends, the handler answers a result or
// a *wire.Error, never panics.
func FuzzNullHandler(f *testing.F) {
	w := newWorkloadStatements("ks", "t")
	for _, s := range []string{w.insert.text, w.read.text, w.scan.text, w.counter.text, `USE "ks"`, "CREATE TABLE x", "SELECT * FROM system.local WHERE key='local'", "", " \t\n"} {
		f.Add(s, []byte{}, 2)
	}
	f.Add("", make([]byte, 16), 3)
	h := NewNullHandler("ks", "t", 3, netip.MustParseAddr("::1"))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, text string, id []byte, values int) {
		vals := make([]wire.Value, min(max(values, 0), 8))
		check := func(res wire.Result, err error) {
			var we *wire.Error
			if (err == nil) == (res == nil) || err != nil && !errors.As(err, &we) {
				t.Fatalf("%q: result %#v, error %v", text, res, err)
			}
		}
		check(h.Query(ctx, nil, &wire.Query{Query: text, Params: wire.QueryParams{Values: vals}}))
		p, err := h.Prepare(ctx, nil, &wire.Prepare{Query: text})
		if err == nil {
			id = p.ID
		}
		check(h.Execute(ctx, nil, &wire.Execute{ID: id, Params: wire.QueryParams{Values: vals}}))
		check(h.Batch(ctx, nil, &wire.Batch{Children: []wire.BatchChild{{ID: id, Values: vals}, {Query: text}}}))
	})
}
