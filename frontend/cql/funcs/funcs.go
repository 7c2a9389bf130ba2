// Package funcs is Cassandra's library of native CQL functions: the time and
// uuid functions, the blob conversions, casts and the aggregates.
//
// Functions are found by name and argument types, as Cassandra resolves
// overloads:
//
//	name                      signatures (-> result)
//	------------------------  ---------------------------------------------------
//	now, currenttimeuuid      () -> timeuuid
//	uuid                      () -> uuid
//	currenttimestamp          () -> timestamp
//	currentdate, currenttime  () -> date, () -> time
//	totimestamp               (date), (timeuuid) -> timestamp
//	todate                    (timestamp), (timeuuid) -> date
//	tounixtimestamp           (date), (timestamp), (timeuuid) -> bigint
//	dateof, unixtimestampof   (timeuuid) -> timestamp, bigint
//	mintimeuuid, maxtimeuuid  (timestamp) -> timeuuid
//	blobasT, TasBlob          (blob) -> T, (T) -> blob, for every native T
//	castAsT                   (U) -> T, for the conversions of Cast (quoted:
//	                          "castAsInt"; named cast(x as t) in selections)
//	tojson                    (any) -> text; fromjson by its receiver (FromJSON)
//	count                     (any) -> bigint; countrows () -> bigint is COUNT(*)
//	min, max                  (T) -> T, for any T
//	sum, avg                  (T) -> T, for every number type and counter
//
// Names are lower case, as Cassandra registers them; the keyspace may be
// empty or "system". Values are serialized as everywhere in Sediment (see
// package cqltype); native functions return null when an argument is null.
package funcs

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/token"
)

// ErrUnknown matches the error Lookup returns for a name no function has.
var ErrUnknown = errors.New("funcs: unknown function")

// Error is a call that cannot be resolved or evaluated. Msg is worded like
// Cassandra's InvalidRequestException for the client.
type Error struct {
	Msg     string
	unknown bool
}

func (e *Error) Error() string { return "funcs: " + e.Msg }

// Is makes errors.Is(err, ErrUnknown) hold for unknown functions.
func (e *Error) Is(target error) bool { return e.unknown && target == ErrUnknown }

func errorf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Function is one signature of a native function: a scalar function or an
// aggregate.
type Function struct {
	// Name is the function's lower-case name.
	Name string
	// Args are the argument types. Return is the result type.
	Args   []*cqltype.Type
	Return *cqltype.Type
	// Deterministic is false for functions whose result changes from call
	// to call, such as now(); a prepared statement must call them each time.
	Deterministic bool

	scalar func(args [][]byte) ([]byte, error)
	newAcc func() Acc
}

// IsAggregate reports whether f is an aggregate, used through New rather
// than Call.
func (f *Function) IsAggregate() bool { return f.newAcc != nil }

// Call evaluates a scalar function with serialized arguments of the types
// in Args (nil for null).
func (f *Function) Call(args [][]byte) ([]byte, error) {
	if f.scalar == nil {
		return nil, errorf("%s is an aggregate function", f.Name)
	}
	if len(args) != len(f.Args) {
		return nil, errorf("Invalid number of arguments in call to function system.%s: %d required but %d provided", f.Name, len(f.Args), len(args))
	}
	return f.scalar(args)
}

// New returns a fresh accumulator of an aggregate, or nil for a scalar
// function.
func (f *Function) New() Acc {
	if f.newAcc == nil {
		return nil
	}
	return f.newAcc()
}

// String returns the signature as Cassandra writes it in messages:
// system.totimestamp : (date) -> timestamp.
func (f *Function) String() string {
	args := make([]string, len(f.Args))
	for i, a := range f.Args {
		args[i] = a.String()
	}
	return fmt.Sprintf("system.%s : (%s) -> %s", f.Name, strings.Join(args, ", "), f.Return)
}

// candidates returns the signatures of name, or nil. count, min and max
// take any type, so their signatures are made for the argument given: n
// arguments, the first of type first (nil if unknown).
func candidates(name string, n int, first *cqltype.Type) []*Function {
	switch name {
	case "tojson":
		if first != nil {
			return []*Function{toJSON(first)}
		}
		return []*Function{toJSON(cqltype.BlobType)}
	case "count", "min", "max":
		if first != nil {
			return []*Function{aggregateFor(name, first)}
		}
		if n == 1 {
			// Without a type the call is ambiguous; show one signature per
			// native type, as Cassandra declares them (varchar is text).
			var out []*Function
			for _, t := range nativeTypes {
				if t.name != "varchar" {
					out = append(out, aggregateFor(name, t.typ))
				}
			}
			return out
		}
		return []*Function{aggregateFor(name, cqltype.BlobType)}
	}
	return registry[name]
}

// Arg is an argument of a call, as the resolver sees it.
type Arg struct {
	// Text is the argument as Cassandra prints it in messages: a column's
	// name, a literal as written, a marker, a nested call's text.
	Text string
	// Type is the argument's own type (a column, a function's result, a
	// hint). It is nil for a literal or a bind marker, which takes the
	// type of the parameter it is passed to.
	Type *cqltype.Type
	// Term is the literal or marker when Type is nil: it matches exactly
	// the parameter of its preferred type (1 an int, 'a' an ascii),
	// weakly the others it can be assigned to (values.Assignable). A nil
	// Term with a nil Type matches any parameter weakly.
	Term ast.Term
}

// fits tells how well a fits a parameter of type param.
func (a Arg) fits(param *cqltype.Type) match {
	switch {
	case a.Type != nil:
		return typeMatch(param, a.Type)
	case a.Term == nil:
		return weak
	case !values.Assignable(param, a.Term):
		return none
	}
	if lit, ok := a.Term.(*ast.Literal); ok {
		if p := preferredType(lit); p != nil && p.Equal(param) {
			return exact
		}
	}
	return weak
}

// Lookup finds the function a call names, by its arguments, as Cassandra's
// FunctionResolver does: an argument of known type matches a parameter of
// that type exactly, and weakly one that can read its values (typeMatch);
// literals and markers match by Arg.Term.
// The signature with the most exact matches wins.
//
// The error for a name with no function matches ErrUnknown; its message is
// "Unknown function 'name'". A name whose signatures do not fit the
// arguments, or fit more than one way, gets Cassandra's messages, which
// show the arguments by their Text.
func Lookup(keyspace, name string, args []Arg) (*Function, error) {
	var first *cqltype.Type
	if len(args) == 1 {
		first = args[0].Type
	}
	var cands []*Function
	if keyspace == "" || keyspace == "system" {
		cands = candidates(name, len(args), first)
	}
	if len(cands) == 0 {
		qualified := name
		if keyspace != "" {
			qualified = keyspace + "." + name
		}
		return nil, &Error{Msg: fmt.Sprintf("Unknown function '%s'", qualified), unknown: true}
	}
	var best []*Function
	bestExact := -1
	for _, f := range cands {
		if len(f.Args) != len(args) {
			continue
		}
		exacts, ok := 0, true
		for i, p := range f.Args {
			switch args[i].fits(p) {
			case none:
				ok = false
			case exact:
				exacts++
			}
		}
		if !ok {
			continue
		}
		switch {
		case exacts > bestExact:
			best, bestExact = []*Function{f}, exacts
		case exacts == bestExact:
			best = append(best, f)
		}
	}
	switch {
	case len(best) == 1:
		return best[0], nil
	case len(best) > 1:
		return nil, errorf("Ambiguous call to function %s (can be matched by following signatures: %s): use type casts to disambiguate", name, signatures(best))
	case len(cands) == 1:
		// One signature: say what is wrong with the call, as Cassandra's
		// validateTypes does, naming the function in full.
		f := cands[0]
		if len(f.Args) != len(args) {
			return nil, errorf("Invalid number of arguments in call to function system.%s: %d required but %d provided", f.Name, len(f.Args), len(args))
		}
		for i, p := range f.Args {
			if args[i].fits(p) == none {
				return nil, errorf("Type error: %s cannot be passed as argument %d of function system.%s of type %s", args[i].Text, i, f.Name, p)
			}
		}
	}
	return nil, errorf("Invalid call to function %s, none of its type signatures match (known type signatures: %s)", name, signatures(cands))
}

// preferredType is the type a literal matches exactly, as Cassandra's
// Constants.Type.getPreferedTypeFor says: the smallest of int, bigint and
// varint that holds an integer, double or decimal for a float as exactly
// as it is written, ascii for a string of ASCII characters, timeuuid for a
// version 1 uuid. Cassandra prefers tinyint for a hex literal, which makes
// tinyint parameters take blobs; blob is preferred here.
func preferredType(lit *ast.Literal) *cqltype.Type {
	switch lit.Kind {
	case ast.LitString:
		for i := 0; i < len(lit.Text); i++ {
			if lit.Text[i] >= utf8.RuneSelf {
				return cqltype.TextType
			}
		}
		return cqltype.AsciiType
	case ast.LitInteger:
		n, ok := new(big.Int).SetString(lit.Text, 10)
		switch {
		case !ok:
			return nil
		case n.IsInt64() && n.Int64() == int64(int32(n.Int64())):
			return cqltype.IntType
		case n.IsInt64():
			return cqltype.BigintType
		}
		return cqltype.VarintType
	case ast.LitFloat:
		f, err := strconv.ParseFloat(lit.Text, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return cqltype.DecimalType // beyond a double's range
		case err != nil:
			return nil
		case math.IsNaN(f) || math.IsInf(f, 0):
			return cqltype.DoubleType // NaN, Infinity as written
		}
		// The exponent is in a double's range, so the exact value costs
		// no more than the text's length.
		written, ok := new(big.Rat).SetString(lit.Text)
		if !ok {
			return nil
		}
		shortest, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		if written.Cmp(shortest) == 0 {
			return cqltype.DoubleType
		}
		return cqltype.DecimalType
	case ast.LitBoolean:
		return cqltype.BooleanType
	case ast.LitUUID:
		if len(lit.Text) > 14 && lit.Text[14] == '1' {
			return cqltype.TimeuuidType
		}
		return cqltype.UUIDType
	case ast.LitBlob:
		return cqltype.BlobType
	case ast.LitDuration:
		return cqltype.DurationType
	}
	return nil
}

type match uint8

const (
	none match = iota
	weak
	exact
)

// typeMatch is how an argument of type arg fits a parameter of type
// param: exactly, or weakly when a value of type arg is also a valid value
// of type param, as Cassandra's AbstractType.isValueCompatibleWith says (a
// blob reads anything, a text reads ascii, a varint reads int and bigint,
// timestamp and time read bigint).
func typeMatch(param, arg *cqltype.Type) match {
	if param.Equal(arg) {
		return exact
	}
	switch param.Kind {
	case cqltype.Blob:
		return weak
	case cqltype.Text:
		if arg.Kind == cqltype.Ascii {
			return weak
		}
	case cqltype.UUID:
		if arg.Kind == cqltype.Timeuuid {
			return weak
		}
	case cqltype.Bigint:
		if arg.Kind == cqltype.Timestamp {
			return weak
		}
	case cqltype.Timestamp, cqltype.Time:
		if arg.Kind == cqltype.Bigint {
			return weak
		}
	case cqltype.Varint:
		switch arg.Kind {
		case cqltype.Int, cqltype.Bigint, cqltype.Timestamp:
			return weak
		}
	}
	return none
}

func signatures(fs []*Function) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return strings.Join(s, ", ")
}

// registry holds the signatures of every function but count, min and max.
var registry = map[string][]*Function{}

func register(f *Function) {
	registry[f.Name] = append(registry[f.Name], f)
}

// scalar registers a deterministic function that returns null for a null
// argument.
func scalar(name string, ret *cqltype.Type, args []*cqltype.Type, fn func(args [][]byte) ([]byte, error)) {
	register(&Function{Name: name, Args: args, Return: ret, Deterministic: true, scalar: func(a [][]byte) ([]byte, error) {
		for _, v := range a {
			if v == nil {
				return nil, nil
			}
		}
		return fn(a)
	}})
}

// nativeTypes are the native types with the names functions use for them.
var nativeTypes = []struct {
	name string
	typ  *cqltype.Type
}{
	{"ascii", cqltype.AsciiType}, {"bigint", cqltype.BigintType}, {"blob", cqltype.BlobType},
	{"boolean", cqltype.BooleanType}, {"counter", cqltype.CounterType}, {"date", cqltype.DateType},
	{"decimal", cqltype.DecimalType}, {"double", cqltype.DoubleType}, {"duration", cqltype.DurationType},
	{"float", cqltype.FloatType}, {"inet", cqltype.InetType}, {"int", cqltype.IntType},
	{"smallint", cqltype.SmallintType}, {"text", cqltype.TextType}, {"time", cqltype.TimeType},
	{"timestamp", cqltype.TimestampType}, {"timeuuid", cqltype.TimeuuidType}, {"tinyint", cqltype.TinyintType},
	{"uuid", cqltype.UUIDType}, {"varchar", cqltype.TextType}, {"varint", cqltype.VarintType},
}

func init() {
	registerTime()
	registerBlob()
	registerCasts()
	registerAggregates()
}

// toJSON is system.tojson for an argument of type t.
func toJSON(t *cqltype.Type) *Function {
	return &Function{Name: "tojson", Args: []*cqltype.Type{t}, Return: cqltype.TextType, Deterministic: true,
		scalar: func(a [][]byte) ([]byte, error) { return values.ToJSON(t, a[0]) }}
}

// FromJSON returns system.fromjson for a value assigned to receiver: its
// argument is the JSON text, its result a value of the receiver's type.
// Cassandra resolves it by the receiver, so it is not found by Lookup.
func FromJSON(receiver *cqltype.Type) *Function {
	return &Function{Name: "fromjson", Args: []*cqltype.Type{cqltype.TextType}, Return: receiver, Deterministic: true,
		scalar: func(a [][]byte) ([]byte, error) {
			if a[0] == nil {
				return nil, nil
			}
			v, err := values.FromJSON(receiver, a[0])
			var ve *values.Error
			if errors.As(err, &ve) {
				// Cassandra's FromJsonFct fails the function: its own
				// message for text that is not JSON, the MarshalException
				// as Java prints it for JSON that does not fit.
				msg := ve.Message("")
				if !ve.JSONSyntax() {
					msg = "org.apache.cassandra.serializers.MarshalException: " + msg
				}
				return nil, &FailureError{Function: "fromjson", ArgTypes: []string{"text"}, Msg: msg}
			}
			return v, err
		}}
}

// Token returns token(k) as a serialized bigint: the Murmur3 token of a
// serialized partition key (for a compound key, the composite form that
// package keys builds).
func Token(partitionKey []byte) []byte { return bigint(token.Murmur3(partitionKey)) }
