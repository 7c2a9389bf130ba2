package exec

import (
	"context"
	"errors"
	"fmt"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/storage"
)

// Code is a native protocol error code (native_protocol_v4.spec, section 9).
type Code int32

// The error codes the executor answers with.
const (
	// CodeServer: something unexpected happened on the server; a bug or an
	// internal failure without a better code.
	CodeServer Code = 0x0000
	// CodeProtocol: the client broke the protocol.
	CodeProtocol Code = 0x000A
	// CodeUnavailable: not enough replicas (here: no owner of the token
	// range) to serve the request at all; nothing was written.
	CodeUnavailable Code = 0x1000
	// CodeOverloaded: the node refuses the request because it is
	// overloaded (memtable memory exhausted); the client may retry.
	CodeOverloaded Code = 0x1001
	// CodeTruncate: a TRUNCATE failed.
	CodeTruncate Code = 0x1003
	// CodeWriteTimeout: a write did not complete in time; it may or may
	// not have been applied.
	CodeWriteTimeout Code = 0x1100
	// CodeReadTimeout: a read did not complete in time.
	CodeReadTimeout Code = 0x1200
	// CodeSyntax: the statement does not parse.
	CodeSyntax Code = 0x2000
	// CodeUnauthorized: the logged-in user may not run the statement.
	CodeUnauthorized Code = 0x2100
	// CodeInvalid: the statement is syntactically correct but invalid.
	CodeInvalid Code = 0x2200
	// CodeConfig: the statement is invalid because of the configuration.
	CodeConfig Code = 0x2300
	// CodeAlreadyExists: CREATE of a keyspace or table that exists.
	CodeAlreadyExists Code = 0x2400
	// CodeUnprepared: EXECUTE of an unknown prepared statement id.
	CodeUnprepared Code = 0x2500
)

// Error is an error for the client: a protocol error code, Cassandra's
// message, and the code's extra fields. Every error the executor returns to
// the server is one; the server encodes it as an ERROR message.
type Error struct {
	Code    Code
	Message string
	// Keyspace and Table of CodeAlreadyExists (Table empty for a keyspace).
	Keyspace, Table string
	// ID of CodeUnprepared.
	ID []byte
	// WriteType of CodeWriteTimeout: SIMPLE, BATCH, UNLOGGED_BATCH,
	// COUNTER, BATCH_LOG or CAS.
	WriteType string
	// DataPresent of CodeReadTimeout.
	DataPresent bool
	// Cause is the internal error, for logs; never sent to clients.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the internal cause, so errors.Is finds it.
func (e *Error) Unwrap() error { return e.Cause }

// invalidf is an Invalid error (0x2200), worded like Cassandra's.
func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// syntaxf is a Syntax error (0x2000).
func syntaxf(format string, args ...any) *Error {
	return &Error{Code: CodeSyntax, Message: fmt.Sprintf(format, args...)}
}

// unauthorizedf is an Unauthorized error (0x2100).
func unauthorizedf(format string, args ...any) *Error {
	return &Error{Code: CodeUnauthorized, Message: fmt.Sprintf(format, args...)}
}

// configf is a Config error (0x2300).
func configf(format string, args ...any) *Error {
	return &Error{Code: CodeConfig, Message: fmt.Sprintf(format, args...)}
}

// alreadyExists is an Already_exists error for a keyspace (table empty) or
// a table, with Cassandra's message.
func alreadyExists(keyspace, table string) *Error {
	msg := fmt.Sprintf("Cannot add existing keyspace \"%s\"", keyspace)
	if table != "" {
		msg = fmt.Sprintf("Cannot add already existing table \"%s\" to keyspace \"%s\"", table, keyspace)
	}
	return &Error{Code: CodeAlreadyExists, Message: msg, Keyspace: keyspace, Table: table}
}

// unprepared is an Unprepared error for an unknown statement id.
func unprepared(id []byte) *Error {
	return &Error{
		Code:    CodeUnprepared,
		Message: fmt.Sprintf("Prepared query with ID %x not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", id),
		ID:      append([]byte(nil), id...),
	}
}

// serverError is a Server_error for an internal failure.
func serverError(err error) *Error {
	return &Error{Code: CodeServer, Message: err.Error(), Cause: err}
}

// Write types of Write_timeout errors.
const (
	writeSimple        = "SIMPLE"
	writeBatch         = "BATCH"
	writeUnloggedBatch = "UNLOGGED_BATCH"
	writeCounter       = "COUNTER"
	writeCAS           = "CAS"
)

// writeError maps an error of an engine write to the client's error:
// overload, timeout (as a write of type wt), unavailable owner, or
// server error. A write whose connection to its node broke may or may not
// have been applied, which is what a Write_timeout tells a client.
func writeError(err error, wt string) *Error {
	if e := engineError(err); e != nil {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, storage.ErrTimeout) {
		return &Error{Code: CodeWriteTimeout, Message: "Operation timed out - received only 0 responses.", WriteType: wt, Cause: err}
	}
	return toError(err)
}

// readError maps an error of an engine read to the client's error.
func readError(err error) *Error {
	if e := engineError(err); e != nil {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, storage.ErrTimeout) {
		return &Error{Code: CodeReadTimeout, Message: "Operation timed out - received only 0 responses.", Cause: err}
	}
	return toError(err)
}

// engineError maps the engine's errors that mean the same for reads and
// writes; nil for others.
func engineError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, storage.ErrOverloaded):
		return &Error{Code: CodeOverloaded, Message: "Server is overloaded: memtable memory exhausted, retry later", Cause: err}
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrFlushRaced), errors.Is(err, storage.ErrFenced):
		return &Error{Code: CodeUnavailable, Message: "Cannot achieve consistency level: no reachable owner of the token range", Cause: err}
	}
	return nil
}

// toError maps any error to the client's error. An *Error passes as it is;
// a malformed value is Invalid with cqltype's Cassandra-like message;
// everything else is a Server_error.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var me *cqltype.MarshalError
	if errors.As(err, &me) {
		return &Error{Code: CodeInvalid, Message: me.Msg, Cause: err}
	}
	if e := engineError(err); e != nil {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeReadTimeout, Message: "Operation timed out - received only 0 responses.", Cause: err}
	}
	return serverError(err)
}
