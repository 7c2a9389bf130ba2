package rpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/sedimentdb/sediment/internal/storage"
)

// Code classifies an error carried in an error frame, so that the storage
// error classes keep their identity across the hop.
type Code uint8

const (
	// CodeInternal is any error without a code of its own.
	CodeInternal Code = 0
	// CodeOverloaded is storage.ErrOverloaded: the write was not applied,
	// retry later or elsewhere.
	CodeOverloaded Code = 1
	// CodeFenced is storage.ErrFenced: the node no longer owns the range.
	CodeFenced Code = 2
	// CodeInvalidMutation is storage.ErrInvalidMutation: never retry.
	CodeInvalidMutation Code = 3
	// CodeTooLarge is storage.ErrTooLarge: never retry.
	CodeTooLarge Code = 4
	// CodeClosed is storage.ErrClosed: the node is shutting down.
	CodeClosed Code = 5
	// CodeProtocol is ErrProtocol: the server could not decode the request.
	CodeProtocol Code = 6
	// CodeDeadline is context.DeadlineExceeded: the request's timeout ran
	// out on the server; the write may or may not have been applied.
	CodeDeadline Code = 7
	// CodeUnavailable is storage.ErrUnavailable: the node's log has no
	// quorum; nothing is known to be written, retry later or elsewhere.
	CodeUnavailable Code = 8
	// CodeTimeout is storage.ErrTimeout: the node's log did not confirm
	// the write in time; it may or may not be applied.
	CodeTimeout Code = 9
)

// sentinels maps each code to the error it stands for.
var sentinels = [...]error{
	CodeOverloaded:      storage.ErrOverloaded,
	CodeFenced:          storage.ErrFenced,
	CodeInvalidMutation: storage.ErrInvalidMutation,
	CodeTooLarge:        storage.ErrTooLarge,
	CodeClosed:          storage.ErrClosed,
	CodeProtocol:        ErrProtocol,
	CodeDeadline:        context.DeadlineExceeded,
	CodeUnavailable:     storage.ErrUnavailable,
	CodeTimeout:         storage.ErrTimeout,
}

func codeOf(err error) Code {
	for c, s := range sentinels {
		if s != nil && errors.Is(err, s) {
			return Code(c)
		}
	}
	return CodeInternal
}

// Error is an error returned by the server. It matches, with errors.Is,
// the error its code stands for (storage.ErrOverloaded, storage.ErrFenced,
// ...), and carries the server's message.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return "rpc: remote: " + e.Message }

// Unwrap returns the sentinel of e's code, or nil.
func (e *Error) Unwrap() error {
	if int(e.Code) < len(sentinels) {
		return sentinels[e.Code]
	}
	return nil
}

var (
	// ErrConnLost fails the requests in flight on a connection that broke.
	// It is a storage.ErrTimeout: a write that fails with it may or may not
	// have been applied, so the client never retries writes by itself.
	ErrConnLost = fmt.Errorf("rpc: connection lost (%w)", storage.ErrTimeout)
	// ErrClosed is returned by a closed Client.
	ErrClosed = errors.New("rpc: client closed")
)
