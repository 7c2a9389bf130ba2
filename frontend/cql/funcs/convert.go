package funcs

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// registerBlob registers blobasT and TasBlob for every native type T.
func registerBlob() {
	blob := []*cqltype.Type{cqltype.BlobType}
	for _, nt := range nativeTypes {
		if nt.typ.Kind == cqltype.Blob {
			continue
		}
		t, fromName := nt.typ, "blobas"+nt.name
		scalar(fromName, t, blob, func(a [][]byte) ([]byte, error) {
			if err := cqltype.Validate(t, a[0]); err != nil {
				return nil, errorf("In call to function system.%s, value 0x%s is not a valid binary representation for type %s",
					fromName, hex.EncodeToString(a[0]), nt.name)
			}
			return a[0], nil
		})
		scalar(nt.name+"asblob", cqltype.BlobType, []*cqltype.Type{t}, func(a [][]byte) ([]byte, error) {
			return a[0], nil
		})
	}
}

// number is a value of a number type read as Java's Number: integers
// exactly, floats as float64, decimals and varints as big numbers.
type number struct {
	kind cqltype.Kind
	i    int64      // tinyint..bigint, counter
	f    float64    // float, double
	b    *big.Int   // varint; decimal unscaled value
	sc   int32      // decimal scale
	r    *big.Float // decimal value, for doubleValue
}

var errEmpty = errors.New("empty")

func readNumber(t *cqltype.Type, v []byte) (number, error) {
	if len(v) == 0 {
		return number{}, errEmpty
	}
	if err := cqltype.Validate(t, v); err != nil {
		return number{}, err
	}
	n := number{kind: t.Kind}
	switch t.Kind {
	case cqltype.Tinyint:
		n.i = int64(int8(v[0]))
	case cqltype.Smallint:
		n.i = int64(int16(binary.BigEndian.Uint16(v)))
	case cqltype.Int:
		n.i = int64(int32(binary.BigEndian.Uint32(v)))
	case cqltype.Bigint, cqltype.Counter:
		n.i = int64(binary.BigEndian.Uint64(v))
	case cqltype.Float:
		n.f = float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
	case cqltype.Double:
		n.f = math.Float64frombits(binary.BigEndian.Uint64(v))
	case cqltype.Varint:
		n.b = varintInt(v)
	case cqltype.Decimal:
		n.sc = int32(binary.BigEndian.Uint32(v))
		n.b = varintInt(v[4:])
	}
	return n, nil
}

func varintInt(v []byte) *big.Int {
	x := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return x
}

// javaLong converts a float64 as Java's (long) cast does: NaN is 0, and
// values beyond the range saturate.
func javaLong(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaInt is Java's (int) cast of a float64.
func javaInt(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

// bigTruncated returns the integer part of a decimal, as
// BigDecimal.toBigInteger does. Scales beyond a bound give zero or refuse,
// so that a hostile scale cannot make a huge power of ten.
func bigTruncated(unscaled *big.Int, scale int32) (*big.Int, bool) {
	switch {
	case scale == 0:
		return unscaled, true
	case scale > 0:
		if int64(scale) > int64(len(unscaled.String()))+1 {
			return new(big.Int), true
		}
		return new(big.Int).Quo(unscaled, pow10(int(scale))), true
	}
	if -int64(scale) > 100000 {
		return nil, false
	}
	return new(big.Int).Mul(unscaled, pow10(int(-scale))), true
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// longValue is Number.longValue: integers as they are (big ones keep their
// low 64 bits), floats truncated and saturated.
func (n number) longValue() (int64, error) {
	switch n.kind {
	case cqltype.Float, cqltype.Double:
		return javaLong(n.f), nil
	case cqltype.Varint:
		return lowBits(n.b), nil
	case cqltype.Decimal:
		x, ok := bigTruncated(n.b, n.sc)
		if !ok {
			return 0, errorf("decimal value out of range")
		}
		return lowBits(x), nil
	}
	return n.i, nil
}

// intValue is Number.intValue, which for floats saturates to the int range
// rather than the long range.
func (n number) intValue() (int32, error) {
	if n.kind == cqltype.Float || n.kind == cqltype.Double {
		return javaInt(n.f), nil
	}
	l, err := n.longValue()
	return int32(l), err
}

// lowBits returns the low 64 bits of x in two's complement, as Java's
// BigInteger.longValue does.
func lowBits(x *big.Int) int64 {
	m := new(big.Int).And(x, new(big.Int).SetUint64(math.MaxUint64))
	return int64(m.Uint64())
}

// doubleValue is Number.doubleValue.
func (n number) doubleValue() float64 {
	switch n.kind {
	case cqltype.Float, cqltype.Double:
		return n.f
	case cqltype.Varint:
		f, _ := new(big.Float).SetInt(n.b).Float64()
		return f
	case cqltype.Decimal:
		f, err := strconv.ParseFloat(n.b.String()+"e"+strconv.FormatInt(-int64(n.sc), 10), 64)
		if err != nil && !isRange(err) {
			return math.NaN()
		}
		return f
	}
	return float64(n.i)
}

func isRange(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrRange
}

// floatValue is Number.floatValue.
func (n number) floatValue() float32 {
	switch n.kind {
	case cqltype.Varint:
		f, _ := new(big.Float).SetInt(n.b).Float32()
		return f
	case cqltype.Decimal:
		f, err := strconv.ParseFloat(n.b.String()+"e"+strconv.FormatInt(-int64(n.sc), 10), 32)
		if err != nil && !isRange(err) {
			return float32(math.NaN())
		}
		return float32(f)
	case cqltype.Float, cqltype.Double:
		return float32(n.f)
	}
	// One rounding, as Java's (float) of a long; through float64 it would
	// round twice.
	return float32(n.i)
}

var numberKinds = []*cqltype.Type{
	cqltype.TinyintType, cqltype.SmallintType, cqltype.IntType, cqltype.BigintType, cqltype.FloatType,
	cqltype.DoubleType, cqltype.DecimalType, cqltype.CounterType, cqltype.VarintType,
}

// convertNumber converts a valid, non-empty number to type to, as
// Cassandra's CastFcts does with Java's Number methods: integers narrow by
// keeping their low bits, floats truncate toward zero and saturate, and
// decimals are made from the double value.
func convertNumber(from, to *cqltype.Type, v []byte) ([]byte, error) {
	n, err := readNumber(from, v)
	if err == errEmpty {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch to.Kind {
	case cqltype.Tinyint:
		i, err := n.intValue()
		return []byte{byte(i)}, err
	case cqltype.Smallint:
		i, err := n.intValue()
		return binary.BigEndian.AppendUint16(nil, uint16(i)), err
	case cqltype.Int:
		i, err := n.intValue()
		return binary.BigEndian.AppendUint32(nil, uint32(i)), err
	case cqltype.Bigint:
		l, err := n.longValue()
		return binary.BigEndian.AppendUint64(nil, uint64(l)), err
	case cqltype.Float:
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(n.floatValue())), nil
	case cqltype.Double:
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(n.doubleValue())), nil
	case cqltype.Varint:
		l, err := n.longValue()
		if err != nil {
			return nil, err
		}
		return cqltype.AppendBigInt(nil, new(big.Int).Abs(big.NewInt(l)), l < 0), nil
	case cqltype.Decimal:
		d := n.doubleValue()
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return nil, errorf("Cannot convert %s to a decimal: Infinite or NaN", values.Text(from, v))
		}
		// BigDecimal.valueOf(double) reads Double.toString.
		return values.Parse(cqltype.DecimalType, values.Text(cqltype.DoubleType, binary.BigEndian.AppendUint64(nil, math.Float64bits(d))))
	}
	return nil, errorf("Cannot convert a number to %s", to)
}

// castName is the name Cassandra's CastFcts registers a cast to t under:
// castAs and the type's name capitalized (castAsInt). Unquoted names are
// lower case, so only a quoted name ("castAsInt"(x)) calls one directly.
func castName(t *cqltype.Type) string {
	n := t.Kind.String()
	return "castAs" + strings.ToUpper(n[:1]) + n[1:]
}

// IsCast reports whether f is a CAST conversion, which Cassandra names
// cast(x as t) in a selection however it is called.
func (f *Function) IsCast() bool {
	return strings.HasPrefix(f.Name, "castAs") && len(f.Args) == 1 && casts[f.Args[0].Kind][f.Return.Kind] == f
}

// casts maps input kind to the casts from it, by output kind.
var casts = map[cqltype.Kind]map[cqltype.Kind]*Function{}

func addCast(from, to *cqltype.Type, fn func(v []byte) ([]byte, error)) {
	f := &Function{Name: castName(to), Args: []*cqltype.Type{from}, Return: to, Deterministic: true,
		scalar: func(a [][]byte) ([]byte, error) {
			if a[0] == nil {
				return nil, nil
			}
			return fn(a[0])
		}}
	if casts[from.Kind] == nil {
		casts[from.Kind] = map[cqltype.Kind]*Function{}
	}
	casts[from.Kind][to.Kind] = f
	register(f)
}

// registerCasts registers the CAST conversions of Cassandra's CastFcts:
// between number types, to text and ascii from numbers, booleans, inet,
// uuids and times, ascii to text, and between date, timestamp and timeuuid.
func registerCasts() {
	toText := func(from *cqltype.Type) {
		for _, to := range []*cqltype.Type{cqltype.AsciiType, cqltype.TextType} {
			addCast(from, to, func(v []byte) ([]byte, error) {
				if err := cqltype.Validate(from, v); err != nil {
					return nil, err
				}
				if len(v) == 0 {
					// toCQLLiteral of an empty value.
					return []byte("null"), nil
				}
				return []byte(values.Text(from, v)), nil
			})
		}
	}
	for _, from := range numberKinds {
		for _, to := range numberKinds {
			if from == to || to.Kind == cqltype.Counter {
				continue
			}
			addCast(from, to, func(v []byte) ([]byte, error) { return convertNumber(from, to, v) })
		}
		toText(from)
	}
	addCast(cqltype.AsciiType, cqltype.TextType, func(v []byte) ([]byte, error) { return v, nil })
	for _, from := range []*cqltype.Type{cqltype.InetType, cqltype.BooleanType, cqltype.TimeuuidType,
		cqltype.TimestampType, cqltype.DateType, cqltype.TimeType, cqltype.UUIDType} {
		toText(from)
	}
	// The date and time conversions are the functions they name.
	for _, c := range []struct {
		from, to *cqltype.Type
		fn       string
	}{
		{cqltype.TimeuuidType, cqltype.DateType, "todate"},
		{cqltype.TimeuuidType, cqltype.TimestampType, "totimestamp"},
		{cqltype.TimestampType, cqltype.DateType, "todate"},
		{cqltype.DateType, cqltype.TimestampType, "totimestamp"},
	} {
		f, err := Lookup("", c.fn, []Arg{{Type: c.from}})
		if err != nil {
			panic(fmt.Sprintf("funcs: cast uses %s: %v", c.fn, err))
		}
		addCast(c.from, c.to, func(v []byte) ([]byte, error) { return f.Call([][]byte{v}) })
	}
}

// Cast returns the function of CAST(x AS to) for x of type from, or an
// error worded as Cassandra's when the conversion does not exist. Casting
// a value to its own type needs no function: Cast returns nil, nil.
func Cast(from, to *cqltype.Type) (*Function, error) {
	if from.Equal(to) {
		return nil, nil
	}
	if f := casts[from.Kind][to.Kind]; f != nil && from.Kind.Native() && to.Kind.Native() {
		return f, nil
	}
	return nil, errorf("%s cannot be cast to %s", from, to)
}
