package cqltype

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
)

// DecimalParts is the canonical form of a decimal: equal numbers have equal
// parts whatever their scale. The value is 0.Digits × 10^Exp, negated if Neg.
type DecimalParts struct {
	Neg bool
	// Exp is the decimal exponent of the leading digit plus one.
	Exp int64
	// Digits are the significant digits as ASCII, without leading or
	// trailing zeros; empty for zero (then Neg is false and Exp is 0).
	Digits []byte
}

// maxDecimalPad bounds the zeros JoinDecimal appends to fit a scale into an
// int32, so that crafted parts cannot make it allocate without bound.
const maxDecimalPad = 1 << 20

// SplitDecimal returns the canonical parts of a serialized decimal (4-byte
// scale, then the varint unscaled value; an empty unscaled value is zero).
func SplitDecimal(v []byte) (DecimalParts, error) {
	if len(v) < 4 {
		return DecimalParts{}, marshalErrorf("Expected 0 or at least 4 bytes (%d)", len(v))
	}
	scale := int64(int32(binary.BigEndian.Uint32(v)))
	u := MinimalVarint(v[4:])
	if len(u) == 0 || len(u) == 1 && u[0] == 0 {
		return DecimalParts{}, nil
	}
	var d DecimalParts
	var x big.Int
	if u[0]&0x80 != 0 {
		d.Neg = true
		inv := make([]byte, len(u))
		for i, c := range u {
			inv[i] = ^c
		}
		x.SetBytes(inv) // |v| - 1
		x.Add(&x, big.NewInt(1))
	} else {
		x.SetBytes(u)
	}
	digits := x.Append(nil, 10)
	d.Exp = int64(len(digits)) - scale
	d.Digits = bytes.TrimRight(digits, "0")
	return d, nil
}

// Compare orders decimals numerically.
func (d DecimalParts) Compare(e DecimalParts) int {
	if c := cmp.Compare(d.sign(), e.sign()); c != 0 || d.sign() == 0 {
		return c
	}
	c := cmp.Compare(d.Exp, e.Exp)
	if c == 0 {
		c = bytes.Compare(d.Digits, e.Digits)
	}
	if d.Neg {
		return -c
	}
	return c
}

func (d DecimalParts) sign() int {
	switch {
	case len(d.Digits) == 0:
		return 0
	case d.Neg:
		return -1
	}
	return 1
}

// JoinDecimal appends the serialized decimal with the given parts, using
// the smallest scale that represents it exactly and fits an int32.
func JoinDecimal(dst []byte, d DecimalParts) ([]byte, error) {
	if len(d.Digits) == 0 {
		return append(dst, 0, 0, 0, 0, 0), nil
	}
	if d.Digits[0] == '0' || d.Digits[len(d.Digits)-1] == '0' {
		return dst, errors.New("cqltype: decimal digits not canonical")
	}
	digits := d.Digits
	scale := int64(len(digits)) - d.Exp
	if d.Exp < -math.MaxInt32-int64(len(digits)) || d.Exp > math.MaxInt32+int64(len(digits))+maxDecimalPad {
		return dst, errors.New("cqltype: decimal exponent out of range")
	}
	if scale > math.MaxInt32 {
		return dst, errors.New("cqltype: decimal scale out of range")
	}
	if scale < math.MinInt32 {
		pad := math.MinInt32 - scale
		digits = append(append([]byte(nil), digits...), bytes.Repeat([]byte{'0'}, int(pad))...)
		scale = math.MinInt32
	}
	var x big.Int
	if _, ok := x.SetString(string(digits), 10); !ok {
		return dst, errors.New("cqltype: decimal digits not decimal")
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(scale)))
	return AppendBigInt(dst, &x, d.Neg), nil
}

// AppendBigInt appends the minimal two's complement bytes of x, negated if
// neg. x must not be negative.
func AppendBigInt(dst []byte, x *big.Int, neg bool) []byte {
	if !neg || x.Sign() == 0 {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			dst = append(dst, 0)
		}
		return append(dst, b...)
	}
	var m big.Int
	m.Sub(x, big.NewInt(1)) // -x = ^(x-1)
	b := m.Bytes()
	if len(b) == 0 || ^b[0]&0x80 == 0 {
		dst = append(dst, 0xff)
	}
	for _, c := range b {
		dst = append(dst, ^c)
	}
	return dst
}
