package exec

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

func TestBindValues(t *testing.T) {
	specs := []ColumnSpec{
		{Keyspace: "ks", Table: "t", Name: "k", Type: cqltype.IntType},
		{Keyspace: "ks", Table: "t", Name: "v", Type: cqltype.TextType},
	}
	vals, unset, err := bindValues(specs, &Params{Values: [][]byte{be32(1), nil}})
	if err != nil || !bytes.Equal(vals[0], be32(1)) || vals[1] != nil || unset[0] || unset[1] {
		t.Fatalf("positional: %x %v %v", vals, unset, err)
	}
	vals, unset, err = bindValues(specs, &Params{Values: [][]byte{[]byte("x"), be32(2)}, Unset: []bool{true, false}, Names: []string{"v", "k"}})
	if err != nil || !bytes.Equal(vals[0], be32(2)) || !bytes.Equal(vals[1], []byte("x")) || unset[0] || !unset[1] {
		t.Fatalf("named: %x %v %v", vals, unset, err)
	}
	for _, tc := range []struct {
		p    Params
		want string
	}{
		{Params{Values: [][]byte{be32(1)}}, "there were 2 markers(?) in CQL but 1 bound variables"},
		{Params{Values: [][]byte{{1, 2, 3}, nil}}, ""}, // the marshaller's message
		{Params{Values: [][]byte{be32(1), {0xff}}}, ""},
		{Params{Values: [][]byte{be32(1)}, Names: []string{"k"}}, "No value provided for bind variable v"},
	} {
		_, _, err := bindValues(specs, &tc.p)
		var e *Error
		if !errors.As(err, &e) || e.Code != wire.CodeInvalid {
			t.Errorf("%+v: got %v, want an Invalid error", tc.p, err)
			continue
		}
		if tc.want != "" && e.Message != tc.want {
			t.Errorf("%+v: message %q, want %q", tc.p, e.Message, tc.want)
		}
	}
	// An unset value is not validated.
	if _, _, err := bindValues(specs, &Params{Values: [][]byte{{1}, nil}, Unset: []bool{true, false}}); err != nil {
		t.Errorf("an unset value was validated: %v", err)
	}
}

func TestStatementID(t *testing.T) {
	want := md5.Sum([]byte("ksSELECT * FROM t"))
	if got := statementID("ks", "SELECT * FROM t"); !bytes.Equal(got, want[:]) {
		t.Errorf("id %x, want %x", got, want)
	}
	if bytes.Equal(statementID("a", "SELECT * FROM t"), statementID("b", "SELECT * FROM t")) {
		t.Error("the keyspace is not part of the id")
	}
}

func TestPreparedCacheEvicts(t *testing.T) {
	c := newPreparedCache(3)
	for i := range 5 {
		id := []byte(fmt.Sprint(i))
		if got := c.put(&prepared{id: id}); !bytes.Equal(got.id, id) {
			t.Fatal("put returned another statement")
		}
		if i == 2 {
			c.get([]byte("0")) // 0 is now the most recently used
		}
	}
	if c.len() != 3 {
		t.Fatalf("%d cached, want 3", c.len())
	}
	for id, want := range map[string]bool{"0": true, "1": false, "2": false, "3": true, "4": true} {
		if got := c.get([]byte(id)) != nil; got != want {
			t.Errorf("statement %s cached = %v, want %v", id, got, want)
		}
	}
	first := c.get([]byte("4"))
	if again := c.put(&prepared{id: []byte("4")}); again != first {
		t.Error("put replaced a cached statement")
	}
}

func TestWriteTimestampIncreases(t *testing.T) {
	e := &Executor{}
	now := time.UnixMicro(1000)
	a := e.writeTimestamp(now)
	b := e.writeTimestamp(now)
	c := e.writeTimestamp(now.Add(-time.Second))
	if a != 1000 || b != 1001 || c != 1002 {
		t.Errorf("timestamps %d %d %d, want 1000 1001 1002", a, b, c)
	}
	if d := e.writeTimestamp(time.UnixMicro(5000)); d != 5000 {
		t.Errorf("timestamp %d, want the clock's 5000", d)
	}
}

func TestToError(t *testing.T) {
	if e := toError(errors.New("boom")); e.Code != wire.CodeServer {
		t.Errorf("plain error mapped to %#x", e.Code)
	}
	if e := toError(fmt.Errorf("wrapped: %w", invalidf("bad"))); e.Code != wire.CodeInvalid || e.Message != "bad" {
		t.Errorf("wrapped Invalid mapped to %#x %q", e.Code, e.Message)
	}
	if e := toError(cqltype.Validate(cqltype.IntType, []byte{1})); e.Code != wire.CodeInvalid {
		t.Errorf("marshal error mapped to %#x", e.Code)
	}
}

// FuzzBindValues feeds client bytes to binding: every value is accepted only
// if valid for its receiver's type, and nothing panics.
func FuzzBindValues(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1}, []byte("text"), uint8(0))
	f.Add([]byte{1, 2, 3}, []byte{0xff}, uint8(1))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 9}, []byte{}, uint8(2))
	types := []*cqltype.Type{
		cqltype.IntType, cqltype.TextType, cqltype.MustParse("list<int>"), cqltype.MustParse("map<text, frozen<set<uuid>>>"),
		cqltype.DecimalType, cqltype.MustParse("tuple<int, text>"), cqltype.DurationType, cqltype.TimeuuidType,
	}
	f.Fuzz(func(t *testing.T, a, b []byte, ti uint8) {
		specs := []ColumnSpec{{Name: "a", Type: types[int(ti)%len(types)]}, {Name: "b", Type: types[int(ti/8)%len(types)]}}
		vals, _, err := bindValues(specs, &Params{Values: [][]byte{a, b}})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != wire.CodeInvalid {
				t.Fatalf("binding failed with %v, want an Invalid error", err)
			}
			return
		}
		for i, v := range vals {
			if err := cqltype.Validate(specs[i].Type, v); err != nil {
				t.Fatalf("bound an invalid %s %x: %v", specs[i].Type, v, err)
			}
		}
	})
}
