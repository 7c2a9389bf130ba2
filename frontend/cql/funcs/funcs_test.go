package funcs

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// types makes arguments of the named types, shown by their type's name; ""
// is an argument of unknown type, shown as a marker.
func types(ss ...string) []Arg {
	args := make([]Arg, len(ss))
	for i, s := range ss {
		args[i].Text = "?"
		if s != "" {
			args[i] = Arg{Text: s, Type: cqltype.MustParse(s)}
		}
	}
	return args
}

// call looks a function up by argument types and calls it.
func call(t *testing.T, name string, argTypes []Arg, args ...[]byte) []byte {
	t.Helper()
	f, err := Lookup("", name, argTypes)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	v, err := f.Call(args)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	if v != nil {
		if err := cqltype.Validate(f.Return, v); err != nil {
			t.Fatalf("%s returned an invalid %s: %x: %v", f, f.Return, v, err)
		}
	}
	return v
}

func TestLookup(t *testing.T) {
	tests := []struct {
		ks, name string
		args     []Arg
		want     string // the signature, or the error message
		err      bool
	}{
		{"", "totimestamp", types("date"), "system.totimestamp : (date) -> timestamp", false},
		{"system", "totimestamp", types("timeuuid"), "system.totimestamp : (timeuuid) -> timestamp", false},
		{"", "tounixtimestamp", types("timestamp"), "system.tounixtimestamp : (timestamp) -> bigint", false},
		{"", "now", nil, "system.now : () -> timeuuid", false},
		{"", "blobasint", types("blob"), "system.blobasint : (blob) -> int", false},
		{"", "varcharasblob", types("text"), "system.varcharasblob : (text) -> blob", false},
		{"", "textasblob", types("ascii"), "system.textasblob : (text) -> blob", false},
		{"", "count", types("list<int>"), "system.count : (list<int>) -> bigint", false},
		{"", "max", types("text"), "system.max : (text) -> text", false},
		{"", "sum", types("int"), "system.sum : (int) -> int", false},
		{"", "sum", types("counter"), "system.sum : (counter) -> counter", false},
		{"", "avg", types("decimal"), "system.avg : (decimal) -> decimal", false},
		{"", "countrows", nil, "system.countrows : () -> bigint", false},
		{"", "castAsInt", types("double"), "system.castAsInt : (double) -> int", false},
		{"", "castasint", types("double"), "Unknown function 'castasint'", true},
		{"", "todate", types(""), "Ambiguous call to function todate (can be matched by following signatures: " +
			"system.todate : (timeuuid) -> date, system.todate : (timestamp) -> date): use type casts to disambiguate", true},
		{"", "nosuch", nil, "Unknown function 'nosuch'", true},
		{"ks", "now", nil, "Unknown function 'ks.now'", true},
		{"", "toTimestamp", types("date"), "Unknown function 'toTimestamp'", true},
		{"", "now", types("int"), "Invalid number of arguments in call to function system.now: 0 required but 1 provided", true},
		{"", "dateof", types("uuid"), "Type error: uuid cannot be passed as argument 0 of function system.dateof of type timeuuid", true},
		{"", "totimestamp", types("int"), "Invalid call to function totimestamp, none of its type signatures match " +
			"(known type signatures: system.totimestamp : (timeuuid) -> timestamp, system.totimestamp : (date) -> timestamp)", true},
		{"", "sum", types("text"), "Invalid call to function sum, none of its type signatures match (known type signatures: " +
			"system.sum : (tinyint) -> tinyint, system.sum : (smallint) -> smallint, system.sum : (int) -> int, " +
			"system.sum : (bigint) -> bigint, system.sum : (float) -> float, system.sum : (double) -> double, " +
			"system.sum : (decimal) -> decimal, system.sum : (varint) -> varint, system.sum : (counter) -> counter)", true},
	}
	for _, tc := range tests {
		f, err := Lookup(tc.ks, tc.name, tc.args)
		if tc.err {
			if err == nil {
				t.Errorf("%s(%v): found %s, want error", tc.name, tc.args, f)
				continue
			}
			var e *Error
			if !errors.As(err, &e) || e.Msg != tc.want {
				t.Errorf("%s(%v): error %q, want %q", tc.name, tc.args, err, tc.want)
			}
			if unknown := strings.HasPrefix(tc.want, "Unknown function"); errors.Is(err, ErrUnknown) != unknown {
				t.Errorf("%s: errors.Is(err, ErrUnknown) = %v", tc.name, !unknown)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s(%v): %v", tc.name, tc.args, err)
			continue
		}
		if f.String() != tc.want {
			t.Errorf("%s(%v) = %s, want %s", tc.name, tc.args, f, tc.want)
		}
	}
}

// TestLookupAmbiguousAggregate: an argument of unknown type fits min, max
// and count of every native type, listed once each in Cassandra's order
// (varchar is text).
func TestLookupAmbiguousAggregate(t *testing.T) {
	names := strings.Fields("ascii bigint blob boolean counter date decimal double duration float inet int smallint text time timestamp timeuuid tinyint uuid varint")
	for _, name := range []string{"min", "max", "count"} {
		sigs := make([]string, len(names))
		for i, n := range names {
			ret := n
			if name == "count" {
				ret = "bigint"
			}
			sigs[i] = "system." + name + " : (" + n + ") -> " + ret
		}
		want := "Ambiguous call to function " + name + " (can be matched by following signatures: " +
			strings.Join(sigs, ", ") + "): use type casts to disambiguate"
		_, err := Lookup("", name, []Arg{{Text: "?"}})
		var e *Error
		if !errors.As(err, &e) || e.Msg != want {
			t.Errorf("%s(?): %v\nwant %s", name, err, want)
		}
	}
}

// TestLookupLiterals: literals and markers take the type of the parameter
// they fit, exactly the one of their preferred type; errors show arguments
// as written and name the function in full, as Cassandra's validateTypes.
func TestLookupLiterals(t *testing.T) {
	lit := func(k ast.LitKind, text string) Arg {
		term := &ast.Literal{Kind: k, Text: text}
		return Arg{Text: values.TermText(term), Term: term}
	}
	marker := Arg{Text: "?", Term: &ast.Bind{}}
	tests := []struct {
		name string
		args []Arg
		want string // the parameter types chosen, or the error
	}{
		{"totimestamp", []Arg{lit(ast.LitString, "2024-01-01")}, "date"},
		{"totimestamp", []Arg{{Text: "tu", Type: cqltype.TimeuuidType}}, "timeuuid"},
		{"blobasint", []Arg{lit(ast.LitBlob, "0x00000001")}, "blob"},
		{"intasblob", []Arg{lit(ast.LitInteger, "1")}, "int"},
		{"blobasint", []Arg{lit(ast.LitNull, "null")}, "blob"},
		{"sum", []Arg{lit(ast.LitInteger, "1")}, "int"},
		{"sum", []Arg{lit(ast.LitInteger, "3000000000")}, "bigint"},
		{"sum", []Arg{lit(ast.LitInteger, "-9223372036854775809")}, "varint"},
		{"sum", []Arg{lit(ast.LitFloat, "1.5")}, "double"},
		{"sum", []Arg{lit(ast.LitFloat, "NaN")}, "double"},
		{"sum", []Arg{lit(ast.LitFloat, "0.10000000000000000001")}, "decimal"},
		{"sum", []Arg{lit(ast.LitFloat, "1e400")}, "decimal"},
		{"sum", []Arg{lit(ast.LitFloat, "-Infinity")}, "double"},
		{"max", []Arg{lit(ast.LitString, "a")}, "ascii"},
		{"max", []Arg{lit(ast.LitString, "é")}, "text"},
		{"max", []Arg{lit(ast.LitUUID, "d2177dd0-eaa2-11de-a572-001b779c76e3")}, "timeuuid"},
		{"max", []Arg{lit(ast.LitUUID, "d2177dd0-eaa2-41de-a572-001b779c76e3")}, "uuid"},
		{"max", []Arg{lit(ast.LitBoolean, "true")}, "boolean"},
		{"max", []Arg{lit(ast.LitDuration, "1h")}, "duration"},
		{"mintimeuuid", []Arg{marker}, "timestamp"},
		{"totimestamp", []Arg{marker}, "Ambiguous call to function totimestamp (can be matched by following signatures: " +
			"system.totimestamp : (timeuuid) -> timestamp, system.totimestamp : (date) -> timestamp): use type casts to disambiguate"},
		{"blobasint", []Arg{lit(ast.LitInteger, "1")},
			"Type error: 1 cannot be passed as argument 0 of function system.blobasint of type blob"},
		{"intasblob", []Arg{lit(ast.LitString, "x")},
			"Type error: 'x' cannot be passed as argument 0 of function system.intasblob of type int"},
		// A blob reads any value (Cassandra's BytesType); a value of another
		// type is refused by the parameter's type.
		{"blobasint", []Arg{{Text: "v", Type: cqltype.TextType}}, "blob"},
		{"intasblob", []Arg{{Text: "v", Type: cqltype.TextType}},
			"Type error: v cannot be passed as argument 0 of function system.intasblob of type int"},
		{"varintasblob", []Arg{{Text: "n", Type: cqltype.BigintType}}, "varint"},
		{"varintasblob", []Arg{{Text: "n", Type: cqltype.SmallintType}},
			"Type error: n cannot be passed as argument 0 of function system.varintasblob of type varint"},
		{"uuidasblob", []Arg{{Text: "system.now()", Type: cqltype.TimeuuidType}}, "uuid"},
		{"tounixtimestamp", []Arg{{Text: "n", Type: cqltype.BigintType}}, "timestamp"},
		{"timeasblob", []Arg{{Text: "n", Type: cqltype.BigintType}}, "time"},
		{"dateasblob", []Arg{{Text: "n", Type: cqltype.BigintType}},
			"Type error: n cannot be passed as argument 0 of function system.dateasblob of type date"},
		{"blobasint", []Arg{{Text: "system.intasblob(v)", Type: cqltype.BlobType}, marker},
			"Invalid number of arguments in call to function system.blobasint: 1 required but 2 provided"},
	}
	for _, tc := range tests {
		f, err := Lookup("", tc.name, tc.args)
		got := ""
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%s: %T %v", tc.name, err, err)
			}
			got = e.Msg
		} else {
			s := make([]string, len(f.Args))
			for i, a := range f.Args {
				s[i] = a.String()
			}
			got = strings.Join(s, ", ")
		}
		if got != tc.want {
			t.Errorf("%s(%s) = %s, want %s", tc.name, tc.args[0].Text, got, tc.want)
		}
	}
}

const exampleTimeuuid = "d2177dd0eaa211dea572001b779c76e3" // 2009-12-17 00:26:29.805 UTC

func TestTimeFunctions(t *testing.T) {
	tu, ts, date := types("timeuuid"), types("timestamp"), types("date")
	ms := int64(1261009589805)
	if got := call(t, "totimestamp", tu, unhex(exampleTimeuuid)); !bytes.Equal(got, bigint(ms)) {
		t.Errorf("totimestamp(timeuuid) = %x", got)
	}
	if got := call(t, "dateof", tu, unhex(exampleTimeuuid)); !bytes.Equal(got, bigint(ms)) {
		t.Errorf("dateof = %x", got)
	}
	if got := call(t, "unixtimestampof", tu, unhex(exampleTimeuuid)); !bytes.Equal(got, bigint(ms)) {
		t.Errorf("unixtimestampof = %x", got)
	}
	if got := call(t, "tounixtimestamp", tu, unhex(exampleTimeuuid)); !bytes.Equal(got, bigint(ms)) {
		t.Errorf("tounixtimestamp(timeuuid) = %x", got)
	}
	if got := call(t, "todate", tu, unhex(exampleTimeuuid)); !bytes.Equal(got, unhex("80003903")) {
		t.Errorf("todate(timeuuid) = %x", got)
	}
	if got := call(t, "todate", ts, bigint(ms)); !bytes.Equal(got, unhex("80003903")) {
		t.Errorf("todate(timestamp) = %x", got)
	}
	// Like Cassandra, todate truncates toward zero: 1969-12-31 23:00 is day 0.
	if got := call(t, "todate", ts, bigint(-3600000)); !bytes.Equal(got, unhex("80000000")) {
		t.Errorf("todate(-1h) = %x", got)
	}
	if got := call(t, "totimestamp", date, unhex("80003903")); !bytes.Equal(got, bigint(1261008000000)) {
		t.Errorf("totimestamp(date) = %x", got)
	}
	if got := call(t, "tounixtimestamp", date, unhex("7fffffff")); !bytes.Equal(got, bigint(-86400000)) {
		t.Errorf("tounixtimestamp(date) = %x", got)
	}
	if got := call(t, "tounixtimestamp", ts, []byte{}); got != nil {
		t.Errorf("tounixtimestamp(empty) = %x, want null", got)
	}
	if got := call(t, "totimestamp", date, nil); got != nil {
		t.Errorf("totimestamp(null) = %x, want null", got)
	}

	// mintimeuuid and maxtimeuuid bound every timeuuid of their ms.
	lo := call(t, "mintimeuuid", ts, bigint(ms))
	hi := call(t, "maxtimeuuid", ts, bigint(ms))
	for _, u := range [][]byte{lo, hi} {
		if got := call(t, "totimestamp", tu, u); !bytes.Equal(got, bigint(ms)) {
			t.Errorf("totimestamp(%x) = %x, want %d", u, got, ms)
		}
	}
	if cqltype.Compare(cqltype.TimeuuidType, lo, unhex(exampleTimeuuid)) > 0 ||
		cqltype.Compare(cqltype.TimeuuidType, unhex(exampleTimeuuid), hi) > 0 {
		t.Errorf("%x is not within [%x, %x]", exampleTimeuuid, lo, hi)
	}
	next := call(t, "mintimeuuid", ts, bigint(ms+1))
	if cqltype.Compare(cqltype.TimeuuidType, hi, next) >= 0 {
		t.Errorf("maxtimeuuid(%d) = %x is not before mintimeuuid(%d) = %x", ms, hi, ms+1, next)
	}

	f, _ := Lookup("", "blobasint", types("blob"))
	if _, err := f.Call([][]byte{unhex("01")}); err == nil ||
		err.(*Error).Msg != "In call to function system.blobasint, value 0x01 is not a valid binary representation for type int" {
		t.Errorf("blobasint(0x01): %v", err)
	}
	f, _ = Lookup("", "todate", tu)
	if _, err := f.Call([][]byte{unhex("01")}); err == nil {
		t.Error("todate accepted a 1-byte timeuuid")
	}
}

func TestCurrent(t *testing.T) {
	before := time.Now()
	var prev []byte
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		u := call(t, "now", nil)
		if u[6]>>4 != 1 || u[8]>>6 != 2 {
			t.Fatalf("now() = %x is not a version 1 RFC 4122 UUID", u)
		}
		if prev != nil && cqltype.Compare(cqltype.TimeuuidType, prev, u) >= 0 {
			t.Fatalf("now() went from %x to %x", prev, u)
		}
		if seen[string(u)] {
			t.Fatalf("now() repeated %x", u)
		}
		seen[string(u)], prev = true, u
	}
	after := time.Now()
	ms := int64(binary.BigEndian.Uint64(call(t, "totimestamp", types("timeuuid"), prev)))
	// The generator runs ahead of the clock by at most one tick per call.
	if ms < before.UnixMilli() || ms > after.Add(time.Second).UnixMilli() {
		t.Errorf("now() is at %d ms, outside [%d, %d]", ms, before.UnixMilli(), after.UnixMilli())
	}
	if u := call(t, "uuid", nil); u[6]>>4 != 4 || u[8]>>6 != 2 {
		t.Errorf("uuid() = %x is not a version 4 UUID", u)
	}
	if a, b := call(t, "uuid", nil), call(t, "uuid", nil); bytes.Equal(a, b) {
		t.Errorf("uuid() repeated %x", a)
	}
	if f, _ := Lookup("", "now", nil); f.Deterministic {
		t.Error("now() claims to be deterministic")
	}
	ts := int64(binary.BigEndian.Uint64(call(t, "currenttimestamp", nil)))
	if ts < before.UnixMilli() || ts > time.Now().UnixMilli() {
		t.Errorf("currenttimestamp() = %d", ts)
	}
	day := int64(binary.BigEndian.Uint32(call(t, "currentdate", nil))) - dateEpoch
	if want := time.Now().Unix() / 86400; day != want && day != want-1 {
		t.Errorf("currentdate() = day %d, want %d", day, want)
	}
	if ns := int64(binary.BigEndian.Uint64(call(t, "currenttime", nil))); ns < 0 || ns >= 86400e9 {
		t.Errorf("currenttime() = %d", ns)
	}
	call(t, "currenttimeuuid", nil)
}

func TestBlobConversions(t *testing.T) {
	for _, nt := range nativeTypes {
		if nt.typ.Kind == cqltype.Blob {
			continue
		}
		from, err := Lookup("", "blobas"+nt.name, types("blob"))
		if err != nil {
			t.Fatalf("blobas%s: %v", nt.name, err)
		}
		to, err := Lookup("", nt.name+"asblob", []Arg{{Type: nt.typ}})
		if err != nil {
			t.Fatalf("%sasblob: %v", nt.name, err)
		}
		if !from.Return.Equal(nt.typ) || !to.Return.Equal(cqltype.BlobType) {
			t.Errorf("%s: return types %s and %s", nt.name, from.Return, to.Return)
		}
	}
	if got := call(t, "blobasint", types("blob"), unhex("00000007")); !bytes.Equal(got, unhex("00000007")) {
		t.Errorf("blobasint = %x", got)
	}
	if got := call(t, "textasblob", types("text"), []byte("hé")); !bytes.Equal(got, []byte("hé")) {
		t.Errorf("textasblob = %x", got)
	}
}

func f64(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
func f32(f float32) []byte { return binary.BigEndian.AppendUint32(nil, math.Float32bits(f)) }
func i32(n int32) []byte   { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func TestCast(t *testing.T) {
	tests := []struct {
		from, to string
		in       []byte
		want     string // Text of the result
	}{
		{"int", "tinyint", i32(300), "44"},
		{"int", "smallint", i32(-40000), "25536"},
		{"int", "bigint", i32(-5), "-5"},
		{"bigint", "int", bigint(1 << 40), "0"},
		{"double", "int", f64(1e20), "2147483647"},
		{"double", "int", f64(-1e20), "-2147483648"},
		{"double", "int", f64(math.NaN()), "0"},
		{"double", "tinyint", f64(1e20), "-1"},
		{"double", "bigint", f64(-2.9), "-2"},
		{"float", "double", f32(1.1), "1.100000023841858"},
		{"double", "float", f64(0.1), "0.1"},
		{"int", "decimal", i32(5), "5.0"},
		{"float", "decimal", f32(1.1), "1.100000023841858"},
		{"double", "decimal", f64(1e-7), "1.0E-7"},
		{"decimal", "int", unhex("00000001 ed"), "-1"},
		{"decimal", "int", unhex("fffffffe 01"), "100"},
		{"decimal", "double", unhex("00000002 0096"), "1.5"},
		{"decimal", "varint", unhex("00000001 13"), "1"},
		{"varint", "bigint", unhex("010000000000000001"), "1"},
		{"varint", "int", unhex("ff7f"), "-129"},
		{"varint", "double", unhex("0100"), "256.0"},
		{"double", "varint", f64(-3.7), "-3"},
		{"counter", "int", bigint(7), "7"},
		{"int", "text", i32(-5), "-5"},
		{"double", "ascii", f64(0.5), "0.5"},
		{"boolean", "text", []byte{1}, "true"},
		{"timestamp", "text", bigint(1261009589805), "2009-12-17T00:26:29.805Z"},
		{"date", "text", unhex("80003903"), "2009-12-17"},
		{"time", "text", bigint(3723000000004), "01:02:03.000000004"},
		{"inet", "text", unhex("7f000001"), "127.0.0.1"},
		{"uuid", "text", unhex(exampleTimeuuid), "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		{"timeuuid", "timestamp", unhex(exampleTimeuuid), "2009-12-17T00:26:29.805Z"},
		{"timeuuid", "date", unhex(exampleTimeuuid), "2009-12-17"},
		{"timestamp", "date", bigint(1261009589805), "2009-12-17"},
		{"date", "timestamp", unhex("80003903"), "2009-12-17T00:00:00.000Z"},
		{"ascii", "text", []byte("a"), "a"},
		{"int", "text", []byte{}, "null"},
		{"int", "double", []byte{}, "null"},
	}
	for _, tc := range tests {
		from, to := cqltype.MustParse(tc.from), cqltype.MustParse(tc.to)
		f, err := Cast(from, to)
		if err != nil || f == nil {
			t.Errorf("Cast(%s, %s): %v, %v", from, to, f, err)
			continue
		}
		got, err := f.Call([][]byte{tc.in})
		if err != nil {
			t.Errorf("cast(%x as %s) from %s: %v", tc.in, to, from, err)
			continue
		}
		if got != nil {
			if err := cqltype.Validate(to, got); err != nil {
				t.Errorf("cast(%x as %s): invalid result %x: %v", tc.in, to, got, err)
			}
		}
		if s := values.Text(to, got); s != tc.want {
			t.Errorf("cast(%s %s as %s) = %s, want %s", tc.from, values.Text(from, tc.in), tc.to, s, tc.want)
		}
	}
	if f, err := Cast(cqltype.IntType, cqltype.IntType); f != nil || err != nil {
		t.Errorf("Cast(int, int) = %v, %v; want nil, nil", f, err)
	}
	for _, bad := range [][2]string{{"text", "int"}, {"list<int>", "text"}, {"blob", "text"}, {"int", "counter"}, {"uuid", "timeuuid"}} {
		f, err := Cast(cqltype.MustParse(bad[0]), cqltype.MustParse(bad[1]))
		if err == nil {
			t.Errorf("Cast(%s, %s) = %s, want error", bad[0], bad[1], f)
		} else if want := bad[0] + " cannot be cast to " + bad[1]; err.(*Error).Msg != want {
			t.Errorf("Cast(%s, %s): %q, want %q", bad[0], bad[1], err, want)
		}
	}
	f, _ := Cast(cqltype.DoubleType, cqltype.DecimalType)
	if _, err := f.Call([][]byte{f64(math.Inf(1))}); err == nil {
		t.Error("cast(Infinity as decimal) succeeded")
	}
}

// TestCastRoundsOnce checks that a bigint becomes a float with one
// rounding, as Java's (float) does: 2^60 + 2^36 + 1 is just above the
// midpoint of two floats, but through a double it would land on the
// midpoint and round to even, down.
func TestCastRoundsOnce(t *testing.T) {
	f, err := Cast(cqltype.BigintType, cqltype.FloatType)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Call([][]byte{bigint(1<<60 + 1<<36 + 1)})
	if err != nil {
		t.Fatal(err)
	}
	if want := f32(float32(1<<60 + 1<<37)); !bytes.Equal(got, want) {
		t.Errorf("cast(2^60+2^36+1 as float) = %x, want %x", got, want)
	}
}
