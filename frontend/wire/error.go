package wire

import "fmt"

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

	Keyspace string
	Table    string
	Function string
	ArgTypes []string

	ID []byte
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
	e.string(m.Message)
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
			e.int(m.NumFailures)
		}
		e.string(m.WriteType)
	case CodeReadTimeout, CodeReadFailure:
		e.short(uint16(m.Consistency))
		e.int(m.Received)
		e.int(m.BlockFor)
		if m.Code == CodeReadFailure {
			e.int(m.NumFailures)
		}
		e.byte(boolByte(m.DataPresent))
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

func (m *Error) decode(d *decoder) {
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
			m.NumFailures = d.int("failures")
		}
		m.WriteType = d.string("the write type")
	case CodeReadTimeout, CodeReadFailure:
		m.Consistency = d.consistency("the consistency")
		m.Received = d.int("received responses")
		m.BlockFor = d.int("required responses")
		if m.Code == CodeReadFailure {
			m.NumFailures = d.int("failures")
		}
		m.DataPresent = d.byte("data present") != 0
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
