package wire

import (
	"crypto/md5"
	"fmt"
	"net/netip"
	"sync"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Ready (READY) answers a STARTUP that needs no authentication.
type Ready struct{}

// Authenticate (AUTHENTICATE) answers a STARTUP that needs
// authentication, naming the authenticator's class.
type Authenticate struct {
	Authenticator string
}

// Supported (SUPPORTED) answers OPTIONS.
type Supported struct {
	Options map[string][]string
}

// AuthChallenge (AUTH_CHALLENGE) asks for another SASL step.
type AuthChallenge struct {
	Token []byte
}

// AuthSuccess (AUTH_SUCCESS) ends authentication.
type AuthSuccess struct {
	Token []byte
}

func (*Ready) Opcode() Opcode         { return OpReady }
func (*Authenticate) Opcode() Opcode  { return OpAuthenticate }
func (*Supported) Opcode() Opcode     { return OpSupported }
func (*AuthChallenge) Opcode() Opcode { return OpAuthChallenge }
func (*AuthSuccess) Opcode() Opcode   { return OpAuthSuccess }

func (m *Ready) AppendBody(dst []byte, v Version) ([]byte, error) { return dst, nil }

func (m *Authenticate) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.string(m.Authenticator)
	return e.b, e.err
}

func (m *Supported) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.stringMultimap(m.Options)
	return e.b, e.err
}

func (m *AuthChallenge) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.bytes(m.Token)
	return e.b, e.err
}

func (m *AuthSuccess) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.bytes(m.Token)
	return e.b, e.err
}

// Result is the message of a RESULT response: *Void, *Rows,
// *SetKeyspace, *Prepared or *SchemaChange.
type Result interface {
	Message
	resultKind() int32
}

// The result kinds.
const (
	kindVoid         = 0x0001
	kindRows         = 0x0002
	kindSetKeyspace  = 0x0003
	kindPrepared     = 0x0004
	kindSchemaChange = 0x0005
)

// Void is a result without information.
type Void struct{}

// Rows is the result of a SELECT. A nil cell is null.
type Rows struct {
	Metadata Metadata
	Rows     [][][]byte
}

// SetKeyspace is the result of USE.
type SetKeyspace struct {
	Keyspace string
}

// Prepared is the result of PREPARE.
type Prepared struct {
	ID []byte
	// ResultMetadataID (v5) identifies Result, so that an EXECUTE can
	// say which columns its client knows; nil to have it computed
	// (MetadataID) when the message is encoded.
	ResultMetadataID []byte
	// Bound describes the bound variables; its PKIndexes (v4) let
	// token-aware drivers route executions.
	Bound Metadata
	// Result describes the rows an execution returns (no columns for a
	// statement that returns none).
	Result Metadata
}

// SchemaChange is the result of DDL, and the body of a SCHEMA_CHANGE event.
type SchemaChange struct {
	// Change is CREATED, UPDATED or DROPPED.
	Change string
	// Target is KEYSPACE, TABLE, TYPE, FUNCTION or AGGREGATE.
	Target   string
	Keyspace string
	// Name is the table, type, function or aggregate; empty for KEYSPACE.
	Name string
	// Args are the argument types of a FUNCTION or AGGREGATE.
	Args []string
}

// ColumnSpec names and types a column of a result or a bound variable.
type ColumnSpec struct {
	Keyspace, Table, Name string
	Type                  *cqltype.Type
}

// Metadata describes the columns of rows or bound variables.
type Metadata struct {
	Columns []ColumnSpec
	// PKIndexes are the indexes in Columns of the partition key
	// components, in key order; bound variables of v4 only.
	PKIndexes []uint16
	// PagingState, when not nil, resumes the query after this page: more
	// pages follow.
	PagingState []byte
	// NoMetadata sends the column count without the columns, for clients
	// that asked to skip metadata.
	NoMetadata bool
	// ColumnCount is the count of columns of a result decoded without
	// metadata; encoding uses it when Columns is empty.
	ColumnCount int
	// NewMetadataID (v5 rows), when not nil, tells the client that the
	// columns are not those of the result metadata ID its EXECUTE named,
	// and what the new ID is: the metadata is then sent in full
	// (METADATA_CHANGED).
	NewMetadataID []byte
}

// Count returns the number of columns.
func (m *Metadata) Count() int {
	if len(m.Columns) > 0 || !m.NoMetadata {
		return len(m.Columns)
	}
	return m.ColumnCount
}

// Metadata flags.
const (
	metaGlobalTableSpec = 0x0001
	metaHasMorePages    = 0x0002
	metaNoMetadata      = 0x0004
	metaChanged         = 0x0008 // v5
)

// MetadataID returns the result metadata ID (v5) of columns: a digest of
// their specs, so that equal columns have equal IDs across restarts and
// frontends, as Cassandra's MD5 of its result metadata. It appends the
// 16 bytes to dst.
func MetadataID(dst []byte, columns []ColumnSpec) []byte {
	bp := specPool.Get().(*[]byte)
	e := encoder{b: (*bp)[:0]}
	for _, c := range columns {
		e.string(c.Keyspace)
		e.string(c.Table)
		e.string(c.Name)
		e.typ(c.Type, MaxVersion)
	}
	sum := md5.Sum(e.b)
	if cap(e.b) <= 64<<10 {
		*bp = e.b
		specPool.Put(bp)
	}
	return append(dst, sum[:]...)
}

// specPool holds the buffers MetadataID encodes column specs in.
var specPool = sync.Pool{New: func() any { return new([]byte) }}

func (m *Metadata) encode(e *encoder, v Version, bound bool) {
	var flags int32
	global := len(m.Columns) > 0 && (!m.NoMetadata || !bound && v >= V5 && m.NewMetadataID != nil)
	for _, c := range m.Columns {
		global = global && c.Keyspace == m.Columns[0].Keyspace && c.Table == m.Columns[0].Table
	}
	if global {
		flags |= metaGlobalTableSpec
	}
	if m.PagingState != nil {
		flags |= metaHasMorePages
	}
	changed := !bound && v >= V5 && m.NewMetadataID != nil
	if m.NoMetadata && !changed {
		flags |= metaNoMetadata
	}
	if changed {
		flags |= metaChanged
	}
	e.int(flags)
	e.intLen(m.Count(), "columns")
	if bound && v >= V4 {
		e.intLen(len(m.PKIndexes), "partition key indexes")
		for _, i := range m.PKIndexes {
			e.short(i)
		}
	}
	if flags&metaHasMorePages != 0 {
		e.bytes(m.PagingState)
	}
	if changed {
		e.shortBytes(m.NewMetadataID)
	}
	if flags&metaNoMetadata != 0 {
		return
	}
	if global {
		e.string(m.Columns[0].Keyspace)
		e.string(m.Columns[0].Table)
	}
	for _, c := range m.Columns {
		if !global {
			e.string(c.Keyspace)
			e.string(c.Table)
		}
		e.string(c.Name)
		e.typ(c.Type, v)
	}
}

func (m *Metadata) decode(d *decoder, v Version, bound bool) {
	flags := d.int("the metadata flags")
	n := d.intCount(2, "columns")
	if bound && v >= V4 {
		pk := d.intCount(2, "partition key indexes")
		m.PKIndexes = make([]uint16, pk)
		for i := range m.PKIndexes {
			m.PKIndexes[i] = d.short("a partition key index")
		}
	}
	if flags&metaHasMorePages != 0 {
		m.PagingState = d.bytes("the paging state")
		if m.PagingState == nil && d.err == nil {
			m.PagingState = []byte{}
		}
	}
	if !bound && v >= V5 && flags&metaChanged != 0 {
		if flags&metaNoMetadata != 0 {
			d.fail("Metadata_changed and No_metadata flags both set")
		}
		m.NewMetadataID = d.shortBytes("the new metadata ID")
	}
	if flags&metaNoMetadata != 0 {
		m.NoMetadata, m.ColumnCount = true, n
		return
	}
	var ks, table string
	global := flags&metaGlobalTableSpec != 0
	if global {
		ks, table = d.string("the keyspace"), d.string("the table")
	}
	m.Columns = make([]ColumnSpec, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		c := ColumnSpec{Keyspace: ks, Table: table}
		if !global {
			c.Keyspace, c.Table = d.string("the keyspace"), d.string("the table")
		}
		c.Name = d.string("a column name")
		c.Type = d.typ(0)
		m.Columns = append(m.Columns, c)
	}
}

func (*Void) Opcode() Opcode         { return OpResult }
func (*Rows) Opcode() Opcode         { return OpResult }
func (*SetKeyspace) Opcode() Opcode  { return OpResult }
func (*Prepared) Opcode() Opcode     { return OpResult }
func (*SchemaChange) Opcode() Opcode { return OpResult }

func (*Void) resultKind() int32         { return kindVoid }
func (*Rows) resultKind() int32         { return kindRows }
func (*SetKeyspace) resultKind() int32  { return kindSetKeyspace }
func (*Prepared) resultKind() int32     { return kindPrepared }
func (*SchemaChange) resultKind() int32 { return kindSchemaChange }

func (m *Void) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.int(kindVoid)
	return e.b, e.err
}

func (m *Rows) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.int(kindRows)
	m.Metadata.encode(&e, v, false)
	e.intLen(len(m.Rows), "rows")
	n := m.Metadata.Count()
	for _, row := range m.Rows {
		if len(row) != n {
			e.failf("row of %d cells for %d columns", len(row), n)
			return e.b, e.err
		}
		for _, cell := range row {
			e.bytes(cell)
		}
	}
	return e.b, e.err
}

func (m *SetKeyspace) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.int(kindSetKeyspace)
	e.string(m.Keyspace)
	return e.b, e.err
}

func (m *Prepared) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.int(kindPrepared)
	e.shortBytes(m.ID)
	if v >= V5 {
		if m.ResultMetadataID != nil {
			e.shortBytes(m.ResultMetadataID)
		} else {
			var id [md5.Size]byte
			e.shortBytes(MetadataID(id[:0], m.Result.Columns))
		}
	}
	m.Bound.encode(&e, v, true)
	m.Result.encode(&e, v, false)
	return e.b, e.err
}

func (m *SchemaChange) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.int(kindSchemaChange)
	m.encode(&e)
	return e.b, e.err
}

func (m *SchemaChange) encode(e *encoder) {
	e.string(m.Change)
	e.string(m.Target)
	e.string(m.Keyspace)
	switch m.Target {
	case "KEYSPACE":
	case "FUNCTION", "AGGREGATE":
		e.string(m.Name)
		e.stringList(m.Args)
	default:
		e.string(m.Name)
	}
}

func (m *SchemaChange) decode(d *decoder) {
	m.Change = d.string("the change type")
	m.Target = d.string("the change target")
	m.Keyspace = d.string("the keyspace")
	switch m.Target {
	case "KEYSPACE":
	case "TABLE", "TYPE":
		m.Name = d.string("the name")
	case "FUNCTION", "AGGREGATE":
		m.Name = d.string("the name")
		m.Args = d.stringList("the argument types")
	default:
		if d.err == nil {
			d.fail("Unknown schema change target %q", m.Target)
		}
	}
}

// The event types.
const (
	TopologyChange = "TOPOLOGY_CHANGE"
	StatusChange   = "STATUS_CHANGE"
	SchemaChanged  = "SCHEMA_CHANGE"
	// TraceComplete (v4) may be registered for; Sediment never sends it.
	TraceComplete = "TRACE_COMPLETE"
)

// Event (EVENT) is pushed to connections that registered for its Type.
type Event struct {
	// Type is TopologyChange, StatusChange or SchemaChanged.
	Type string
	// Change is NEW_NODE or REMOVED_NODE for a topology change, UP or
	// DOWN for a status change; Addr is the node's CQL address.
	Change string
	Addr   netip.AddrPort
	// Schema describes a SchemaChanged event.
	Schema SchemaChange
}

func (*Event) Opcode() Opcode { return OpEvent }

func (m *Event) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.string(m.Type)
	switch m.Type {
	case TopologyChange, StatusChange:
		e.string(m.Change)
		e.inet(m.Addr)
	case SchemaChanged:
		m.Schema.encode(&e)
	default:
		e.failf("unknown event type %q", m.Type)
	}
	return e.b, e.err
}

// DecodeResponse decodes the body of a response frame with opcode op in
// version v, decompressed and stripped of its tracing ID, warnings and
// custom payload (see SplitBody). Servers do not need it; it
// serves tests and tools that speak to a server.
func DecodeResponse(op Opcode, v Version, body []byte) (Message, error) {
	d := &decoder{b: body}
	var m Message
	switch op {
	case OpError:
		e := &Error{}
		e.decode(d, v)
		m = e
	case OpReady:
		m = &Ready{}
	case OpAuthenticate:
		m = &Authenticate{Authenticator: d.string("the authenticator")}
	case OpSupported:
		m = &Supported{Options: d.stringMultimap("the options")}
	case OpAuthChallenge:
		m = &AuthChallenge{Token: d.bytes("the SASL token")}
	case OpAuthSuccess:
		m = &AuthSuccess{Token: d.bytes("the SASL token")}
	case OpResult:
		m = decodeResult(d, v)
	case OpEvent:
		ev := &Event{Type: d.string("the event type")}
		switch ev.Type {
		case TopologyChange, StatusChange:
			ev.Change = d.string("the change")
			ev.Addr = d.inet("the address")
		case SchemaChanged:
			ev.Schema.decode(d)
		default:
			d.fail("Unknown event type %q", ev.Type)
		}
		m = ev
	default:
		return nil, &Error{Code: CodeProtocol, Message: fmt.Sprintf("Unknown opcode %d for a response", op)}
	}
	if err := d.end(op.String() + " message"); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeResult(d *decoder, v Version) Message {
	switch kind := d.int("the result kind"); kind {
	case kindVoid:
		return &Void{}
	case kindRows:
		r := &Rows{}
		r.Metadata.decode(d, v, false)
		n := r.Metadata.Count()
		rows := d.intCount(4*n, "rows")
		if d.err != nil {
			return r
		}
		if n == 0 {
			// Rows without columns take no bytes, so their count is
			// not bounded by the body; Sediment never sends them.
			if rows > 0 {
				d.fail("%d rows without columns", rows)
			}
			return r
		}
		r.Rows = make([][][]byte, rows)
		cells := make([][]byte, rows*n)
		for i := range r.Rows {
			r.Rows[i] = cells[i*n : (i+1)*n : (i+1)*n]
			for j := range n {
				r.Rows[i][j] = d.bytes("a cell")
			}
		}
		return r
	case kindSetKeyspace:
		return &SetKeyspace{Keyspace: d.string("the keyspace")}
	case kindPrepared:
		p := &Prepared{ID: d.shortBytes("the prepared ID")}
		if v >= V5 {
			p.ResultMetadataID = d.shortBytes("the result metadata ID")
		}
		p.Bound.decode(d, v, true)
		p.Result.decode(d, v, false)
		return p
	case kindSchemaChange:
		s := &SchemaChange{}
		s.decode(d)
		return s
	default:
		d.fail("Unknown result kind %d", kind)
		return &Void{}
	}
}

// Compile-time proof that every message is one.
var (
	_ Message = (*Startup)(nil)
	_ Message = (*AuthResponse)(nil)
	_ Message = (*Options)(nil)
	_ Message = (*Query)(nil)
	_ Message = (*Prepare)(nil)
	_ Message = (*Execute)(nil)
	_ Message = (*Batch)(nil)
	_ Message = (*Register)(nil)
	_ Message = (*Error)(nil)
	_ Message = (*Ready)(nil)
	_ Message = (*Authenticate)(nil)
	_ Message = (*Supported)(nil)
	_ Message = (*AuthChallenge)(nil)
	_ Message = (*AuthSuccess)(nil)
	_ Message = (*Event)(nil)
	_ Result  = (*Void)(nil)
	_ Result  = (*Rows)(nil)
	_ Result  = (*SetKeyspace)(nil)
	_ Result  = (*Prepared)(nil)
	_ Result  = (*SchemaChange)(nil)
	_ error   = (*Error)(nil)

	_ Compressor = lz4Compressor{}
	_ Compressor = snappyCompressor{}
)
