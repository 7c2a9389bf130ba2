package wire

import (
	"fmt"
	"math"
	"net/netip"
	"unicode/utf8"
)

// Error is an ERROR response, and a Go error that the frontend sends as
// it is. Fields other than Code and Message are used by the codes that
// carry them (see the codes).
type Error struct {
	Code    ErrorCode
	Message string

	Consistency Consistency
	Required    int32
	Alive       int32
	Received    int32
	BlockFor    int32
	NumFailures int32
	// WriteType is one of the Write* types, or BATCH_LOG, VIEW or CDC.
	WriteType   string
	DataPresent bool
	// Contentions (v5) counts the contentions of a CAS write timeout.
	Contentions uint16
	// Reasons (v5) are the replicas of a read or write failure, each with
	// the code of its failure; v5 sends them in place of NumFailures.
	Reasons []FailureReason

	Keyspace string
	Table    string
	Function string
	ArgTypes []string

	ID []byte
}

// FailureReason is a replica that failed a request and why (v5).
type FailureReason struct {
	Addr netip.Addr
	// Code is Cassandra's RequestFailureReason: 0 unknown, 1 too many
	// tombstones read, 2 incompatible schema...
	Code uint16
}

// fitMessage cuts a message longer than a [string] allows at a character
// boundary, marked by "...": an error that echoes a huge input (a deeply
// nested literal, a long name) keeps its code rather than becoming a
// Server error.
func fitMessage(msg string) string {
	const limit = math.MaxUint16
	if len(msg) <= limit {
		return msg
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}

// Errorf returns an *Error with code c and a formatted message.
func Errorf(c ErrorCode, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Message }

func (*Error) Opcode() Opcode { return OpError }

func (m *Error) AppendBody(dst []byte, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.int(int32(m.Code))
	e.string(fitMessage(m.Message))
	switch m.Code {
	case CodeUnavailable:
		e.short(uint16(m.Consistency))
		e.int(m.Required)
		e.int(m.Alive)
	case CodeWriteTimeout, CodeWriteFailure:
		e.short(uint16(m.Consistency))
		e.int(m.Received)
		e.int(m.BlockFor)
		if m.Code == CodeWriteFailure {
			m.appendFailures(&e, v)
		}
		e.string(m.WriteType)
		if m.Code == CodeWriteTimeout && v >= V5 && m.WriteType == "CAS" {
			e.short(m.Contentions)
		}
	case CodeReadTimeout, CodeReadFailure:
		e.short(uint16(m.Consistency))
		e.int(m.Received)
		e.int(m.BlockFor)
		if m.Code == CodeReadFailure {
			m.appendFailures(&e, v)
		}
		e.byte(boolByte(m.DataPresent))
	case CodeCASWriteUnknown:
		e.short(uint16(m.Consistency))
		e.int(m.Received)
		e.int(m.BlockFor)
	case CodeFunctionFailure:
		e.string(m.Keyspace)
		e.string(m.Function)
		e.stringList(m.ArgTypes)
	case CodeAlreadyExists:
		e.string(m.Keyspace)
		e.string(m.Table)
	case CodeUnprepared:
		e.shortBytes(m.ID)
	}
	return e.b, e.err
}

// appendFailures appends the failures: their count before v5, the
// reason map from v5.
func (m *Error) appendFailures(e *encoder, v Version) {
	if v < V5 {
		e.int(m.NumFailures)
		return
	}
	e.intLen(len(m.Reasons), "failure reasons")
	for _, r := range m.Reasons {
		a := r.Addr.AsSlice()
		if len(a) == 0 {
			e.failf("failure reason without an address")
			return
		}
		e.byte(byte(len(a)))
		e.b = append(e.b, a...)
		e.short(r.Code)
	}
}

func (m *Error) decodeFailures(d *decoder, v Version) {
	if v < V5 {
		m.NumFailures = d.int("failures")
		return
	}
	n := d.intCount(7, "failure reasons")
	m.Reasons = make([]FailureReason, n)
	for i := 0; i < n && d.err == nil; i++ {
		size := int(d.byte("an address size"))
		if d.err == nil && size != 4 && size != 16 {
			d.fail("Invalid IP address length %d", size)
		}
		a, _ := netip.AddrFromSlice(d.raw(size, "an address"))
		m.Reasons[i] = FailureReason{Addr: a, Code: d.short("a failure code")}
	}
	m.NumFailures = int32(n)
}

func (m *Error) decode(d *decoder, v Version) {
	m.Code = ErrorCode(d.int("the error code"))
	m.Message = d.string("the error message")
	switch m.Code {
	case CodeUnavailable:
		m.Consistency = d.consistency("the consistency")
		m.Required = d.int("required replicas")
		m.Alive = d.int("alive replicas")
	case CodeWriteTimeout, CodeWriteFailure:
		m.Consistency = d.consistency("the consistency")
		m.Received = d.int("received acknowledgements")
		m.BlockFor = d.int("required acknowledgements")
		if m.Code == CodeWriteFailure {
			m.decodeFailures(d, v)
		}
		m.WriteType = d.string("the write type")
		if m.Code == CodeWriteTimeout && v >= V5 && m.WriteType == "CAS" {
			m.Contentions = d.short("the contentions")
		}
	case CodeReadTimeout, CodeReadFailure:
		m.Consistency = d.consistency("the consistency")
		m.Received = d.int("received responses")
		m.BlockFor = d.int("required responses")
		if m.Code == CodeReadFailure {
			m.decodeFailures(d, v)
		}
		m.DataPresent = d.byte("data present") != 0
	case CodeCASWriteUnknown:
		m.Consistency = d.consistency("the consistency")
		m.Received = d.int("received acknowledgements")
		m.BlockFor = d.int("required acknowledgements")
	case CodeFunctionFailure:
		m.Keyspace = d.string("the keyspace")
		m.Function = d.string("the function")
		m.ArgTypes = d.stringList("the argument types")
	case CodeAlreadyExists:
		m.Keyspace = d.string("the keyspace")
		m.Table = d.string("the table")
	case CodeUnprepared:
		m.ID = d.shortBytes("the prepared ID")
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
