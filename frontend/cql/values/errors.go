package values

import "errors"

// ErrInvalid matches every *Error, for callers that only need to know a
// value was rejected.
var ErrInvalid = errors.New("values: invalid value")

// Error is a term or JSON value that does not fit its type. Its message may
// name the receiver (the column); Message fills the name in.
type Error struct {
	// before and after surround the receiver name; named reports whether
	// the message names the receiver at all, quote whether in quotes.
	before, after string
	named, quote  bool
	// syntax: the text is not JSON at all (FromJSON), rather than JSON
	// that does not fit the type.
	syntax bool
}

// JSONSyntax reports an error of FromJSON on text that is not JSON.
func (e *Error) JSONSyntax() bool { return e.syntax }

// errorf returns an error that does not name its receiver, such as
// Cassandra's MarshalException messages.
func errorf(msg string) *Error { return &Error{before: msg} }

// receiverError returns an error whose message is before + name + after;
// quote puts the name in double quotes.
func receiverError(before, after string, quote bool) *Error {
	return &Error{before: before, after: after, named: true, quote: quote}
}

// Message returns the error's text with the receiver named column, as
// Cassandra words it.
func (e *Error) Message(column string) string {
	if !e.named {
		return e.before
	}
	if e.quote {
		column = `"` + column + `"`
	}
	return e.before + column + e.after
}

// Error returns the message with the receiver written as "?".
func (e *Error) Error() string { return "values: " + e.Message("?") }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
