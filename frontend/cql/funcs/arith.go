package funcs

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Arithmetic in selections is Cassandra 4.0's OperationFcts:
//
//	operands                     result
//	---------------------------  ------------------------------------------
//	number op number             floating point (float, double, decimal) if
//	                             either side is, else integer (tinyint,
//	                             smallint, int, bigint, varint), of the
//	                             larger operand's size; counter is a bigint
//	-number                      the operand's type
//	timestamp (+|-) duration     timestamp
//	date (+|-) duration          date (the duration in whole days)
//
// op is one of + - * / %. Fixed-size results wrap as Java's arithmetic
// does; decimals are exact but for division, rounded half up at a scale of
// at least 32 digits (Cassandra's DecimalType.divide). A null or empty
// operand gives null.

// FailureError is an operation that failed on its values, such as a
// division by zero: Cassandra's OperationExecutionException, a
// FUNCTION_FAILURE for the client.
type FailureError struct {
	Function string   // the function: _add, _substract, ...
	ArgTypes []string // the CQL names of its parameter types
	Msg      string   // Cassandra's message
}

func (e *FailureError) Error() string { return "funcs: " + e.Msg }

var opNames = map[byte]string{'+': "_add", '-': "_substract", '*': "_multiply", '/': "_divide", '%': "_modulo"}

// size is a number type's size as OperationFcts ranks them; 0 is not a
// number, and big numbers rank above every fixed size.
func size(t *cqltype.Type) int {
	switch t.Kind {
	case cqltype.Tinyint:
		return 1
	case cqltype.Smallint:
		return 2
	case cqltype.Int, cqltype.Float:
		return 4
	case cqltype.Bigint, cqltype.Counter, cqltype.Double:
		return 8
	case cqltype.Varint, cqltype.Decimal:
		return math.MaxInt32
	}
	return 0
}

func isFloating(t *cqltype.Type) bool {
	return t.Kind == cqltype.Float || t.Kind == cqltype.Double || t.Kind == cqltype.Decimal
}

func isTemporal(t *cqltype.Type) bool {
	return t.Kind == cqltype.Timestamp || t.Kind == cqltype.Date
}

// resultType is OperationFcts.returnType.
func resultType(l, r *cqltype.Type) *cqltype.Type {
	n := max(size(l), size(r))
	if isFloating(l) || isFloating(r) {
		switch n {
		case 4:
			return cqltype.FloatType
		case 8:
			return cqltype.DoubleType
		}
		return cqltype.DecimalType
	}
	switch n {
	case 1:
		return cqltype.TinyintType
	case 2:
		return cqltype.SmallintType
	case 4:
		return cqltype.IntType
	case 8:
		return cqltype.BigintType
	}
	return cqltype.VarintType
}

// literalType is the type a literal or marker operand takes: the other
// operand's (a duration next to a temporal), or, for a literal the other's
// type cannot hold (1.5 next to an int), the widest that can.
func literalType(other *cqltype.Type, op byte, a Arg) *cqltype.Type {
	if isTemporal(other) && (op == '+' || op == '-') {
		return cqltype.DurationType
	}
	if size(other) == 0 {
		return other
	}
	for _, t := range []*cqltype.Type{other, cqltype.DoubleType, cqltype.VarintType, cqltype.DecimalType} {
		if a.Term == nil || values.Assignable(t, a.Term) {
			return t
		}
	}
	return other
}

// Operation returns the function computing left op right, where op is one
// of + - * / %. A literal or marker operand (a nil Type) takes its type
// from the other operand; it is an error for both to lack one.
func Operation(op byte, left, right Arg) (*Function, error) {
	name, ok := opNames[op]
	if !ok {
		return nil, errorf("Unknown operator %q", op)
	}
	lt, rt := left.Type, right.Type
	switch {
	case lt == nil && rt == nil:
		return nil, errorf("Cannot infer type for term %s in selection clause (try using a cast to force a type)", left.Text)
	case lt == nil:
		lt = literalType(rt, op, left)
	case rt == nil:
		rt = literalType(lt, op, right)
	}
	if lt.Kind == cqltype.Counter && left.Type == nil {
		lt = cqltype.BigintType
	}
	if rt.Kind == cqltype.Counter && right.Type == nil {
		rt = cqltype.BigintType
	}
	refuse := errorf("the '%c' operation is not supported between %s and %s", op, left.Text, right.Text)
	if left.Type == nil && !assignable(lt, left.Term) || right.Type == nil && !assignable(rt, right.Term) {
		return nil, refuse
	}
	args := []*cqltype.Type{lt, rt}
	f := &Function{Name: name, Args: args, Deterministic: true}
	failed := func(err error) error {
		var fe *FailureError
		if errors.As(err, &fe) {
			return err
		}
		msg := err.Error()
		var e *Error
		if errors.As(err, &e) {
			msg = e.Msg
		}
		return &FailureError{Function: name, ArgTypes: []string{lt.String(), rt.String()},
			Msg: "the operation '" + lt.String() + " " + string(op) + " " + rt.String() + "' failed: " + msg}
	}
	switch {
	case size(lt) > 0 && size(rt) > 0:
		ret := resultType(lt, rt)
		f.Return = ret
		f.scalar = func(a [][]byte) ([]byte, error) {
			x, err := readNumber(lt, a[0])
			if err == nil {
				var y number
				y, err = readNumber(rt, a[1])
				if err == nil {
					v, err := numeric(op, ret, x, y)
					if err != nil {
						return nil, failed(err)
					}
					return v, nil
				}
			}
			if err == errEmpty {
				return nil, nil
			}
			return nil, failed(err)
		}
	case isTemporal(lt) && rt.Kind == cqltype.Duration && (op == '+' || op == '-'):
		f.Return = lt
		f.scalar = func(a [][]byte) ([]byte, error) {
			if len(a[0]) == 0 || len(a[1]) == 0 {
				return nil, nil
			}
			v, err := temporal(lt, op, a[0], a[1])
			if err != nil {
				return nil, failed(err)
			}
			return v, nil
		}
	default:
		return nil, refuse
	}
	call := f.scalar
	f.scalar = func(a [][]byte) ([]byte, error) {
		if a[0] == nil || a[1] == nil {
			return nil, nil
		}
		return call(a)
	}
	return f, nil
}

func assignable(t *cqltype.Type, term ast.Term) bool {
	return term == nil || values.Assignable(t, term)
}

// Negation returns the function computing -x for a number operand.
func Negation(arg Arg) (*Function, error) {
	t := arg.Type
	if t == nil || size(t) == 0 {
		return nil, errorf("the '-' operation is not supported on %s", arg.Text)
	}
	return &Function{Name: "_negate", Args: []*cqltype.Type{t}, Return: t, Deterministic: true,
		scalar: func(a [][]byte) ([]byte, error) {
			x, err := readNumber(t, a[0])
			if a[0] == nil || err == errEmpty {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return negate(t, x), nil
		}}, nil
}

// negate is NumberType.negate: fixed sizes wrap, as -(-128) is -128.
func negate(t *cqltype.Type, x number) []byte {
	switch t.Kind {
	case cqltype.Tinyint:
		return []byte{byte(-int8(x.i))}
	case cqltype.Smallint:
		return binary.BigEndian.AppendUint16(nil, uint16(-int16(x.i)))
	case cqltype.Int:
		return binary.BigEndian.AppendUint32(nil, uint32(-int32(x.i)))
	case cqltype.Float:
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(-float32(x.f)))
	case cqltype.Double:
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(-x.f))
	case cqltype.Varint:
		return cqltype.AppendBigInt(nil, new(big.Int).Abs(x.b), x.b.Sign() > 0)
	case cqltype.Decimal:
		out := binary.BigEndian.AppendUint32(nil, uint32(x.sc))
		return cqltype.AppendBigInt(out, new(big.Int).Abs(x.b), x.b.Sign() > 0)
	}
	return binary.BigEndian.AppendUint64(nil, uint64(-x.i))
}

var (
	errDivZero = errorf("/ by zero")
	errNaN     = errorf("A NaN cannot be converted into a decimal")
	errInf     = errorf("An infinite number cannot be converted into a decimal")
)

// numeric computes x op y in type ret, converting each operand as Java's
// Number methods do.
func numeric(op byte, ret *cqltype.Type, x, y number) ([]byte, error) {
	switch ret.Kind {
	case cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint:
		a, _ := x.longValue()
		b, _ := y.longValue()
		if (op == '/' || op == '%') && b == 0 {
			return nil, errDivZero
		}
		switch ret.Kind {
		case cqltype.Tinyint:
			return []byte{byte(intOp(op, int8(a), int8(b)))}, nil
		case cqltype.Smallint:
			return binary.BigEndian.AppendUint16(nil, uint16(intOp(op, int16(a), int16(b)))), nil
		case cqltype.Int:
			return binary.BigEndian.AppendUint32(nil, uint32(intOp(op, int32(a), int32(b)))), nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(intOp(op, a, b))), nil
	case cqltype.Float:
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(floatOp(op, x.floatValue(), y.floatValue()))), nil
	case cqltype.Double:
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(floatOp(op, x.doubleValue(), y.doubleValue()))), nil
	case cqltype.Varint:
		a, b := bigInteger(x), bigInteger(y)
		r := new(big.Int)
		switch op {
		case '+':
			r.Add(a, b)
		case '-':
			r.Sub(a, b)
		case '*':
			r.Mul(a, b)
		default:
			if b.Sign() == 0 {
				return nil, errorf("BigInteger divide by zero")
			}
			if op == '/' {
				r.Quo(a, b)
			} else {
				r.Rem(a, b)
			}
		}
		return cqltype.AppendBigInt(nil, new(big.Int).Abs(r), r.Sign() < 0), nil
	}
	a, err := bigDecimal(x)
	if err != nil {
		return nil, err
	}
	b, err := bigDecimal(y)
	if err != nil {
		return nil, err
	}
	r, err := decimalOp(op, a, b)
	if err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(r.scale))
	return cqltype.AppendBigInt(out, new(big.Int).Abs(r.unscaled), r.unscaled.Sign() < 0), nil
}

// intOp is Java's integer arithmetic: wrapping, truncating division. Go's
// MinInt / -1 wraps as Java's does; b is not zero for / and %.
func intOp[T int8 | int16 | int32 | int64](op byte, a, b T) T {
	return javaOp(op, a, b, func(a, b T) T { return a % b })
}

// floatOp is Java's floating-point arithmetic; % is fmod, as math.Mod.
func floatOp[T float32 | float64](op byte, a, b T) T {
	return javaOp(op, a, b, func(a, b T) T { return T(math.Mod(float64(a), float64(b))) })
}

// javaOp is Java's arithmetic operator op on primitive values, Go's for
// + - * / (the same for these types), and rem for %, which Go's operator
// does not give floats.
func javaOp[T int8 | int16 | int32 | int64 | float32 | float64](op byte, a, b T, rem func(a, b T) T) T {
	switch op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	case '/':
		return a / b
	}
	return rem(a, b)
}

// bigInteger is IntegerType's conversion: BigInteger.valueOf(longValue).
func bigInteger(n number) *big.Int {
	if n.kind == cqltype.Varint {
		return n.b
	}
	l, _ := n.longValue()
	return big.NewInt(l)
}

// bigDecimal is DecimalType's conversion: decimals and varints exactly,
// other numbers as BigDecimal.valueOf(doubleValue()).
func bigDecimal(n number) (dec, error) {
	switch n.kind {
	case cqltype.Decimal:
		return dec{n.b, n.sc}, nil
	case cqltype.Varint:
		return dec{n.b, 0}, nil
	}
	f := n.doubleValue()
	switch {
	case math.IsNaN(f):
		return dec{}, errNaN
	case math.IsInf(f, 0):
		return dec{}, errInf
	}
	return javaDecimal(f), nil
}

// javaDecimal is BigDecimal.valueOf(f): the decimal of Double.toString(f),
// whose shortest digits have at least one digit after the point.
func javaDecimal(f float64) dec {
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±x
	mant, exp, _ := cut(s, 'e')
	e, _ := strconv.Atoi(exp)
	neg := mant[0] == '-'
	if neg {
		mant = mant[1:]
	}
	digits := mant[:1]
	if len(mant) > 2 {
		digits += mant[2:]
	}
	n := len(digits)
	var scale int
	if f != 0 && (math.Abs(f) < 1e-3 || math.Abs(f) >= 1e7) {
		scale = max(n-1, 1) - e
	} else {
		scale = max(n-1-e, 1)
	}
	u, _ := new(big.Int).SetString(digits, 10)
	if extra := scale - (n - 1 - e); extra > 0 {
		u.Mul(u, pow10(extra))
	}
	if neg {
		u.Neg(u)
	}
	return dec{u, int32(scale)}
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Bounds of DecimalType.divide's scale.
const (
	minDivScale = 32
	maxDivScale = 1000
)

func decimalOp(op byte, a, b dec) (dec, error) {
	switch op {
	case '+', '-':
		au, bu, scale, err := align(a, b)
		if err != nil {
			return dec{}, err
		}
		if op == '+' {
			return dec{new(big.Int).Add(au, bu), scale}, nil
		}
		return dec{new(big.Int).Sub(au, bu), scale}, nil
	case '*':
		scale := int64(a.scale) + int64(b.scale)
		if scale > math.MaxInt32 || scale < math.MinInt32 {
			return dec{}, errorf("Overflow")
		}
		return dec{new(big.Int).Mul(a.unscaled, b.unscaled), int32(scale)}, nil
	}
	if b.unscaled.Sign() == 0 {
		if a.unscaled.Sign() == 0 {
			return dec{}, errorf("Division undefined")
		}
		return dec{}, errorf("Division by zero")
	}
	if op == '%' {
		// BigDecimal.remainder: a - trunc(a / b) * b, at the larger scale.
		au, bu, scale, err := align(a, b)
		if err != nil {
			return dec{}, err
		}
		return dec{new(big.Int).Rem(au, bu), scale}, nil
	}
	// The scale leaves room for 32 significant digits after the quotient's
	// first, as predicted from the operands' magnitudes.
	first := (precision(a.unscaled) - int64(a.scale)) - (precision(b.unscaled) - int64(b.scale))
	scale := max(minDivScale-first, int64(a.scale), int64(b.scale), minDivScale)
	scale = min(scale, maxDivScale)
	// a / b at scale s is a.u * 10^(s - a.s + b.s) / b.u.
	shift := scale - int64(a.scale) + int64(b.scale)
	num, den := new(big.Int).Set(a.unscaled), new(big.Int).Set(b.unscaled)
	if shift > maxScaleGap || shift < -maxScaleGap {
		return dec{}, errorf("Cannot divide decimals whose scales differ by more than %d", maxScaleGap)
	}
	if shift >= 0 {
		num.Mul(num, pow10(int(shift)))
	} else {
		den.Mul(den, pow10(int(-shift)))
	}
	q := quoHalfUp(num, den)
	return stripZeros(dec{q, int32(scale)}), nil
}

func precision(x *big.Int) int64 {
	if x.Sign() == 0 {
		return 1
	}
	return int64(len(new(big.Int).Abs(x).String()))
}

// quoHalfUp divides x by y, rounding half away from zero.
func quoHalfUp(x, y *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	if twice.CmpAbs(y) >= 0 {
		if (x.Sign() < 0) != (y.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// stripZeros is BigDecimal.stripTrailingZeros.
func stripZeros(d dec) dec {
	if d.unscaled.Sign() == 0 {
		return dec{new(big.Int), 0}
	}
	u, ten, r := new(big.Int).Set(d.unscaled), big.NewInt(10), new(big.Int)
	scale := d.scale
	for {
		q, m := new(big.Int).QuoRem(u, ten, r)
		if m.Sign() != 0 || scale == math.MinInt32 {
			break
		}
		u, scale = q, scale-1
	}
	return dec{u, scale}
}

const millisPerDay = 86400000

// temporal computes a timestamp or date plus or minus a duration, as
// Cassandra's Duration.addTo: months on the calendar (clamping the day to
// the month's last), then days, then the nanoseconds in whole millis.
func temporal(t *cqltype.Type, op byte, tv, dv []byte) ([]byte, error) {
	if err := cqltype.Validate(t, tv); err != nil {
		return nil, err
	}
	months, days, nanos, err := cqltype.SplitDuration(dv)
	if err != nil {
		return nil, err
	}
	if t.Kind == cqltype.Date && nanos%(millisPerDay*1e6) != 0 {
		return nil, errorf("The duration must have a day precision. Was: %s", values.Text(cqltype.DurationType, dv))
	}
	if op == '-' {
		months, days, nanos = -months, -days, -nanos
	}
	var ms int64
	if t.Kind == cqltype.Date {
		ms = (int64(binary.BigEndian.Uint32(tv)) - 1<<31) * millisPerDay
	} else {
		ms = int64(binary.BigEndian.Uint64(tv))
	}
	ms = addDuration(ms, months, days, nanos)
	if t.Kind == cqltype.Date {
		// TimeUnit.toDays truncates; whole-day durations keep ms whole.
		return binary.BigEndian.AppendUint32(nil, uint32(int32(ms/millisPerDay))+1<<31), nil
	}
	return binary.BigEndian.AppendUint64(nil, uint64(ms)), nil
}

func addDuration(ms int64, months, days int32, nanos int64) int64 {
	if months == 0 {
		return ms + int64(days)*millisPerDay + nanos/1e6
	}
	tm := time.UnixMilli(ms).UTC()
	y, m, d := tm.Date()
	total := int64(y)*12 + int64(m-1) + int64(months)
	ny, nm := total/12, time.Month(total%12+1)
	if total%12 < 0 {
		ny, nm = ny-1, time.Month(total%12+13)
	}
	last := time.Date(int(ny), nm+1, 0, 0, 0, 0, 0, time.UTC).Day()
	tm = time.Date(int(ny), nm, min(d, last), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), time.UTC)
	return tm.UnixMilli() + int64(days)*millisPerDay + nanos/1e6
}
