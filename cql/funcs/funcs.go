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
//	castasT                   (U) -> T, for the conversions of Cast
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
	"strings"

	"github.com/sedimentdb/sediment/cql/ast"
	"github.com/sedimentdb/sediment/cql/values"
	"github.com/sedimentdb/sediment/cqltype"
	"github.com/sedimentdb/sediment/token"
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
// take any type, so their signatures are made for the argument given.
func candidates(name string, argTypes []*cqltype.Type) []*Function {
	switch name {
	case "tojson":
		if len(argTypes) == 1 && argTypes[0] != nil {
			return []*Function{toJSON(argTypes[0])}
		}
		return []*Function{toJSON(cqltype.BlobType)}
	case "count", "min", "max":
		if len(argTypes) == 1 && argTypes[0] != nil {
			return []*Function{aggregateFor(name, argTypes[0])}
		}
		if len(argTypes) == 1 {
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

// Lookup finds the function a call names, by its argument types. A nil
// argument type stands for an argument of unknown type (a bind marker
// without a hint); it matches any parameter. Types match exactly, and text
// parameters also take ascii, varint parameters any integer type.
//
// The error for a name with no function matches ErrUnknown; its message is
// "Unknown function 'name'". A name whose signatures do not fit the
// arguments, or fit more than one way, gets Cassandra's messages.
func Lookup(keyspace, name string, argTypes []*cqltype.Type) (*Function, error) {
	return resolve(keyspace, name, len(argTypes), func(i int, param *cqltype.Type) match {
		return typeMatch(param, argTypes[i])
	}, argTypes)
}

// LookupTerms is Lookup for a call as written: typeOf returns the type of
// an argument when it is known (a column, a typed bind marker, a hint) or
// nil; arguments of unknown type that are literals then match only the
// parameters they can be assigned to (values.Assignable), so that
// totimestamp('2024-01-01') finds the date signature.
func LookupTerms(keyspace, name string, args []ast.Term, typeOf func(ast.Term) *cqltype.Type) (*Function, error) {
	types := make([]*cqltype.Type, len(args))
	for i, a := range args {
		types[i] = typeOf(a)
	}
	return resolve(keyspace, name, len(args), func(i int, param *cqltype.Type) match {
		if types[i] != nil {
			return typeMatch(param, types[i])
		}
		if values.Assignable(param, args[i]) {
			return weak
		}
		return none
	}, types)
}

type match uint8

const (
	none match = iota
	weak
	exact
)

func typeMatch(param, arg *cqltype.Type) match {
	switch {
	case arg == nil:
		return weak
	case param.Equal(arg):
		return exact
	case param.Kind == cqltype.Text && arg.Kind == cqltype.Ascii:
		return weak
	case param.Kind == cqltype.Varint:
		switch arg.Kind {
		case cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint:
			return weak
		}
	}
	return none
}

func resolve(keyspace, name string, n int, fits func(i int, param *cqltype.Type) match, argTypes []*cqltype.Type) (*Function, error) {
	var cands []*Function
	if keyspace == "" || keyspace == "system" {
		cands = candidates(name, argTypes)
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
		if len(f.Args) != n {
			continue
		}
		exacts, ok := 0, true
		for i, p := range f.Args {
			switch fits(i, p) {
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
	case len(cands) == 1 && len(cands[0].Args) != n:
		return nil, errorf("Invalid number of arguments in call to function %s: %d required but %d provided", name, len(cands[0].Args), n)
	case len(cands) == 1:
		f := cands[0]
		for i, p := range f.Args {
			if fits(i, p) == none {
				got := "the argument"
				if i < len(argTypes) && argTypes[i] != nil {
					got = argTypes[i].String()
				}
				return nil, errorf("Type error: %s cannot be passed as argument %d of function %s of type %s", got, i, name, p)
			}
		}
	}
	return nil, errorf("Invalid call to function %s, none of its type signatures match (known type signatures: %s)", name, signatures(cands))
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
			return values.FromJSON(receiver, a[0])
		}}
}

// Token returns token(k) as a serialized bigint: the Murmur3 token of a
// serialized partition key (for a compound key, the composite form that
// package keys builds).
func Token(partitionKey []byte) []byte { return bigint(token.Murmur3(partitionKey)) }
