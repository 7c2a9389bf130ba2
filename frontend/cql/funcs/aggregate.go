package funcs

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Acc accumulates the values of one group for an aggregate. Add takes one
// serialized argument value (nil for null, which every aggregate but
// countrows ignores); it fails only for a malformed value. Result returns
// the aggregate of the values added so far.
type Acc interface {
	Add(v []byte) error
	Result() []byte
}

// aggregateFor returns count, min or max for an argument of type t.
func aggregateFor(name string, t *cqltype.Type) *Function {
	f := &Function{Name: name, Args: []*cqltype.Type{t}, Return: t, Deterministic: true}
	switch name {
	case "count":
		f.Return = cqltype.BigintType
		f.newAcc = func() Acc { return &countAcc{} }
	case "min":
		f.newAcc = func() Acc { return &extremeAcc{t: t, sign: -1} }
	case "max":
		f.newAcc = func() Acc { return &extremeAcc{t: t, sign: 1} }
	}
	return f
}

func registerAggregates() {
	register(&Function{Name: "countrows", Return: cqltype.BigintType, Deterministic: true,
		newAcc: func() Acc { return &countAcc{rows: true} }})
	// Cassandra's AggregateFcts declares sum and avg in this order, which
	// its messages listing the signatures follow.
	for _, t := range []*cqltype.Type{
		cqltype.TinyintType, cqltype.SmallintType, cqltype.IntType, cqltype.BigintType,
		cqltype.FloatType, cqltype.DoubleType, cqltype.DecimalType, cqltype.VarintType, cqltype.CounterType,
	} {
		var sum, avg func() Acc
		switch t.Kind {
		case cqltype.Float, cqltype.Double:
			sum = func() Acc { return &floatAcc{t: t} }
			avg = func() Acc { return &floatAcc{t: t, avg: true} }
		case cqltype.Decimal:
			sum = func() Acc { return &decimalAcc{} }
			avg = func() Acc { return &decimalAcc{avg: true} }
		default:
			sum = func() Acc { return &intAcc{t: t} }
			avg = func() Acc { return &intAcc{t: t, avg: true} }
		}
		register(&Function{Name: "sum", Args: []*cqltype.Type{t}, Return: t, Deterministic: true, newAcc: sum})
		register(&Function{Name: "avg", Args: []*cqltype.Type{t}, Return: t, Deterministic: true, newAcc: avg})
	}
}

// countAcc counts non-null values, or with rows every Add (COUNT(*)).
type countAcc struct {
	n    int64
	rows bool
}

func (a *countAcc) Add(v []byte) error {
	if v != nil || a.rows {
		a.n++
	}
	return nil
}

func (a *countAcc) Result() []byte { return bigint(a.n) }

// extremeAcc keeps the least (sign -1) or greatest (sign 1) value in the
// order of the type.
type extremeAcc struct {
	t    *cqltype.Type
	sign int
	best []byte
}

func (a *extremeAcc) Add(v []byte) error {
	if v == nil {
		return nil
	}
	if err := cqltype.Validate(a.t, v); err != nil {
		return err
	}
	if a.best == nil || cqltype.Compare(a.t, v, a.best)*a.sign > 0 {
		a.best = append(a.best[:0:0], v...)
	}
	return nil
}

func (a *extremeAcc) Result() []byte { return a.best }

// read reads a number for an accumulator: ok is false for null and the
// empty value, which aggregates skip.
func read(t *cqltype.Type, v []byte) (n number, ok bool, err error) {
	if v == nil {
		return number{}, false, nil
	}
	n, err = readNumber(t, v)
	if err == errEmpty {
		return number{}, false, nil
	}
	return n, err == nil, err
}

// intAcc sums or averages tinyint, smallint, int, bigint, counter and
// varint values as Cassandra's AggregateFcts does: sums of the fixed-size
// types wrap around in their own type (Java arithmetic), averages sum
// exactly and truncate the quotient toward zero, then keep its low bits;
// varints are exact. With no values the result is 0.
type intAcc struct {
	t     *cqltype.Type
	avg   bool
	count int64
	wrap  int64   // wrapping sum
	exact big.Int // exact sum
}

func (a *intAcc) Add(v []byte) error {
	n, ok, err := read(a.t, v)
	if !ok {
		return err
	}
	a.count++
	if n.kind == cqltype.Varint {
		a.exact.Add(&a.exact, n.b)
		return nil
	}
	a.wrap += n.i
	a.exact.Add(&a.exact, big.NewInt(n.i))
	return nil
}

func (a *intAcc) Result() []byte {
	r := new(big.Int).Set(&a.exact)
	if a.avg && a.count > 0 {
		r.Quo(r, big.NewInt(a.count))
	}
	if a.t.Kind == cqltype.Varint {
		return cqltype.AppendBigInt(nil, new(big.Int).Abs(r), r.Sign() < 0)
	}
	s := a.wrap
	if a.avg {
		s = lowBits(r)
	}
	switch a.t.Kind {
	case cqltype.Tinyint:
		return []byte{byte(s)}
	case cqltype.Smallint:
		return binary.BigEndian.AppendUint16(nil, uint16(s))
	case cqltype.Int:
		return binary.BigEndian.AppendUint32(nil, uint32(s))
	}
	return bigint(s)
}

// floatAcc sums or averages floats and doubles as Cassandra does: in
// double arithmetic with Kahan's compensation, the final sum being the
// running sum plus the compensation, and an infinite plain sum winning over
// the NaN the compensation can produce. An average whose sum overflows
// continues exactly (as BigDecimal in Cassandra) and divides at the end.
type floatAcc struct {
	t                 *cqltype.Type
	avg               bool
	count             int64
	sum, comp, simple float64
	overflow          bool
	big               *big.Float
}

// bigSumPrec is the precision of an overflowed average's sum: enough for
// any sum of doubles to stay exact for practical counts.
const bigSumPrec = 4096

func (a *floatAcc) Add(v []byte) error {
	n, ok, err := read(a.t, v)
	if !ok {
		return err
	}
	d := n.f
	a.count++
	if a.overflow {
		if math.IsNaN(d) || math.IsInf(d, 0) {
			// BigDecimal.valueOf fails here in Cassandra too.
			return errorf("Cannot add %v to the average of values whose sum overflowed", d)
		}
		a.big.Add(a.big, new(big.Float).SetPrec(bigSumPrec).SetFloat64(d))
		return nil
	}
	a.simple += d
	prev := a.sum
	t := d - a.comp
	rounded := a.sum + t
	a.comp = (rounded - a.sum) - t
	a.sum = rounded
	if a.avg && math.IsInf(a.sum, 0) && !math.IsInf(d, 0) {
		a.overflow = true
		a.big = new(big.Float).SetPrec(bigSumPrec).SetFloat64(prev)
		a.big.Add(a.big, new(big.Float).SetPrec(bigSumPrec).SetFloat64(d))
	}
	return nil
}

func (a *floatAcc) Result() []byte {
	var r float64
	switch {
	case a.avg && a.count == 0:
	case a.overflow:
		q := new(big.Float).SetPrec(bigSumPrec).Quo(a.big, new(big.Float).SetInt64(a.count))
		r, _ = q.Float64()
	default:
		r = a.sum + a.comp
		if math.IsNaN(r) && math.IsInf(a.simple, 0) {
			r = a.simple
		}
		if a.avg {
			r /= float64(a.count)
		}
	}
	if a.t.Kind == cqltype.Float {
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(r)))
	}
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(r))
}

// dec is a decimal as BigDecimal holds it: unscaled × 10^-scale.
type dec struct {
	unscaled *big.Int
	scale    int32
}

// maxScaleGap bounds how far apart the scales of decimals combined may be,
// so that a hostile scale cannot make a huge power of ten.
const maxScaleGap = 1 << 16

// align returns the unscaled values of x and y at their larger scale.
func align(x, y dec) (xu, yu *big.Int, scale int32, err error) {
	gap := int64(x.scale) - int64(y.scale)
	switch {
	case gap > maxScaleGap || gap < -maxScaleGap:
		return nil, nil, 0, errorf("Cannot combine decimals whose scales differ by more than %d", maxScaleGap)
	case gap > 0:
		return x.unscaled, new(big.Int).Mul(y.unscaled, pow10(int(gap))), x.scale, nil
	case gap < 0:
		return new(big.Int).Mul(x.unscaled, pow10(int(-gap))), y.unscaled, y.scale, nil
	}
	return x.unscaled, y.unscaled, x.scale, nil
}

// decimalAcc sums decimals exactly, or averages them as Cassandra does,
// incrementally: avg += (x - avg) / count, the quotient rounded half even
// at the scale of x - avg.
type decimalAcc struct {
	avg   bool
	count int64
	acc   dec
}

func (a *decimalAcc) Add(v []byte) error {
	n, ok, err := read(cqltype.DecimalType, v)
	if !ok {
		return err
	}
	if a.acc.unscaled == nil {
		a.acc.unscaled = new(big.Int)
	}
	x := dec{n.b, n.sc}
	if !a.avg {
		xu, yu, scale, err := align(a.acc, x)
		if err != nil {
			return err
		}
		a.acc = dec{new(big.Int).Add(xu, yu), scale}
		a.count++
		return nil
	}
	xu, au, scale, err := align(x, a.acc)
	if err != nil {
		return err
	}
	a.count++
	q := quoHalfEven(new(big.Int).Sub(xu, au), big.NewInt(a.count))
	a.acc = dec{new(big.Int).Add(au, q), scale}
	return nil
}

func (a *decimalAcc) Result() []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(a.acc.scale))
	if a.acc.unscaled == nil {
		return append(out, 0)
	}
	return cqltype.AppendBigInt(out, new(big.Int).Abs(a.acc.unscaled), a.acc.unscaled.Sign() < 0)
}

// quoHalfEven divides x by a positive y, rounding half to even.
func quoHalfEven(x, y *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	c := twice.Cmp(y)
	if c > 0 || c == 0 && q.Bit(0) == 1 {
		if x.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}
