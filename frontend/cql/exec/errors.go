package exec

import (
	"context"
	"errors"
	"fmt"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/storage"
)

// Error is an error for the client: a protocol error code, Cassandra's
// message, and the code's extra fields. Every error the executor returns to
// the server is one; the server encodes it as an ERROR message.
type Error struct {
	Code    wire.ErrorCode
	Message string
	// Keyspace and Table of wire.CodeAlreadyExists (Table empty for a
	// keyspace).
	Keyspace, Table string
	// ID of wire.CodeUnprepared.
	ID []byte
	// WriteType of wire.CodeWriteTimeout: one of the wire.Write* types.
	WriteType string
	// DataPresent of wire.CodeReadTimeout.
	DataPresent bool
	// Cause is the internal error, for logs; never sent to clients.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the internal cause, so errors.Is finds it.
func (e *Error) Unwrap() error { return e.Cause }

// invalidf is an Invalid error (0x2200), worded like Cassandra's.
func invalidf(format string, args ...any) *Error {
	return &Error{Code: wire.CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// syntaxf is a Syntax error (0x2000).
func syntaxf(format string, args ...any) *Error {
	return &Error{Code: wire.CodeSyntax, Message: fmt.Sprintf(format, args...)}
}

// unauthorizedf is an Unauthorized error (0x2100).
func unauthorizedf(format string, args ...any) *Error {
	return &Error{Code: wire.CodeUnauthorized, Message: fmt.Sprintf(format, args...)}
}

// configf is a Config error (0x2300).
func configf(format string, args ...any) *Error {
	return &Error{Code: wire.CodeConfig, Message: fmt.Sprintf(format, args...)}
}

// alreadyExists is an Already_exists error for a keyspace (table empty) or
// a table, with Cassandra's message.
func alreadyExists(keyspace, table string) *Error {
	msg := fmt.Sprintf("Cannot add existing keyspace \"%s\"", keyspace)
	if table != "" {
		msg = fmt.Sprintf("Cannot add already existing table \"%s\" to keyspace \"%s\"", table, keyspace)
	}
	return &Error{Code: wire.CodeAlreadyExists, Message: msg, Keyspace: keyspace, Table: table}
}

// unprepared is an Unprepared error for an unknown statement id.
func unprepared(id []byte) *Error {
	return &Error{
		Code:    wire.CodeUnprepared,
		Message: fmt.Sprintf("Prepared query with ID %x not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", id),
		ID:      append([]byte(nil), id...),
	}
}

// serverError is a Server_error for an internal failure.
func serverError(err error) *Error {
	return &Error{Code: wire.CodeServer, Message: err.Error(), Cause: err}
}

// timedOut is the message of Write_timeout and Read_timeout, Cassandra's.
const timedOut = "Operation timed out - received only 0 responses."

// storageError maps an error of the engine, by its storage class, to the
// client's error: of a read if wt is empty, else of a write of type wt. It
// returns nil for an error of no class. This is the one place where the
// classes meet CQL codes.
func storageError(err error, wt string) *Error {
	switch {
	case errors.Is(err, storage.ErrOverloaded):
		return &Error{Code: wire.CodeOverloaded, Message: "Server is overloaded: memtable memory exhausted, retry later", Cause: err}
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrFenced), errors.Is(err, storage.ErrFlushRaced):
		// Nothing was done and another attempt may find the range's new
		// owner, or SSTables past the raced flush: drivers retry an
		// Unavailable on the next host, but not a timeout without answers.
		return &Error{Code: wire.CodeUnavailable, Message: "Cannot achieve consistency level: no reachable owner of the token range", Cause: err}
	case errors.Is(err, storage.ErrTooLarge):
		// The client's to split, as Cassandra's "Mutation ... too large".
		return &Error{Code: wire.CodeInvalid, Message: "Mutation is too large for the maximum size of a commitlog record: " + err.Error(), Cause: err}
	case errors.Is(err, storage.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		// The request's fate is unknown, which is what a timeout tells.
		if wt == "" {
			return &Error{Code: wire.CodeReadTimeout, Message: timedOut, Cause: err}
		}
		return &Error{Code: wire.CodeWriteTimeout, Message: timedOut, WriteType: wt, Cause: err}
	}
	// storage.ErrInvalidMutation and storage.ErrClosed are Server_errors:
	// the executor built a bad mutation, or the node is going away.
	return nil
}

// writeError maps an error of an engine write of type wt (a wire.Write*
// type) to the client's error.
func writeError(err error, wt string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := storageError(err, wt); e != nil {
		return e
	}
	return toError(err)
}

// truncateError maps an error of an engine truncation to the client's
// error: one that timed out, or of no class, is a Truncate_error, as
// Cassandra's.
func truncateError(err error) *Error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, storage.ErrTimeout) {
		if e := storageError(err, ""); e != nil {
			return e
		}
	}
	return &Error{Code: wire.CodeTruncate, Message: fmt.Sprintf("Error during truncate: %v", err), Cause: err}
}

// toError maps any error, an engine read's among them, to the client's
// error. An *Error passes as it is; a malformed value is Invalid with
// cqltype's Cassandra-like message; an error of a storage class is mapped as
// a read's; everything else is a Server_error.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var me *cqltype.MarshalError
	if errors.As(err, &me) {
		return &Error{Code: wire.CodeInvalid, Message: me.Msg, Cause: err}
	}
	if e := storageError(err, ""); e != nil {
		return e
	}
	return serverError(err)
}

// wireError converts an executor error to the *wire.Error sent to clients.
// Sediment holds each row once, behind one owner, so every request is at
// consistency ONE of one replica, which the fields of Unavailable and the
// timeouts report.
func wireError(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	e := toError(err)
	if e.Code == wire.CodeServer && e.Cause != nil {
		// The cause's text may name files and internals (a full
		// commitlog disk's path): the transport logs it with the
		// connection and stream it sends the client instead.
		return e.Cause
	}
	return &wire.Error{
		Code:        e.Code,
		Message:     e.Message,
		Keyspace:    e.Keyspace,
		Table:       e.Table,
		ID:          e.ID,
		WriteType:   e.WriteType,
		DataPresent: e.DataPresent,
		Consistency: wire.One,
		BlockFor:    1,
		Required:    1,
	}
}
