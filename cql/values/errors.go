package values

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid matches every *Error, for callers that only need to know a
// value was rejected.
var ErrInvalid = errors.New("values: invalid value")

// Error is a term or JSON value that does not fit its type. Its message may
// name the receiver; Message fills in the column name.
type Error struct {
	// before and after surround the receiver name; named reports whether
	// the message names the receiver at all.
	before, after string
	named         bool
	quote         bool
	// path holds the element steps from the column down to the bad
	// element, outermost first.
	path []step
}

type stepKind uint8

const (
	stepValue     stepKind = iota // list or set element, map value: value(k)
	stepKey                       // map key: key(k)
	stepComponent                 // tuple component: k[i]
	stepField                     // user type field: k.f
)

type step struct {
	kind  stepKind
	index int
	field string
}

// errorf returns an error that does not name its receiver, such as
// Cassandra's MarshalException messages.
func errorf(msg string) *Error { return &Error{before: msg} }

// receiverError returns an error whose message is before + name + after;
// quote puts the name in double quotes.
func receiverError(before, after string, quote bool) *Error {
	return &Error{before: before, after: after, named: true, quote: quote}
}

// within records that e was found inside an element reached by s. Steps
// are added innermost first, as the recursion unwinds.
func within(err error, s step) error {
	var e *Error
	if errors.As(err, &e) {
		e.path = append([]step{s}, e.path...)
	}
	return err
}

// Message returns the error's text with the receiver named after column,
// as Cassandra words it.
func (e *Error) Message(column string) string {
	if !e.named {
		return e.before
	}
	name := column
	for _, s := range e.path {
		switch s.kind {
		case stepValue:
			name = "value(" + name + ")"
		case stepKey:
			name = "key(" + name + ")"
		case stepComponent:
			name = name + "[" + strconv.Itoa(s.index) + "]"
		case stepField:
			name = name + "." + s.field
		}
	}
	var b strings.Builder
	b.WriteString(e.before)
	if e.quote {
		b.WriteByte('"')
	}
	b.WriteString(name)
	if e.quote {
		b.WriteByte('"')
	}
	b.WriteString(e.after)
	return b.String()
}

// Error returns the message with the receiver written as "?".
func (e *Error) Error() string { return "values: " + e.Message("?") }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
