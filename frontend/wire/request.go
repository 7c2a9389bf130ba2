package wire

import (
	"fmt"
	"math"
)

// Message is the body of a frame of either direction.
type Message interface {
	Opcode() Opcode
	// AppendBody appends the message's body in version v.
	AppendBody(dst []byte, v Version) ([]byte, error)
}

// Consistency is a consistency level.
type Consistency uint16

// The consistency levels.
const (
	Any         Consistency = 0x0000
	One         Consistency = 0x0001
	Two         Consistency = 0x0002
	Three       Consistency = 0x0003
	Quorum      Consistency = 0x0004
	All         Consistency = 0x0005
	LocalQuorum Consistency = 0x0006
	EachQuorum  Consistency = 0x0007
	Serial      Consistency = 0x0008
	LocalSerial Consistency = 0x0009
	LocalOne    Consistency = 0x000A
)

var consistencyNames = [...]string{"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL",
	"LOCAL_QUORUM", "EACH_QUORUM", "SERIAL", "LOCAL_SERIAL", "LOCAL_ONE"}

// String returns the level's name, such as "LOCAL_QUORUM".
func (c Consistency) String() string {
	if int(c) < len(consistencyNames) {
		return consistencyNames[c]
	}
	return fmt.Sprintf("0x%04X", uint16(c))
}

// ValueKind tells a bound value from null and unset.
type ValueKind uint8

// The kinds of bound values.
const (
	// Bytes: a value, possibly empty.
	Bytes ValueKind = iota
	// Null: a null, which deletes.
	Null
	// Unset (v4): no value, which leaves the column as it is.
	Unset
)

// Value is a bound [value]: serialized bytes, null or unset.
type Value struct {
	Kind  ValueKind
	Bytes []byte
}

// BytesValue, NullValue and UnsetValue build Values.
func BytesValue(b []byte) Value { return Value{Bytes: b} }

var (
	NullValue  = Value{Kind: Null}
	UnsetValue = Value{Kind: Unset}
)

// Query parameter flags (one byte in v3 and v4, an [int] from v5).
const (
	queryValues            = 0x01
	querySkipMetadata      = 0x02
	queryPageSize          = 0x04
	queryPagingState       = 0x08
	querySerialConsistency = 0x10
	queryDefaultTimestamp  = 0x20
	queryNames             = 0x40
	queryKeyspace          = 0x80  // v5
	queryNowInSeconds      = 0x100 // v5

	// prepareKeyspace is the flag of a v5 PREPARE with a keyspace.
	prepareKeyspace = 0x01
)

// readFlags reads query or batch flags: a [byte] before v5, an [int]
// from v5, refusing bits that version does not define.
func (d *decoder) readFlags(v Version, what string) uint32 {
	if v < V5 {
		f := uint32(d.byte(what))
		if f&^0x7f != 0 {
			d.fail("Unknown %s 0x%02X", what, f)
		}
		return f
	}
	f := uint32(d.int(what))
	if f&^0x1ff != 0 {
		d.fail("Unknown %s 0x%08X", what, f)
	}
	return f
}

// writeFlags writes flags as readFlags reads them in v.
func (e *encoder) writeFlags(v Version, f uint32) {
	if v < V5 {
		if f&^0x7f != 0 {
			e.failf("flags 0x%X need protocol v5", f)
		}
		e.byte(byte(f))
		return
	}
	e.int(int32(f))
}

// QueryParams are the parameters of a QUERY or EXECUTE.
type QueryParams struct {
	Consistency Consistency
	Values      []Value
	// Names holds the values' names when the client bound them by name
	// (one per value), and is nil otherwise.
	Names []string
	// SkipMetadata asks for rows without column metadata: the client
	// has it from PREPARE.
	SkipMetadata bool
	// PageSize is the most rows per page; 0 or less is no paging, and 0
	// is not sent.
	PageSize int32
	// PagingState resumes a query where its previous page ended.
	PagingState []byte
	// SerialConsistency is the level of the Paxos phase of conditional
	// updates; zero (ANY, which is no serial level) when the client sent
	// none, and then SERIAL applies.
	SerialConsistency Consistency
	// Timestamp is the default write timestamp in microseconds, when
	// HasTimestamp.
	Timestamp    int64
	HasTimestamp bool
	// Keyspace (v5) is the keyspace the statement runs in, in place of
	// the connection's; empty for the connection's.
	Keyspace string
	// NowInSeconds (v5), when HasNowInSeconds, is the current time in
	// seconds the statement uses for TTLs and deletion times.
	NowInSeconds    int32
	HasNowInSeconds bool
}

func (p *QueryParams) decode(d *decoder, v Version) {
	p.Consistency = d.consistency("the consistency")
	flags := d.readFlags(v, "query flags")
	if d.err != nil {
		return
	}
	if flags&queryValues != 0 {
		n := d.count(4, "values")
		if n > 0 {
			p.Values = make([]Value, n)
			if flags&queryNames != 0 {
				p.Names = make([]string, n)
			}
		}
		for i := 0; i < n && d.err == nil; i++ {
			if p.Names != nil {
				p.Names[i] = d.string("a value name")
			}
			p.Values[i] = d.value(v)
		}
	}
	p.SkipMetadata = flags&querySkipMetadata != 0
	if flags&queryPageSize != 0 {
		p.PageSize = d.int("the page size")
	}
	if flags&queryPagingState != 0 {
		p.PagingState = d.bytes("the paging state")
	}
	if flags&querySerialConsistency != 0 {
		p.SerialConsistency = d.consistency("the serial consistency")
	}
	if flags&queryDefaultTimestamp != 0 {
		p.Timestamp, p.HasTimestamp = d.timestamp(), true
	}
	p.Keyspace, p.NowInSeconds, p.HasNowInSeconds = d.v5Options(flags)
}

// v5Options reads the keyspace and now_in_seconds that flags announce.
func (d *decoder) v5Options(flags uint32) (ks string, now int32, hasNow bool) {
	if flags&queryKeyspace != 0 {
		if ks = d.string("the keyspace"); ks == "" && d.err == nil {
			d.fail("Empty keyspace")
		}
	}
	if flags&queryNowInSeconds != 0 {
		now, hasNow = d.int("now_in_seconds"), true
	}
	return ks, now, hasNow
}

// v5Flags returns the flags of a keyspace and a now_in_seconds.
func v5Flags(ks string, hasNow bool) uint32 {
	var f uint32
	if ks != "" {
		f |= queryKeyspace
	}
	if hasNow {
		f |= queryNowInSeconds
	}
	return f
}

// v5Options writes the keyspace and now_in_seconds that flags announce.
func (e *encoder) v5Options(flags uint32, ks string, now int32) {
	if flags&queryKeyspace != 0 {
		e.string(ks)
	}
	if flags&queryNowInSeconds != 0 {
		e.int(now)
	}
}

// timestamp reads a default timestamp, refusing Long.MIN_VALUE as
// Cassandra does: it means "none" there.
func (d *decoder) timestamp() int64 {
	ts := d.long("the default timestamp")
	if d.err == nil && ts == math.MinInt64 {
		d.fail("Out of bound timestamp, must be in [%d, %d]", int64(math.MinInt64+1), int64(math.MaxInt64))
	}
	return ts
}

func (p *QueryParams) encode(e *encoder, v Version) {
	e.short(uint16(p.Consistency))
	flags := v5Flags(p.Keyspace, p.HasNowInSeconds)
	if len(p.Values) > 0 {
		flags |= queryValues
		if p.Names != nil {
			flags |= queryNames
			if len(p.Names) != len(p.Values) {
				e.failf("%d value names for %d values", len(p.Names), len(p.Values))
			}
		}
	}
	if p.SkipMetadata {
		flags |= querySkipMetadata
	}
	if p.PageSize != 0 {
		flags |= queryPageSize
	}
	if p.PagingState != nil {
		flags |= queryPagingState
	}
	if p.SerialConsistency != 0 {
		flags |= querySerialConsistency
	}
	if p.HasTimestamp {
		flags |= queryDefaultTimestamp
	}
	e.writeFlags(v, flags)
	if flags&queryValues != 0 {
		e.shortLen(len(p.Values), "values")
		for i, val := range p.Values {
			if flags&queryNames != 0 && i < len(p.Names) {
				e.string(p.Names[i])
			}
			e.value(val, v)
		}
	}
	if flags&queryPageSize != 0 {
		e.int(p.PageSize)
	}
	if flags&queryPagingState != 0 {
		e.bytes(p.PagingState)
	}
	if flags&querySerialConsistency != 0 {
		e.short(uint16(p.SerialConsistency))
	}
	if flags&queryDefaultTimestamp != 0 {
		e.long(p.Timestamp)
	}
	e.v5Options(flags, p.Keyspace, p.NowInSeconds)
}

// Startup (STARTUP) opens a connection: CQL_VERSION, and optionally
// COMPRESSION, DRIVER_NAME, DRIVER_VERSION...
type Startup struct {
	Options map[string]string
}

// AuthResponse (AUTH_RESPONSE) carries a SASL token.
type AuthResponse struct {
	Token []byte
}

// Options (OPTIONS) asks for SUPPORTED.
type Options struct{}

// Query (QUERY) runs a statement given as text.
type Query struct {
	Query  string
	Params QueryParams
}

// Prepare (PREPARE) prepares a statement.
type Prepare struct {
	Query string
	// Keyspace (v5) is the keyspace unqualified names resolve in, in
	// place of the connection's; empty for the connection's.
	Keyspace string
}

// Execute (EXECUTE) runs a prepared statement.
type Execute struct {
	ID []byte
	// ResultMetadataID (v5) is the result metadata ID of the PREPARED
	// answer, or of the last Rows that changed it: the columns the
	// client knows.
	ResultMetadataID []byte
	Params           QueryParams
}

// BatchType is the kind of a BATCH.
type BatchType uint8

// The batch types.
const (
	LoggedBatch   BatchType = 0
	UnloggedBatch BatchType = 1
	CounterBatch  BatchType = 2
)

// BatchChild is one statement of a batch: prepared when ID is not nil,
// else the text Query.
type BatchChild struct {
	Query  string
	ID     []byte
	Values []Value
}

// Batch (BATCH) runs statements together.
type Batch struct {
	Type              BatchType
	Children          []BatchChild
	Consistency       Consistency
	SerialConsistency Consistency
	Timestamp         int64
	HasTimestamp      bool
	// Keyspace and NowInSeconds as in QueryParams (v5).
	Keyspace        string
	NowInSeconds    int32
	HasNowInSeconds bool
}

// Register (REGISTER) subscribes the connection to events:
// TOPOLOGY_CHANGE, STATUS_CHANGE, SCHEMA_CHANGE.
type Register struct {
	Events []string
}

func (*Startup) Opcode() Opcode      { return OpStartup }
func (*AuthResponse) Opcode() Opcode { return OpAuthResponse }
func (*Options) Opcode() Opcode      { return OpOptions }
func (*Query) Opcode() Opcode        { return OpQuery }
func (*Prepare) Opcode() Opcode      { return OpPrepare }
func (*Execute) Opcode() Opcode      { return OpExecute }
func (*Batch) Opcode() Opcode        { return OpBatch }
func (*Register) Opcode() Opcode     { return OpRegister }

func (m *Startup) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.stringMap(m.Options)
	return e.b, e.err
}

func (m *AuthResponse) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.bytes(m.Token)
	return e.b, e.err
}

func (m *Options) AppendBody(dst []byte, v Version) ([]byte, error) { return dst, nil }

func (m *Query) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.longString(m.Query)
	m.Params.encode(&e, v)
	return e.b, e.err
}

func (m *Prepare) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.longString(m.Query)
	if v >= V5 {
		var flags int32
		if m.Keyspace != "" {
			flags |= prepareKeyspace
		}
		e.int(flags)
		if m.Keyspace != "" {
			e.string(m.Keyspace)
		}
	} else if m.Keyspace != "" {
		e.failf("a PREPARE keyspace needs protocol v5")
	}
	return e.b, e.err
}

func (m *Execute) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.shortBytes(m.ID)
	if v >= V5 {
		e.shortBytes(m.ResultMetadataID)
	}
	m.Params.encode(&e, v)
	return e.b, e.err
}

func (m *Batch) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.byte(byte(m.Type))
	e.shortLen(len(m.Children), "batch statements")
	for _, c := range m.Children {
		if c.ID != nil {
			e.byte(1)
			e.shortBytes(c.ID)
		} else {
			e.byte(0)
			e.longString(c.Query)
		}
		e.shortLen(len(c.Values), "batch values")
		for _, val := range c.Values {
			e.value(val, v)
		}
	}
	e.short(uint16(m.Consistency))
	flags := v5Flags(m.Keyspace, m.HasNowInSeconds)
	if m.SerialConsistency != 0 {
		flags |= querySerialConsistency
	}
	if m.HasTimestamp {
		flags |= queryDefaultTimestamp
	}
	e.writeFlags(v, flags)
	if m.SerialConsistency != 0 {
		e.short(uint16(m.SerialConsistency))
	}
	if m.HasTimestamp {
		e.long(m.Timestamp)
	}
	e.v5Options(flags, m.Keyspace, m.NowInSeconds)
	return e.b, e.err
}

func (m *Register) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.stringList(m.Events)
	return e.b, e.err
}

// DecodeRequest decodes the body of a request frame with opcode op in
// version v. The body must be decompressed and stripped of any custom
// payload (see SplitBody). Malformed bodies give a Protocol *Error;
// bytes after the message are ignored, as by Cassandra.
func DecodeRequest(op Opcode, v Version, body []byte) (Message, error) {
	d := &decoder{b: body}
	var m Message
	switch op {
	case OpStartup:
		m = &Startup{Options: d.stringMap("the STARTUP options")}
	case OpAuthResponse:
		m = &AuthResponse{Token: d.bytes("the SASL token")}
	case OpOptions:
		m = &Options{}
	case OpQuery:
		q := &Query{Query: d.longString("the query")}
		q.Params.decode(d, v)
		m = q
	case OpPrepare:
		m = decodePrepare(d, v)
	case OpExecute:
		x := &Execute{ID: d.shortBytes("the prepared ID")}
		if v >= V5 {
			x.ResultMetadataID = d.shortBytes("the result metadata ID")
		}
		x.Params.decode(d, v)
		m = x
	case OpBatch:
		m = decodeBatch(d, v)
	case OpRegister:
		m = &Register{Events: d.stringList("the event types")}
	case OpCredentials:
		// v1's login, which Cassandra 4 no longer decodes.
		return nil, &Error{Code: CodeProtocol, Message: "Unsupported message"}
	default:
		if err := CheckOpcode(op, false); err != nil {
			return nil, err
		}
		return nil, &Error{Code: CodeProtocol, Message: fmt.Sprintf("Unknown opcode %d", op)}
	}
	// Bytes after the message are ignored, as Cassandra ignores them:
	// the frame's length keeps the stream in step, and a driver that
	// works with Cassandra must work here.
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

func decodePrepare(d *decoder, v Version) *Prepare {
	p := &Prepare{Query: d.longString("the query")}
	if v < V5 {
		return p
	}
	flags := d.int("the PREPARE flags")
	if d.err == nil && flags&^prepareKeyspace != 0 {
		d.fail("Unknown PREPARE flags 0x%08X", flags)
	}
	if flags&prepareKeyspace != 0 {
		if p.Keyspace = d.string("the keyspace"); p.Keyspace == "" && d.err == nil {
			d.fail("Empty keyspace")
		}
	}
	return p
}

func decodeBatch(d *decoder, v Version) *Batch {
	b := &Batch{Type: BatchType(d.byte("the batch type"))}
	if d.err == nil && b.Type > CounterBatch {
		d.fail("Invalid BATCH message type %d", b.Type)
	}
	n := d.count(3, "batch statements")
	b.Children = make([]BatchChild, n)
	for i := 0; i < n && d.err == nil; i++ {
		c := &b.Children[i]
		switch kind := d.byte("a batch statement kind"); kind {
		case 0:
			c.Query = d.longString("a batch query")
		case 1:
			c.ID = d.shortBytes("a batch prepared ID")
		default:
			d.fail("Invalid query kind in BATCH messages. Must be 0 or 1 but got %d", kind)
		}
		nv := d.count(4, "batch values")
		c.Values = make([]Value, nv)
		for j := 0; j < nv && d.err == nil; j++ {
			c.Values[j] = d.value(v)
		}
	}
	b.Consistency = d.consistency("the consistency")
	flags := d.readFlags(v, "batch flags")
	if d.err != nil {
		return b
	}
	// The spec defines names for batch values but places the flag after
	// the values, so no server can read them; Cassandra refuses them too.
	if flags&queryNames != 0 {
		d.fail("Named values are not supported in BATCH")
	}
	if flags&^(querySerialConsistency|queryDefaultTimestamp|queryNames|queryKeyspace|queryNowInSeconds) != 0 {
		d.fail("Unknown batch flags 0x%02X", flags)
	}
	if flags&querySerialConsistency != 0 {
		b.SerialConsistency = d.consistency("the serial consistency")
	}
	if flags&queryDefaultTimestamp != 0 {
		b.Timestamp, b.HasTimestamp = d.timestamp(), true
	}
	b.Keyspace, b.NowInSeconds, b.HasNowInSeconds = d.v5Options(flags)
	return b
}
