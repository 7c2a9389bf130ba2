package funcs

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/sedimentdb/sediment/cqltype"
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
	for _, t := range numberKinds {
		ret := t
		if t.Kind == cqltype.Counter {
			ret = cqltype.BigintType
		}
		register(&Function{Name: "sum", Args: []*cqltype.Type{t}, Return: ret, Deterministic: true,
			newAcc: func() Acc { return &sumAcc{t: t} }})
		register(&Function{Name: "avg", Args: []*cqltype.Type{t}, Return: ret, Deterministic: true,
			newAcc: func() Acc { return &sumAcc{t: t, avg: true} }})
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

// sumAcc sums (or averages) numbers as Cassandra's AggregateFcts does:
// tinyint, smallint, int and bigint sums wrap around in their own type,
// while averages of them sum exactly and truncate the quotient; varints and
// decimals are exact (a decimal average keeps the scale of the sum and
// rounds half even); floats and doubles sum with Kahan compensation. With
// no values the result is zero.
type sumAcc struct {
	t     *cqltype.Type
	avg   bool
	count int64
	i     int64    // wrapping sum of small integers
	b     *big.Int // exact sum: varint, decimal unscaled, averages of integers
	scale int32    // decimal sum's scale
	f, c  float64  // float sum and its compensation
}

// maxScaleGap bounds how far apart the scales of added decimals may be,
// so that a hostile scale cannot make a huge power of ten.
const maxScaleGap = 1 << 16

func (a *sumAcc) Add(v []byte) error {
	if v == nil {
		return nil
	}
	n, err := readNumber(a.t, v)
	if err == errEmpty {
		return nil
	}
	if err != nil {
		return err
	}
	if a.b == nil {
		a.b = new(big.Int)
	}
	switch a.t.Kind {
	case cqltype.Float, cqltype.Double:
		// Kahan summation.
		y := n.f - a.c
		t := a.f + y
		a.c = (t - a.f) - y
		a.f = t
	case cqltype.Varint:
		a.b.Add(a.b, n.b)
	case cqltype.Decimal:
		if a.count == 0 {
			a.scale = n.sc
		}
		x := n.b
		if gap := int64(n.sc) - int64(a.scale); gap > maxScaleGap || gap < -maxScaleGap {
			return errorf("Cannot sum decimals whose scales differ by more than %d", maxScaleGap)
		} else if gap > 0 {
			a.b.Mul(a.b, pow10(int(gap)))
			a.scale = n.sc
		} else if gap < 0 {
			x = new(big.Int).Mul(x, pow10(int(-gap)))
		}
		a.b.Add(a.b, x)
	default:
		a.i += n.i
		a.b.Add(a.b, big.NewInt(n.i))
	}
	a.count++
	return nil
}

func (a *sumAcc) Result() []byte {
	switch a.t.Kind {
	case cqltype.Float, cqltype.Double:
		r := a.f
		if a.avg && a.count > 0 {
			r /= float64(a.count)
		}
		if a.t.Kind == cqltype.Float {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(r)))
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(r))
	case cqltype.Varint:
		r := a.exact()
		if a.avg && a.count > 0 {
			r = new(big.Int).Quo(r, big.NewInt(a.count))
		}
		return cqltype.AppendBigInt(nil, new(big.Int).Abs(r), r.Sign() < 0)
	case cqltype.Decimal:
		r := a.exact()
		if a.avg && a.count > 0 {
			r = quoHalfEven(r, big.NewInt(a.count))
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(a.scale))
		return cqltype.AppendBigInt(out, new(big.Int).Abs(r), r.Sign() < 0)
	}
	s := a.i
	if a.avg && a.count > 0 {
		s = new(big.Int).Quo(a.exact(), big.NewInt(a.count)).Int64()
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

func (a *sumAcc) exact() *big.Int {
	if a.b == nil {
		return new(big.Int)
	}
	return a.b
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
