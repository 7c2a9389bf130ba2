package funcs

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

const (
	// uuidEpochTicks is 1970-01-01 in 100 ns ticks since 1582-10-15, the
	// epoch of version 1 UUIDs.
	uuidEpochTicks = 0x01B21DD213814000
	msPerDay       = 86400000
	dateEpoch      = 1 << 31
	// minTimeLSB and maxTimeLSB are the lowest and highest low halves of a
	// timeuuid in Cassandra's order (the low bytes compare as signed).
	minTimeLSB = 0x8080808080808080
	maxTimeLSB = 0x7f7f7f7f7f7f7f7f
)

// timeuuidGen makes version 1 UUIDs that are unique and increasing within
// this process: the clock is the wall time in 100 ns ticks, bumped past the
// last one issued. The clock sequence and node are random, with the
// multicast bit set as RFC 4122 asks of nodes that are not MAC addresses.
type timeuuidGen struct {
	mu   sync.Mutex
	last uint64
	lsb  uint64
}

var gen = func() *timeuuidGen {
	var b [8]byte
	_, _ = rand.Read(b[:])
	lsb := binary.BigEndian.Uint64(b[:])
	lsb = lsb&^(0xc0<<56) | 0x80<<56 // variant 10
	lsb |= 0x0000010000000000        // multicast bit of the node
	return &timeuuidGen{lsb: lsb}
}()

func (g *timeuuidGen) next(now time.Time) []byte {
	ticks := uint64(now.UnixNano()/100) + uuidEpochTicks
	g.mu.Lock()
	if ticks <= g.last {
		ticks = g.last + 1
	}
	g.last = ticks
	g.mu.Unlock()
	return timeuuid(ticks, g.lsb)
}

// timeuuid lays out a version 1 UUID from its 60-bit timestamp and low half.
func timeuuid(ticks, lsb uint64) []byte {
	msb := cqltype.RestoreTimestamp(1<<60 | ticks&0x0fffffffffffffff)
	out := binary.BigEndian.AppendUint64(make([]byte, 0, 16), msb)
	return binary.BigEndian.AppendUint64(out, lsb)
}

// timeuuidTicks returns the 60-bit timestamp of a version 1 UUID.
func timeuuidTicks(u []byte) uint64 {
	return cqltype.ReorderTimestamp(binary.BigEndian.Uint64(u)) & 0x0fffffffffffffff
}

// timeuuidMillis returns the Unix time in ms of a timeuuid, truncated as
// Cassandra's UUIDGen.unixTimestamp does.
func timeuuidMillis(u []byte) int64 {
	return (int64(timeuuidTicks(u)) - uuidEpochTicks) / 10000
}

func bigint(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func timestampMillis(v []byte) int64 { return int64(binary.BigEndian.Uint64(v)) }

func dateMillis(v []byte) int64 {
	return (int64(binary.BigEndian.Uint32(v)) - dateEpoch) * msPerDay
}

// millisToDate converts ms to a serialized date, truncating toward zero as
// Cassandra's SimpleDateSerializer.timeInMillisToDay does.
func millisToDate(ms int64) ([]byte, error) {
	days := ms / msPerDay
	if days < math.MinInt32 || days > math.MaxInt32 {
		return nil, errorf("Input timestamp %d is out of the range of dates", ms)
	}
	return binary.BigEndian.AppendUint32(nil, uint32(days+dateEpoch)), nil
}

// checkLen guards against values of the wrong size, which Validate would
// reject but a caller might still pass.
func checkLen(name string, v []byte, n int) error {
	if len(v) != n {
		return errorf("In call to function system.%s, value of %d bytes is not valid (%d expected)", name, len(v), n)
	}
	return nil
}

func registerTime() {
	ts, date, tu, bi := cqltype.TimestampType, cqltype.DateType, cqltype.TimeuuidType, cqltype.BigintType
	nondet := func(name string, ret *cqltype.Type, fn func(now time.Time) []byte) {
		register(&Function{Name: name, Return: ret, scalar: func([][]byte) ([]byte, error) {
			return fn(time.Now()), nil
		}})
	}
	nondet("now", tu, gen.next)
	nondet("currenttimeuuid", tu, gen.next)
	nondet("uuid", cqltype.UUIDType, func(time.Time) []byte {
		var u [16]byte
		_, _ = rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		return u[:]
	})
	nondet("currenttimestamp", ts, func(now time.Time) []byte { return bigint(now.UnixMilli()) })
	nondet("currentdate", date, func(now time.Time) []byte {
		v, _ := millisToDate(now.UnixMilli())
		return v
	})
	nondet("currenttime", cqltype.TimeType, func(now time.Time) []byte {
		now = now.UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return bigint(int64(now.Sub(midnight)))
	})

	// fromTimeuuid, fromTimestamp and fromDate adapt a conversion of ms.
	type conv func(ms int64) ([]byte, error)
	// An empty value (which timeuuid and timestamp columns can hold) gives
	// null, as TimeFcts' "bb == null || !bb.hasRemaining()" checks.
	fromTimeuuid := func(name string, c conv) func([][]byte) ([]byte, error) {
		return func(a [][]byte) ([]byte, error) {
			if len(a[0]) == 0 {
				return nil, nil
			}
			if err := checkLen(name, a[0], 16); err != nil {
				return nil, err
			}
			return c(timeuuidMillis(a[0]))
		}
	}
	fromTimestamp := func(name string, c conv) func([][]byte) ([]byte, error) {
		return func(a [][]byte) ([]byte, error) {
			if len(a[0]) == 0 {
				return nil, nil
			}
			if err := checkLen(name, a[0], 8); err != nil {
				return nil, err
			}
			return c(timestampMillis(a[0]))
		}
	}
	fromDate := func(name string, c conv) func([][]byte) ([]byte, error) {
		return func(a [][]byte) ([]byte, error) {
			if len(a[0]) == 0 {
				return nil, nil
			}
			if err := checkLen(name, a[0], 4); err != nil {
				return nil, err
			}
			return c(dateMillis(a[0]))
		}
	}
	toTimestamp := func(ms int64) ([]byte, error) { return bigint(ms), nil }
	toBigint := toTimestamp
	one := func(t *cqltype.Type) []*cqltype.Type { return []*cqltype.Type{t} }

	scalar("totimestamp", ts, one(tu), fromTimeuuid("totimestamp", toTimestamp))
	scalar("totimestamp", ts, one(date), fromDate("totimestamp", toTimestamp))
	scalar("todate", date, one(tu), fromTimeuuid("todate", millisToDate))
	scalar("todate", date, one(ts), fromTimestamp("todate", millisToDate))
	scalar("tounixtimestamp", bi, one(tu), fromTimeuuid("tounixtimestamp", toBigint))
	scalar("tounixtimestamp", bi, one(ts), fromTimestamp("tounixtimestamp", toBigint))
	scalar("tounixtimestamp", bi, one(date), fromDate("tounixtimestamp", toBigint))
	scalar("dateof", ts, one(tu), fromTimeuuid("dateof", toTimestamp))
	scalar("unixtimestampof", bi, one(tu), fromTimeuuid("unixtimestampof", toBigint))
	scalar("mintimeuuid", tu, one(ts), fromTimestamp("mintimeuuid", func(ms int64) ([]byte, error) {
		return timeuuid(uint64(ms*10000+uuidEpochTicks), minTimeLSB), nil
	}))
	scalar("maxtimeuuid", tu, one(ts), fromTimestamp("maxtimeuuid", func(ms int64) ([]byte, error) {
		return timeuuid(uint64((ms+1)*10000+uuidEpochTicks-1), maxTimeLSB), nil
	}))
}
