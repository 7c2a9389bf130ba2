package exec

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Serialized collections (see package cqltype): an int32 count, then per
// element (per map entry: key, then value) an int32 length and the bytes.
// Writes split bound collections into elements, one cell each, and join
// elements back when a condition compares a whole non-frozen collection.

// splitCollection returns the elements of a serialized list or set, or the
// keys and values of a map interleaved (k0, v0, k1, v1, ...). The slices
// alias v. Bad bytes are an Invalid error, never a panic.
func splitCollection(v []byte, isMap bool) ([][]byte, error) {
	if len(v) < 4 {
		return nil, invalidf("Not enough bytes to read a collection")
	}
	n := int32(binary.BigEndian.Uint32(v))
	if n < 0 {
		return nil, invalidf("Invalid negative collection size %d", n)
	}
	v = v[4:]
	per := 1
	if isMap {
		per = 2
	}
	// Every element takes at least 4 bytes: bound n before allocating.
	if int64(n)*int64(per)*4 > int64(len(v)) {
		return nil, invalidf("Not enough bytes to read a collection of %d elements", n)
	}
	out := make([][]byte, 0, int(n)*per)
	for range int(n) * per {
		if len(v) < 4 {
			return nil, invalidf("Not enough bytes to read a collection element")
		}
		l := int32(binary.BigEndian.Uint32(v))
		v = v[4:]
		if l < 0 {
			return nil, invalidf("null is not supported inside collections")
		}
		if int64(l) > int64(len(v)) {
			return nil, invalidf("Not enough bytes to read a collection element")
		}
		out = append(out, v[:l:l])
		v = v[l:]
	}
	if len(v) != 0 {
		return nil, invalidf("Unexpected extraneous bytes after collection value")
	}
	return out, nil
}

// joinCollection serializes elements (for a map, keys and values
// interleaved) as a collection of n entries.
func joinCollection(elems [][]byte, isMap bool) []byte {
	n := len(elems)
	if isMap {
		n /= 2
	}
	size := 4
	for _, e := range elems {
		size += 4 + len(e)
	}
	out := make([]byte, 4, size)
	binary.BigEndian.PutUint32(out, uint32(n))
	for _, e := range elems {
		out = binary.BigEndian.AppendUint32(out, uint32(len(e)))
		out = append(out, e...)
	}
	return out
}

// splitUDT returns the fields of a serialized user-type value, one per field
// of t: nil for a null or missing trailing field.
func splitUDT(t *cqltype.Type, v []byte) ([][]byte, error) {
	out := make([][]byte, len(t.Elems))
	for i := 0; len(v) > 0; i++ {
		if i >= len(out) || len(v) < 4 {
			return nil, invalidf("Invalid user type value: too many bytes for type %s", t.Name)
		}
		l := int32(binary.BigEndian.Uint32(v))
		v = v[4:]
		if l < 0 {
			continue
		}
		if int64(l) > int64(len(v)) {
			return nil, invalidf("Invalid user type value: not enough bytes for field %s", t.Fields[i])
		}
		out[i] = v[:l:l]
		v = v[l:]
	}
	return out, nil
}

// joinUDT serializes the fields of a user-type value, nil for null, dropping
// trailing nulls as Cassandra's comparator treats them as missing.
func joinUDT(fields [][]byte) []byte {
	n := len(fields)
	for n > 0 && fields[n-1] == nil {
		n--
	}
	var out []byte
	for _, f := range fields[:n] {
		if f == nil {
			out = binary.BigEndian.AppendUint32(out, 0xFFFFFFFF)
			continue
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// fieldPath returns the cell path of field i of a non-frozen user type: the
// field's position as a smallint, as Cassandra's UserType.cellPathForField
// does, in the order-preserving path encoding of elementPath.
func fieldPath(i int) []byte {
	p, err := elementPath(cqltype.SmallintType, binary.BigEndian.AppendUint16(nil, uint16(i)))
	if err != nil {
		panic("exec: smallint path: " + err.Error()) // a 2-byte smallint always encodes
	}
	return p
}

// List element paths are version 1 timeuuids, so list order is the order of
// their timestamps. Appends take times from the clock, never twice the same;
// prepends take times mirrored around a reference instant (2010-01-01, as
// Cassandra's Lists.PrecisionTime), so that each prepend sorts before every
// earlier prepend and append. As in Cassandra, the order of concurrent writers
// on different frontends is the order of their clocks.

// uuidEpochOffset is the count of 100 ns ticks from 1582-10-15, the start of
// version 1 UUID time, to 1970-01-01.
const uuidEpochOffset = 0x01B21DD213814000

// prependReference is Cassandra's reference time for prepends, in ms.
const prependReference = 1262304000000

// listPaths generates list element timeuuids for one process.
type listPaths struct {
	mu       sync.Mutex
	lastApp  int64 // last append tick
	lastPrep int64 // last prepend tick (decreasing)
	node     [8]byte
}

var listPathGen = newListPaths()

func newListPaths() *listPaths {
	g := &listPaths{}
	if _, err := rand.Read(g.node[:]); err != nil {
		panic("exec: no randomness for timeuuid node: " + err.Error())
	}
	g.node[0] = g.node[0]&0x3F | 0x80 // the RFC 4122 variant
	return g
}

// appendTicks reserves n consecutive ticks later than every earlier append.
func (g *listPaths) appendTicks(n int) int64 {
	now := time.Now().UnixMilli()*10000 + uuidEpochOffset
	g.mu.Lock()
	defer g.mu.Unlock()
	first := max(now, g.lastApp+1)
	g.lastApp = first + int64(n) - 1
	return first
}

// prependTicks reserves n consecutive ticks earlier than every earlier
// prepend; the elements take them in order, so they keep their order.
func (g *listPaths) prependTicks(n int) int64 {
	ms := time.Now().UnixMilli()
	mirrored := (prependReference-(ms-prependReference))*10000 + uuidEpochOffset
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastPrep == 0 || mirrored+int64(n) <= g.lastPrep {
		g.lastPrep = mirrored
	} else {
		g.lastPrep -= int64(n)
	}
	return g.lastPrep
}

// timeuuid returns the version 1 UUID of tick t with g's node bytes.
func (g *listPaths) timeuuid(t int64) []byte {
	u := make([]byte, 16)
	binary.BigEndian.PutUint32(u[0:], uint32(t))                  // time_low
	binary.BigEndian.PutUint16(u[4:], uint16(t>>32))              // time_mid
	binary.BigEndian.PutUint16(u[6:], uint16(t>>48)&0x0FFF|1<<12) // time_hi and version
	copy(u[8:], g.node[:])
	return u
}

// paths returns n list element paths, for an append or a prepend.
func (g *listPaths) paths(n int, prepend bool) [][]byte {
	var first int64
	if prepend {
		first = g.prependTicks(n)
	} else {
		first = g.appendTicks(n)
	}
	out := make([][]byte, n)
	for i := range out {
		p, err := elementPath(cqltype.TimeuuidType, g.timeuuid(first+int64(i)))
		if err != nil {
			panic("exec: timeuuid path: " + err.Error()) // 16 bytes always encode
		}
		out[i] = p
	}
	return out
}
