package wire

import "fmt"

// ErrorCode is the code of an ERROR response: what went wrong, in the
// words of the native protocol (native_protocol_v4.spec, section 9
// "Error codes"). This file is the one table of them: the frontend maps
// every error it answers with to one of these codes.
type ErrorCode int32

// The error codes, each with its meaning in the spec and the fields of
// Error it carries.
const (
	// CodeServer: something unexpected happened; a server-side bug.
	CodeServer ErrorCode = 0x0000
	// CodeProtocol: a client message violated the protocol (for instance
	// a QUERY sent before STARTUP).
	CodeProtocol ErrorCode = 0x000A
	// CodeBadCredentials: authentication was required and failed.
	CodeBadCredentials ErrorCode = 0x0100
	// CodeUnavailable: too few replicas alive to achieve the consistency
	// level; the request was not processed. Carries Consistency, Required
	// (the replicas needed) and Alive (those known alive, fewer).
	CodeUnavailable ErrorCode = 0x1000
	// CodeOverloaded: the coordinator is overloaded and cannot process
	// the request.
	CodeOverloaded ErrorCode = 0x1001
	// CodeIsBootstrapping: a read reached a coordinator that is
	// bootstrapping.
	CodeIsBootstrapping ErrorCode = 0x1002
	// CodeTruncate: a truncation failed.
	CodeTruncate ErrorCode = 0x1003
	// CodeWriteTimeout: a write timed out; it may or may not have been
	// applied. Carries Consistency, Received (the replicas that
	// acknowledged), BlockFor (those required) and WriteType.
	CodeWriteTimeout ErrorCode = 0x1100
	// CodeReadTimeout: a read timed out. Carries Consistency, Received
	// (the replicas that answered), BlockFor (those required) and
	// DataPresent (whether the replica asked for data answered).
	CodeReadTimeout ErrorCode = 0x1200
	// CodeReadFailure (v4): a read failed on replicas, not by a timeout.
	// Carries Consistency, Received, BlockFor, NumFailures (v4) or a
	// reason map (v5), DataPresent.
	CodeReadFailure ErrorCode = 0x1300
	// CodeFunctionFailure (v4): a user-defined function failed. Carries
	// Keyspace, Function and ArgTypes.
	CodeFunctionFailure ErrorCode = 0x1400
	// CodeWriteFailure (v4): a write failed on replicas, not by a timeout.
	// Carries Consistency, Received, BlockFor, NumFailures (v4) or a
	// reason map (v5), WriteType.
	CodeWriteFailure ErrorCode = 0x1500
	// CodeCDCWriteFailure (v5): a write to a table with CDC failed.
	CodeCDCWriteFailure ErrorCode = 0x1600
	// CodeCASWriteUnknown (v5): a contended conditional write may or may
	// not have been applied. Carries Consistency, Received, BlockFor.
	CodeCASWriteUnknown ErrorCode = 0x1700
	// CodeSyntax: the statement has a syntax error.
	CodeSyntax ErrorCode = 0x2000
	// CodeUnauthorized: the logged-in user may not run the statement.
	CodeUnauthorized ErrorCode = 0x2100
	// CodeInvalid: the statement is syntactically correct but invalid.
	CodeInvalid ErrorCode = 0x2200
	// CodeConfig: the statement is invalid because of the configuration.
	CodeConfig ErrorCode = 0x2300
	// CodeAlreadyExists: the statement creates a keyspace or table that
	// exists. Carries Keyspace and Table (empty for a keyspace).
	CodeAlreadyExists ErrorCode = 0x2400
	// CodeUnprepared: the prepared statement ID of an EXECUTE or BATCH is
	// not known to this host; drivers prepare it again. Carries ID.
	CodeUnprepared ErrorCode = 0x2500
)

var codeNames = map[ErrorCode]string{
	CodeServer: "Server error", CodeProtocol: "Protocol error", CodeBadCredentials: "Bad credentials",
	CodeUnavailable: "Unavailable", CodeOverloaded: "Overloaded", CodeIsBootstrapping: "Is bootstrapping",
	CodeTruncate: "Truncate error", CodeWriteTimeout: "Write timeout", CodeReadTimeout: "Read timeout",
	CodeReadFailure: "Read failure", CodeFunctionFailure: "Function failure", CodeWriteFailure: "Write failure",
	CodeCDCWriteFailure: "CDC write failure", CodeCASWriteUnknown: "CAS write unknown",
	CodeSyntax: "Syntax error", CodeUnauthorized: "Unauthorized", CodeInvalid: "Invalid",
	CodeConfig: "Config error", CodeAlreadyExists: "Already exists", CodeUnprepared: "Unprepared",
}

// String returns the code's name in the spec.
func (c ErrorCode) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("0x%04X", int32(c))
}

// The write types of a Write_timeout or Write_failure (Error.WriteType)
// that Sediment sends.
const (
	// WriteSimple: a write neither batched nor of a counter.
	WriteSimple = "SIMPLE"
	// WriteBatch: a logged batch, whose batch log was written.
	WriteBatch = "BATCH"
	// WriteUnloggedBatch: an unlogged batch; no batch log was written.
	WriteUnloggedBatch = "UNLOGGED_BATCH"
	// WriteCounter: a counter write, batched or not.
	WriteCounter = "COUNTER"
	// WriteCAS: a conditional write (lightweight transaction).
	WriteCAS = "CAS"
)
