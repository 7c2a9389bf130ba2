package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

func TestTypeEncoding(t *testing.T) {
	custom := func(class string) string {
		var e encoder
		e.short(0)
		e.string(marshalPackage + class)
		return hex.EncodeToString(e.b)
	}
	udt := cqltype.UDTOf("ks", "addr", []string{"street", "tags"},
		[]*cqltype.Type{cqltype.TextType, cqltype.SetOf(cqltype.IntType, false)})
	// One table drives encoding and decoding: each type's [option] bytes
	// in v3 and v4.
	tests := []struct {
		typ    *cqltype.Type
		v3, v4 string
	}{
		{cqltype.AsciiType, "0001", "0001"},
		{cqltype.BigintType, "0002", "0002"},
		{cqltype.BlobType, "0003", "0003"},
		{cqltype.BooleanType, "0004", "0004"},
		{cqltype.CounterType, "0005", "0005"},
		{cqltype.DecimalType, "0006", "0006"},
		{cqltype.DoubleType, "0007", "0007"},
		{cqltype.FloatType, "0008", "0008"},
		{cqltype.IntType, "0009", "0009"},
		{cqltype.TimestampType, "000b", "000b"},
		{cqltype.UUIDType, "000c", "000c"},
		{cqltype.TextType, "000d", "000d"},
		{cqltype.VarintType, "000e", "000e"},
		{cqltype.TimeuuidType, "000f", "000f"},
		{cqltype.InetType, "0010", "0010"},
		{cqltype.DateType, custom("SimpleDateType"), "0011"},
		{cqltype.TimeType, custom("TimeType"), "0012"},
		{cqltype.SmallintType, custom("ShortType"), "0013"},
		{cqltype.TinyintType, custom("ByteType"), "0014"},
		{cqltype.DurationType, custom("DurationType"), custom("DurationType")},
		{cqltype.ListOf(cqltype.IntType, false), "00200009", "00200009"},
		{cqltype.SetOf(cqltype.TextType, false), "0022000d", "0022000d"},
		{cqltype.MapOf(cqltype.TextType, cqltype.ListOf(cqltype.DateType, false), false),
			"0021000d0020" + custom("SimpleDateType"), "0021000d00200011"},
		{cqltype.TupleOf(cqltype.IntType, cqltype.TextType), "003100020009000d", "003100020009000d"},
		{udt, "0030" + "0002" + hex.EncodeToString([]byte("ks")) + "0004" + hex.EncodeToString([]byte("addr")) +
			"0002" + "0006" + hex.EncodeToString([]byte("street")) + "000d" +
			"0004" + hex.EncodeToString([]byte("tags")) + "00220009", ""},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			v    Version
			want string
		}{{V3, tt.v3}, {V4, tt.v4}} {
			if c.want == "" {
				c.want = tt.v3
			}
			got, err := AppendType(nil, tt.typ, c.v)
			if err != nil {
				t.Fatalf("%v v%d: %v", tt.typ, c.v, err)
			}
			if hex.EncodeToString(got) != c.want {
				t.Errorf("%v v%d: got %x, want %s", tt.typ, c.v, got, c.want)
			}
			back, rest, err := DecodeType(append(got, 0xEE))
			if err != nil || !back.Equal(tt.typ) || !bytes.Equal(rest, []byte{0xEE}) {
				t.Errorf("%v v%d: decoded %v rest %x err %v", tt.typ, c.v, back, rest, err)
			}
		}
	}
}

func TestDecodeTypeErrors(t *testing.T) {
	deep := strings.Repeat("0020", 100) + "0009"
	for _, in := range []string{"", "00", "0099", "0000", "00000003616263", "0020", "00210009", "0031ffff", deep} {
		b, _ := hex.DecodeString(in)
		_, _, err := DecodeType(b)
		var we *Error
		if !errors.As(err, &we) || we.Code != CodeProtocol {
			t.Errorf("DecodeType(%s) = %v, want a Protocol error", in, err)
		}
	}
	// v1's text ID and the class names of native types are read too.
	for _, in := range []string{"000a", "0000" + "0008" + hex.EncodeToString([]byte("UTF8Type"))} {
		b, _ := hex.DecodeString(in)
		if typ, _, err := DecodeType(b); err != nil || typ.Kind != cqltype.Text {
			t.Errorf("DecodeType(%s) = %v, %v; want text", in, typ, err)
		}
	}
}

func sampleRequests() []Message {
	return []Message{
		&Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "lz4"}},
		&AuthResponse{Token: []byte("\x00cassandra\x00cassandra")},
		&AuthResponse{},
		&Options{},
		&Query{Query: "SELECT * FROM t", Params: QueryParams{Consistency: One}},
		&Query{Query: "INSERT INTO t (a, b, c) VALUES (?, ?, ?)", Params: QueryParams{
			Consistency:       LocalQuorum,
			Values:            []Value{BytesValue([]byte{0, 0, 0, 1}), NullValue, BytesValue([]byte{})},
			SkipMetadata:      true,
			PageSize:          5000,
			PagingState:       []byte("state"),
			SerialConsistency: LocalSerial,
			Timestamp:         1234567890123456,
			HasTimestamp:      true,
		}},
		&Query{Query: "UPDATE t SET b = :b WHERE a = :a", Params: QueryParams{
			Consistency: Quorum,
			Values:      []Value{BytesValue([]byte("x")), BytesValue([]byte{1})},
			Names:       []string{"b", "a"},
		}},
		&Prepare{Query: "SELECT a FROM t WHERE a = ?"},
		&Execute{ID: []byte{1, 2, 3, 4}, Params: QueryParams{Consistency: All, Values: []Value{BytesValue([]byte("v"))}}},
		&Batch{Type: UnloggedBatch, Consistency: Quorum, Children: []BatchChild{
			{Query: "INSERT INTO t (a) VALUES (?)", Values: []Value{BytesValue([]byte{7})}},
			{ID: []byte{9, 9}, Values: []Value{NullValue, BytesValue([]byte{})}},
			{Query: "DELETE FROM t WHERE a = 1", Values: []Value{}},
		}, SerialConsistency: Serial, Timestamp: -5, HasTimestamp: true},
		&Register{Events: []string{TopologyChange, StatusChange, SchemaChanged}},
	}
}

// sampleV5Requests use what only v5 has.
func sampleV5Requests() []Message {
	return []Message{
		&Query{Query: "SELECT * FROM t", Params: QueryParams{Consistency: One, Keyspace: "ks", NowInSeconds: 1700000000, HasNowInSeconds: true}},
		&Query{Query: "SELECT * FROM t", Params: QueryParams{Consistency: One, Keyspace: "other", PageSize: 10}},
		&Prepare{Query: "SELECT a FROM t", Keyspace: "ks"},
		&Execute{ID: []byte{1}, ResultMetadataID: []byte{2, 3}, Params: QueryParams{Consistency: One, SkipMetadata: true, NowInSeconds: -1, HasNowInSeconds: true}},
		&Batch{Type: LoggedBatch, Consistency: One, Children: []BatchChild{{Query: "INSERT INTO t (a) VALUES (1)", Values: []Value{}}},
			Keyspace: "ks", NowInSeconds: 5, HasNowInSeconds: true},
	}
}

// normalizeRequest returns what m decodes as in v: a v5 EXECUTE always
// has a result metadata ID, empty when none was set.
func normalizeRequest(m Message, v Version) Message {
	if x, ok := m.(*Execute); ok && v >= V5 && x.ResultMetadataID == nil {
		y := *x
		y.ResultMetadataID = []byte{}
		return &y
	}
	return m
}

func TestRequestRoundTrip(t *testing.T) {
	for _, v := range []Version{V3, V4, V5} {
		samples := sampleRequests()
		if v == V5 {
			samples = append(samples, sampleV5Requests()...)
		}
		for _, m := range samples {
			m := normalizeRequest(m, v)
			body, err := m.AppendBody(nil, v)
			if err != nil {
				t.Fatalf("v%d %T: %v", v, m, err)
			}
			got, err := DecodeRequest(m.Opcode(), v, body)
			if err != nil {
				t.Fatalf("v%d %T: decode: %v", v, m, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("v%d: got %+v, want %+v", v, got, m)
			}
			// Every shorter body is malformed, never a panic.
			for i := range body {
				if _, err := DecodeRequest(m.Opcode(), v, body[:i]); err == nil && m.Opcode() != OpOptions {
					if _, ok := m.(*AuthResponse); !ok || i > 0 {
						t.Errorf("v%d %T: body cut to %d of %d bytes decoded", v, m, i, len(body))
					}
				}
			}
			// Trailing bytes are ignored, as Cassandra ignores them.
			if got, err := DecodeRequest(m.Opcode(), v, append(body, 0, 1)); err != nil || !reflect.DeepEqual(got, m) {
				t.Errorf("v%d %T: with trailing bytes: %+v, %v", v, m, got, err)
			}
		}
	}
}

func TestV5RequestsNeedV5(t *testing.T) {
	for _, m := range sampleV5Requests() {
		if _, ok := m.(*Execute); ok {
			continue // its metadata ID is simply not sent before v5
		}
		if _, err := m.AppendBody(nil, V4); err == nil {
			t.Errorf("%+v encoded in v4", m)
		}
	}
}

// TestQueryBytesV5 decodes a v5 QUERY written byte by byte from the spec:
// [int] flags, and the keyspace and now_in_seconds after the timestamp.
func TestQueryBytesV5(t *testing.T) {
	body, _ := hex.DecodeString("00000001" + "31" + // "1"
		"0001" + // ONE
		"00000184" + // page size, keyspace, now in seconds
		"00000064" + // page size 100
		"00026b73" + // keyspace "ks"
		"0000000a") // now 10
	m, err := DecodeRequest(OpQuery, V5, body)
	if err != nil {
		t.Fatal(err)
	}
	want := &Query{Query: "1", Params: QueryParams{Consistency: One, PageSize: 100, Keyspace: "ks", NowInSeconds: 10, HasNowInSeconds: true}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
	bad, _ := hex.DecodeString("00000001" + "31" + "0001" + "00000200")
	if _, err := DecodeRequest(OpQuery, V5, bad); err == nil {
		t.Error("flag 0x200 decoded")
	}
	empty, _ := hex.DecodeString("00000001" + "31" + "0001" + "00000080" + "0000")
	if _, err := DecodeRequest(OpQuery, V5, empty); err == nil {
		t.Error("an empty keyspace decoded")
	}
	prep, _ := hex.DecodeString("00000001" + "31" + "00000001" + "00026b73")
	if m, err := DecodeRequest(OpPrepare, V5, prep); err != nil || m.(*Prepare).Keyspace != "ks" {
		t.Errorf("PREPARE with keyspace: %+v, %v", m, err)
	}
}

// TestQueryBytes decodes a QUERY written byte by byte from the spec.
func TestQueryBytes(t *testing.T) {
	body, _ := hex.DecodeString("00000008" + hex.EncodeToString([]byte("SELECT 1")) +
		"0004" + // QUORUM
		"3d" + // values, page size, paging state, serial, timestamp
		"0003" + "00000001ff" + "ffffffff" + "fffffffe" +
		"00000064" + // page size 100
		"00000002abcd" +
		"0009" + // LOCAL_SERIAL
		"0000000000000010")
	m, err := DecodeRequest(OpQuery, V4, body)
	if err != nil {
		t.Fatal(err)
	}
	want := &Query{Query: "SELECT 1", Params: QueryParams{
		Consistency: Quorum, Values: []Value{BytesValue([]byte{0xff}), NullValue, UnsetValue},
		PageSize: 100, PagingState: []byte{0xab, 0xcd}, SerialConsistency: LocalSerial,
		Timestamp: 16, HasTimestamp: true,
	}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	// v3 has no unset: every negative length is null, as in Cassandra.
	m, err = DecodeRequest(OpQuery, V3, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(*Query).Params.Values[2]; got.Kind != Null {
		t.Errorf("v3 length -2 decoded as %+v, want null", got)
	}
	if _, err := (&Query{Params: QueryParams{Values: []Value{UnsetValue}}}).AppendBody(nil, V3); err == nil {
		t.Error("an unset value was encoded for v3")
	}
	// v4 refuses other negative lengths, and Long.MIN_VALUE timestamps.
	bad := bytes.Replace(body, []byte{0xff, 0xff, 0xff, 0xfe}, []byte{0xff, 0xff, 0xff, 0xfd}, 1)
	if _, err := DecodeRequest(OpQuery, V4, bad); err == nil {
		t.Error("value length -3 accepted")
	}
	bad = append(bytes.Clone(body[:len(body)-8]), 0x80, 0, 0, 0, 0, 0, 0, 0)
	if _, err := DecodeRequest(OpQuery, V4, bad); err == nil || !strings.Contains(err.Error(), "Out of bound timestamp") {
		t.Errorf("Long.MIN_VALUE timestamp: %v", err)
	}
}

func TestBatchNamedValuesRefused(t *testing.T) {
	body, err := (&Batch{Children: []BatchChild{{Query: "q"}}}).AppendBody(nil, V4)
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)-1] |= queryNames
	if _, err := DecodeRequest(OpBatch, V4, body); err == nil || !strings.Contains(err.Error(), "Named values") {
		t.Errorf("named batch values: %v", err)
	}
}

func sampleResponses() []Message {
	udt := cqltype.UDTOf("ks", "u", []string{"f"}, []*cqltype.Type{cqltype.IntType})
	return []Message{
		&Error{Code: CodeServer, Message: "boom"},
		&Error{Code: CodeProtocol, Message: "bad"},
		&Error{Code: CodeUnavailable, Message: "Cannot achieve consistency level QUORUM", Consistency: Quorum, Required: 2, Alive: 1},
		&Error{Code: CodeWriteTimeout, Message: "wt", Consistency: One, Received: 0, BlockFor: 1, WriteType: "SIMPLE"},
		&Error{Code: CodeReadTimeout, Message: "rt", Consistency: One, BlockFor: 1, DataPresent: true},
		&Error{Code: CodeReadFailure, Message: "rf", Consistency: Two, Received: 1, BlockFor: 2, NumFailures: 1},
		&Error{Code: CodeWriteFailure, Message: "wf", Consistency: Two, Received: 1, BlockFor: 2, NumFailures: 1, WriteType: "BATCH"},
		&Error{Code: CodeFunctionFailure, Message: "ff", Keyspace: "ks", Function: "f", ArgTypes: []string{"int"}},
		&Error{Code: CodeAlreadyExists, Message: "Cannot add existing keyspace \"ks\"", Keyspace: "ks"},
		&Error{Code: CodeAlreadyExists, Message: "Cannot add already existing table \"t\" to keyspace \"ks\"", Keyspace: "ks", Table: "t"},
		&Error{Code: CodeUnprepared, Message: "Prepared query with ID 01 not found", ID: []byte{1}},
		&Ready{},
		&Authenticate{Authenticator: "org.apache.cassandra.auth.PasswordAuthenticator"},
		&Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.5"}, "COMPRESSION": {"lz4", "snappy"}}},
		&AuthChallenge{Token: []byte{1}},
		&AuthSuccess{},
		&Void{},
		&Rows{Metadata: Metadata{Columns: []ColumnSpec{
			{Keyspace: "ks", Table: "t", Name: "a", Type: cqltype.IntType},
			{Keyspace: "ks", Table: "t", Name: "b", Type: cqltype.MapOf(cqltype.TextType, udt, false)},
		}}, Rows: [][][]byte{{{0, 0, 0, 1}, nil}, {{0, 0, 0, 2}, {}}}},
		&Rows{Metadata: Metadata{Columns: []ColumnSpec{
			{Keyspace: "system", Table: "local", Name: "key", Type: cqltype.TextType},
			{Keyspace: "system", Table: "peers", Name: "peer", Type: cqltype.InetType},
		}, PagingState: []byte{5, 6}}, Rows: [][][]byte{}},
		&Rows{Metadata: Metadata{NoMetadata: true, ColumnCount: 1, PagingState: []byte{}}, Rows: [][][]byte{{{7}}}},
		&SetKeyspace{Keyspace: "ks"},
		&Prepared{ID: []byte{0xca, 0xfe},
			Bound: Metadata{Columns: []ColumnSpec{
				{Keyspace: "ks", Table: "t", Name: "a", Type: cqltype.IntType},
				{Keyspace: "ks", Table: "t", Name: "b", Type: cqltype.DurationType},
			}, PKIndexes: []uint16{0}},
			Result: Metadata{Columns: []ColumnSpec{{Keyspace: "ks", Table: "t", Name: "c", Type: cqltype.BlobType}}}},
		&SchemaChange{Change: "CREATED", Target: "KEYSPACE", Keyspace: "ks"},
		&SchemaChange{Change: "UPDATED", Target: "TABLE", Keyspace: "ks", Name: "t"},
		&SchemaChange{Change: "DROPPED", Target: "FUNCTION", Keyspace: "ks", Name: "f", Args: []string{"int", "text"}},
		&Event{Type: TopologyChange, Change: "NEW_NODE", Addr: netip.MustParseAddrPort("127.0.0.2:9042")},
		&Event{Type: StatusChange, Change: "DOWN", Addr: netip.MustParseAddrPort("[::1]:9042")},
		&Event{Type: SchemaChanged, Schema: SchemaChange{Change: "CREATED", Target: "TYPE", Keyspace: "ks", Name: "u"}},
	}
}

// sampleV5Responses use what only v5 has.
func sampleV5Responses() []Message {
	return []Message{
		&Error{Code: CodeReadFailure, Message: "rf", Consistency: Two, Received: 1, BlockFor: 2, NumFailures: 2,
			Reasons: []FailureReason{{netip.MustParseAddr("127.0.0.1"), 1}, {netip.MustParseAddr("::1"), 0}}},
		&Error{Code: CodeWriteTimeout, Message: "wt", Consistency: Serial, BlockFor: 1, WriteType: "CAS", Contentions: 3},
		&Error{Code: CodeCASWriteUnknown, Message: "cas", Consistency: Serial, Received: 0, BlockFor: 1},
		&Error{Code: CodeCDCWriteFailure, Message: "cdc"},
		&Rows{Metadata: Metadata{Columns: []ColumnSpec{{Keyspace: "ks", Table: "t", Name: "a", Type: cqltype.DurationType}},
			NewMetadataID: []byte{1, 2}, PagingState: []byte{9}}, Rows: [][][]byte{{{0, 0, 0}}}},
		&Prepared{ID: []byte{1}, ResultMetadataID: []byte{4, 5},
			Bound:  Metadata{Columns: []ColumnSpec{{Keyspace: "ks", Table: "t", Name: "a", Type: cqltype.IntType}}, PKIndexes: []uint16{0}},
			Result: Metadata{NoMetadata: true}},
	}
}

// normalizeResponse returns what m decodes as in v.
func normalizeResponse(m Message, v Version) Message {
	switch m := m.(type) {
	case *Prepared:
		q := *m
		if v == V3 {
			q.Bound.PKIndexes = nil // v3 has no partition key indexes
		}
		if v >= V5 && q.ResultMetadataID == nil {
			q.ResultMetadataID = MetadataID(nil, q.Result.Columns)
		}
		return &q
	case *Error:
		if v >= V5 && (m.Code == CodeReadFailure || m.Code == CodeWriteFailure) {
			e := *m
			e.NumFailures = int32(len(e.Reasons))
			if e.Reasons == nil {
				e.Reasons = []FailureReason{}
			}
			return &e
		}
	}
	return m
}

func TestResponseRoundTrip(t *testing.T) {
	for _, v := range []Version{V3, V4, V5} {
		samples := sampleResponses()
		if v == V5 {
			samples = append(samples, sampleV5Responses()...)
		}
		for _, m := range samples {
			body, err := m.AppendBody(nil, v)
			if err != nil {
				t.Fatalf("v%d %T: %v", v, m, err)
			}
			got, err := DecodeResponse(m.Opcode(), v, body)
			if err != nil {
				t.Fatalf("v%d %+v: decode: %v", v, m, err)
			}
			want := normalizeResponse(m, v)
			if p, ok := got.(*Prepared); ok && len(p.Bound.PKIndexes) == 0 {
				p.Bound.PKIndexes = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("v%d: got %+v, want %+v", v, got, want)
			}
			for i := range body {
				if _, err := DecodeResponse(m.Opcode(), v, body[:i]); err == nil {
					switch m.(type) {
					case *Ready, *AuthSuccess, *AuthChallenge:
					default:
						t.Errorf("v%d %T: body cut to %d of %d bytes decoded", v, m, i, len(body))
					}
				}
			}
		}
	}
}

// TestPreparedBytes checks v4 prepared metadata against the spec's layout.
func TestPreparedBytes(t *testing.T) {
	p := &Prepared{ID: []byte{0xab}, Bound: Metadata{Columns: []ColumnSpec{
		{Keyspace: "k", Table: "t", Name: "a", Type: cqltype.IntType},
	}, PKIndexes: []uint16{0}}}
	got, err := p.AppendBody(nil, V4)
	if err != nil {
		t.Fatal(err)
	}
	want := "00000004" + "0001ab" + // kind, id
		"00000001" + "00000001" + "00000001" + "0000" + // global spec, 1 column, 1 pk: index 0
		"00016b" + "000174" + "000161" + "0009" + // ks, table, name, int
		"00000000" + "00000000" // result: no flags, no columns
	if hex.EncodeToString(got) != want {
		t.Errorf("got  %x\nwant %s", got, want)
	}
}

// TestRowsMetadataChangedBytes checks v5 rows metadata against the
// spec's layout: METADATA_CHANGED, then the paging state, then the new
// metadata ID, then the columns even though the client asked to skip them.
func TestRowsMetadataChangedBytes(t *testing.T) {
	r := &Rows{Metadata: Metadata{Columns: []ColumnSpec{{Keyspace: "k", Table: "t", Name: "a", Type: cqltype.IntType}},
		NoMetadata: true, PagingState: []byte{7}, NewMetadataID: []byte{0xee}}}
	got, err := r.AppendBody(nil, V5)
	if err != nil {
		t.Fatal(err)
	}
	want := "00000002" + // rows
		"0000000b" + "00000001" + // global spec, more pages, metadata changed; 1 column
		"0000000107" + "0001ee" + // paging state, new metadata ID
		"00016b" + "000174" + "000161" + "0009" + // ks, table, name, int
		"00000000" // no rows
	if hex.EncodeToString(got) != want {
		t.Errorf("got  %x\nwant %s", got, want)
	}
	// Before v5 the ID is not sent and the client's wish is kept.
	got, _ = r.AppendBody(nil, V4)
	if want := "00000002" + "00000006" + "00000001" + "0000000107" + "00000000"; hex.EncodeToString(got) != want {
		t.Errorf("v4: got  %x\nwant %s", got, want)
	}
}

func TestMetadataID(t *testing.T) {
	a := []ColumnSpec{{Keyspace: "k", Table: "t", Name: "a", Type: cqltype.IntType}}
	b := []ColumnSpec{{Keyspace: "k", Table: "t", Name: "a", Type: cqltype.BigintType}}
	c := []ColumnSpec{{Keyspace: "k", Table: "t", Name: "a", Type: cqltype.IntType}}
	idA, idB, idC := MetadataID(nil, a), MetadataID(nil, b), MetadataID(nil, c)
	if len(idA) != 16 || bytes.Equal(idA, idB) || !bytes.Equal(idA, idC) {
		t.Errorf("ids %x %x %x", idA, idB, idC)
	}
	if bytes.Equal(MetadataID(nil, nil), idA) {
		t.Error("no columns have the id of one")
	}
}

func TestRowsEncodeMismatch(t *testing.T) {
	r := &Rows{Metadata: Metadata{Columns: []ColumnSpec{{Name: "a", Type: cqltype.IntType}}}, Rows: [][][]byte{{nil, nil}}}
	if _, err := r.AppendBody(nil, V4); err == nil {
		t.Error("a row of 2 cells for 1 column was encoded")
	}
	if _, err := (&Error{Message: strings.Repeat("x", 70000)}).AppendBody(nil, V4); err == nil {
		t.Error("a 70000-byte [string] was encoded")
	}
}

func TestReadFrame(t *testing.T) {
	frame, err := AppendFrame(nil, Header{Version: V4, Stream: 300}, nil, &Query{Query: "x", Params: QueryParams{Consistency: One}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(bytes.NewReader(frame), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != V4 || f.Response || f.Stream != 300 || f.Opcode != OpQuery || int(f.Length) != len(frame)-HeaderSize {
		t.Fatalf("header %+v", f.Header)
	}
	// A response, as servers send them.
	resp, _ := AppendFrame(nil, Header{Version: V3, Response: true, Stream: -1}, nil, &Ready{}, nil)
	if hex.EncodeToString(resp) != "8300ffff0200000000" {
		t.Errorf("READY frame %x", resp)
	}
	// v3 frames have v4's 9-byte header: both read back.
	for _, v := range []Version{V3, V4} {
		q, err := AppendFrame(nil, Header{Version: v, Stream: 300}, nil, &Query{Query: "x", Params: QueryParams{Consistency: One}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFrame(bytes.NewReader(q), 1<<20)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		if f.Version != v || f.Stream != 300 || f.Opcode != OpQuery || !bytes.Equal(f.Body, q[HeaderSize:]) {
			t.Errorf("%v query read back as %+v, body %x", v, f.Header, f.Body)
		}
	}
	if f, err := ReadFrame(bytes.NewReader(resp), 1<<20); err != nil || f.Version != V3 || !f.Response || f.Stream != -1 || f.Opcode != OpReady || len(f.Body) != 0 {
		t.Errorf("v3 READY read back as %+v, %v", f, err)
	}
	// Too large: refused before the body is read.
	_, err = ReadFrame(bytes.NewReader(frame), 3)
	var tooLarge *FrameTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Header.Stream != 300 || !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("small limit: %v", err)
	}
	// The limit counts the header, as Cassandra's does.
	if _, err := ReadFrame(bytes.NewReader(frame), len(frame)); err != nil {
		t.Errorf("a frame of the limit: %v", err)
	}
	_, err = ReadFrame(bytes.NewReader(frame), len(frame)-1)
	if !errors.As(err, &tooLarge) || tooLarge.Len() != int64(len(frame)) ||
		err.Error() != fmt.Sprintf("Request is too big: length %d exceeds maximum allowed length %d.", len(frame), len(frame)-1) ||
		tooLarge.InvalidError().Code != CodeInvalid {
		t.Errorf("one byte over the limit: %v", err)
	}
	// A truncated frame is out of step.
	for i := 1; i < len(frame); i++ {
		if _, err := ReadFrame(bytes.NewReader(frame[:i]), 1<<20); err != io.ErrUnexpectedEOF {
			t.Errorf("cut at %d: %v", i, err)
		}
	}
	if _, err := ReadFrame(bytes.NewReader(nil), 1<<20); err != io.EOF {
		t.Errorf("empty: %v", err)
	}
}

func TestUnsupportedVersions(t *testing.T) {
	tests := []struct {
		in    string
		ver   Version
		strm  int16
		reply Version
	}{
		{"0100050500000000", 1, 5, 1}, // v1 OPTIONS: 8-byte header
		{"02000a0500000000", 2, 10, 2},
		{"060000070500000000", 6, 7, V4},
		{"420000010500000000", 0x42, 1, V4}, // DSE_V2
	}
	for _, tt := range tests {
		b, _ := hex.DecodeString(tt.in)
		r := bytes.NewReader(b)
		_, err := ReadFrame(r, 1<<20)
		var uv *UnsupportedVersionError
		if !errors.As(err, &uv) {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if uv.Header.Version != tt.ver || uv.Header.Stream != tt.strm || uv.ReplyVersion() != tt.reply || r.Len() != 0 {
			t.Errorf("%s: %+v reply v%d, %d bytes left", tt.in, uv.Header, uv.ReplyVersion(), r.Len())
		}
		want := "Invalid or unsupported protocol version (" + string(rune('0'+int(tt.ver)%10)) + ")"
		if tt.ver < 10 && !strings.HasPrefix(uv.ProtocolError().Message, want) {
			t.Errorf("%s: message %q", tt.in, uv.ProtocolError().Message)
		}
		// The answer is framed so the client can read it.
		out, err := AppendFrame(nil, Header{Version: uv.ReplyVersion(), Response: true, Stream: uv.Header.Stream}, nil, uv.ProtocolError(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != 0x80|byte(uv.ReplyVersion()) || len(out) != uv.ReplyVersion().headerSize()+4+2+len(uv.Error()) {
			t.Errorf("%s: answer %x", tt.in, out)
		}
	}
}

func TestCompressors(t *testing.T) {
	inputs := [][]byte{{}, []byte("a"), bytes.Repeat([]byte("cassandra "), 1000), randomBytes(5000)}
	for _, c := range Compressors {
		for _, in := range inputs {
			z := c.Compress([]byte("prefix"), in)
			if !bytes.HasPrefix(z, []byte("prefix")) {
				t.Fatalf("%s: prefix lost", c.Name())
			}
			out, err := c.Decompress(nil, z[6:], len(in))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%s: %d bytes: %v", c.Name(), len(in), err)
			}
			if len(in) > 0 {
				if _, err := c.Decompress(nil, z[6:], len(in)-1); err == nil {
					t.Errorf("%s: output over the limit accepted", c.Name())
				}
				if _, err := c.Decompress(nil, z[6:len(z)-1], len(in)); err == nil {
					t.Errorf("%s: truncated input accepted", c.Name())
				}
			}
		}
		if CompressorFor(c.Name()) != c {
			t.Errorf("CompressorFor(%s)", c.Name())
		}
	}
	// Cassandra's lz4 framing: big-endian uncompressed length first.
	if z := LZ4.Compress(nil, []byte("hello")); !bytes.HasPrefix(z, []byte{0, 0, 0, 5}) {
		t.Errorf("lz4 prefix %x", z)
	}
	if _, err := LZ4.Decompress(nil, []byte{0xff, 0xff, 0xff, 0xff, 0}, 1<<20); err == nil {
		t.Error("lz4 length over the limit accepted")
	}
	// The literal-only block used for incompressible input decodes.
	for _, n := range []int{1, 14, 15, 16, 269, 270, 271, 1000} {
		src := randomBytes(n)
		blk := appendLiteralBlock([]byte{0, 0, 0, 0}, src)
		blk[0], blk[1], blk[2], blk[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		if out, err := LZ4.Decompress(nil, blk, n); err != nil || !bytes.Equal(out, src) {
			t.Errorf("literal block of %d: %v", n, err)
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func TestFrameEnvelope(t *testing.T) {
	for _, c := range []Compressor{nil, LZ4, Snappy} {
		env := &Envelope{Warnings: []string{strings.Repeat("careful ", 100)}, Payload: map[string][]byte{"k": {1}}}
		out, err := AppendFrame(nil, Header{Version: V4, Response: true, Stream: 3}, env, &Void{}, c)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFrame(bytes.NewReader(out), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		body := f.Body
		if c != nil {
			if f.Flags&FlagCompression == 0 {
				t.Fatal("compression flag not set")
			}
			small, _ := AppendFrame(nil, Header{Version: V4, Response: true}, nil, &Void{}, c)
			if small[1]&byte(FlagCompression) != 0 {
				t.Fatal("a tiny body was compressed")
			}
			if body, err = c.Decompress(nil, body, 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		got, rest, err := SplitBody(f.Header, body)
		if err != nil || !reflect.DeepEqual(&got, env) {
			t.Fatalf("envelope %+v, %v", got, err)
		}
		if m, err := DecodeResponse(f.Opcode, f.Version, rest); err != nil || !reflect.DeepEqual(m, &Void{}) {
			t.Fatalf("message %+v, %v", m, err)
		}
	}
}

func TestCheckOpcode(t *testing.T) {
	tests := []struct {
		op       Opcode
		response bool
		want     string
	}{
		{OpQuery, false, ""},
		{OpResult, true, ""},
		{OpCredentials, false, ""},
		{0x11, false, "Unknown opcode 17"},
		{0xff, true, "Unknown opcode 255"},
		{OpReady, false, "Wrong protocol direction (expected RESPONSE, got REQUEST) for opcode 2 (READY)"},
		{OpQuery, true, "Wrong protocol direction (expected REQUEST, got RESPONSE) for opcode 7 (QUERY)"},
	}
	for _, tt := range tests {
		err := CheckOpcode(tt.op, tt.response)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%v response=%v: %v", tt.op, tt.response, err)
			}
			continue
		}
		if err == nil || err.Code != CodeProtocol || err.Message != tt.want {
			t.Errorf("%v response=%v: %v, want %q", tt.op, tt.response, err, tt.want)
		}
	}
	if _, err := DecodeRequest(OpCredentials, V4, nil); err == nil || err.Error() != "Unsupported message" {
		t.Errorf("CREDENTIALS: %v", err)
	}
	if _, err := DecodeRequest(OpEvent, V4, nil); err == nil || !strings.Contains(err.Error(), "Wrong protocol direction") {
		t.Errorf("EVENT as a request: %v", err)
	}
}

func TestSplitBodyPayloadNeedsV4(t *testing.T) {
	body := []byte{0, 1, 0, 1, 'k', 0, 0, 0, 1, 'v', 0xAA}
	env, rest, err := SplitBody(Header{Version: V4, Flags: FlagCustomPayload}, body)
	if err != nil || string(env.Payload["k"]) != "v" || len(rest) != 1 {
		t.Fatalf("v4: %+v %x %v", env, rest, err)
	}
	if _, _, err := SplitBody(Header{Version: V3, Flags: FlagCustomPayload}, body); err == nil ||
		err.Error() != "Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4" {
		t.Fatalf("v3: %v", err)
	}
}
