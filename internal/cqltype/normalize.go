package cqltype

import (
	"encoding/binary"
	"slices"
)

// Normalize returns v as Cassandra stores it: the elements of every set
// sorted by Compare without duplicates, and the entries of every map sorted
// by key without duplicate keys (a repeated key keeps its first bytes and
// its last value, as Java's TreeMap.put does), at every level of nesting.
// Values whose type holds no set or map are returned as they are. Drivers
// may send sets and maps in any order; normalizing them before they become
// part of a key or a frozen cell makes equal values equal bytes.
//
// v must be valid for t (see Validate).
func Normalize(t *Type, v []byte) ([]byte, error) {
	if !hasSetOrMap(t) || len(v) == 0 {
		return v, nil
	}
	if err := Validate(t, v); err != nil {
		return nil, err
	}
	return normalize(nil, t, v), nil
}

func hasSetOrMap(t *Type) bool {
	if t.Kind == Set || t.Kind == Map {
		return true
	}
	for _, e := range t.Elems {
		if hasSetOrMap(e) {
			return true
		}
	}
	return false
}

// normalize appends the normalized form of the valid, non-empty value v.
func normalize(dst []byte, t *Type, v []byte) []byte {
	if !hasSetOrMap(t) {
		return append(dst, v...)
	}
	switch t.Kind {
	case List, Set, Map:
		return normalizeCollection(dst, t, v)
	case Tuple, UDT:
		for i := 0; len(v) > 0; i++ {
			e, rest, null, _ := readValue(v)
			v = rest
			if null {
				dst = binary.BigEndian.AppendUint32(dst, ^uint32(0))
				continue
			}
			dst = appendElem(dst, t.Elems[i], e)
		}
		return dst
	}
	return append(dst, v...)
}

// appendElem appends a length-prefixed, normalized element.
func appendElem(dst []byte, t *Type, e []byte) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if len(e) > 0 {
		dst = normalize(dst, t, e)
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

func normalizeCollection(dst []byte, t *Type, v []byte) []byte {
	count := int(binary.BigEndian.Uint32(v))
	v = v[4:]
	per := len(t.Elems) // 1 for lists and sets, 2 for maps
	elems := make([][]byte, 0, count*per)
	for range count * per {
		e, rest, _, _ := readValue(v)
		elems = append(elems, e)
		v = rest
	}
	// Normalize nested values first, so that sorting compares their
	// canonical forms.
	for i, e := range elems {
		if len(e) > 0 && hasSetOrMap(t.Elems[i%per]) {
			elems[i] = normalize(nil, t.Elems[i%per], e)
		}
	}
	if t.Kind != List {
		type entry struct{ key, val []byte }
		entries := make([]entry, count)
		for i := range entries {
			entries[i].key = elems[i*per]
			if per == 2 {
				entries[i].val = elems[i*per+1]
			}
		}
		key := t.Elems[0]
		slices.SortStableFunc(entries, func(a, b entry) int { return Compare(key, a.key, b.key) })
		out := entries[:0]
		for _, e := range entries {
			if n := len(out); n > 0 && Compare(key, out[n-1].key, e.key) == 0 {
				out[n-1].val = e.val // TreeMap.put: first key, last value
				continue
			}
			out = append(out, e)
		}
		elems = elems[:0]
		for _, e := range out {
			elems = append(elems, e.key)
			if per == 2 {
				elems = append(elems, e.val)
			}
		}
		count = len(out)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(count))
	for _, e := range elems {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(e)))
		dst = append(dst, e...)
	}
	return dst
}
