package values

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// ToJSON returns the JSON form of a serialized value of type t, as
// Cassandra's toJson and SELECT JSON write it:
//
//	type                         JSON
//	---------------------------  ----------------------------------------------
//	null                         null
//	ascii, text                  "..."
//	integers, counter, decimal   number (decimal as Java's BigDecimal.toString)
//	float, double                number as Java writes it; NaN and ±Infinity
//	                             are null, as JSON has no such numbers
//	boolean                      true, false
//	blob                         "0x..."
//	date, time                   "yyyy-mm-dd", "hh:mm:ss.fffffffff"
//	timestamp                    "yyyy-mm-dd hh:mm:ss.SSSZ" (UTC)
//	uuid, timeuuid, inet         "..." (inet IPv6 uncompressed, as Java)
//	duration                     "1h30m"
//	list, set, tuple             [e, ...]
//	map                          {"key": v, ...}; keys that are not JSON
//	                             strings are quoted: {"1": "a"}
//	user type                    {"field": v, ...}, names quoted as CQL
//	                             identifiers when needed
//
// The empty value of a non-string type is "". Elements are separated by
// ", " and keys by ": ", as in Cassandra. A malformed value is an error.
func ToJSON(t *cqltype.Type, v []byte) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	if err := cqltype.Validate(t, v); err != nil {
		var me *cqltype.MarshalError
		if errors.As(err, &me) {
			return nil, errorf(me.Msg)
		}
		return nil, err
	}
	return appendJSON(nil, t, v), nil
}

// appendJSONString appends s as a JSON string escaped as Jackson's
// quoteAsJsonString does for Cassandra: quotes, backslashes and control
// characters only (\n, \t... or \u00XX), so that toJson output matches
// Cassandra's byte for byte.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// appendJSON appends the JSON form of a valid value.
func appendJSON(dst []byte, t *cqltype.Type, v []byte) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	switch t.Kind {
	case cqltype.List, cqltype.Set:
		dst = append(dst, '[')
		n, rest := collectionCount(v)
		for i := 0; i < n; i++ {
			var e []byte
			e, rest = nextElem(rest)
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendJSON(dst, t.Elems[0], e)
		}
		return append(dst, ']')
	case cqltype.Map:
		dst = append(dst, '{')
		n, rest := collectionCount(v)
		for i := 0; i < n; i++ {
			var k, e []byte
			k, rest = nextElem(rest)
			e, rest = nextElem(rest)
			if i > 0 {
				dst = append(dst, ", "...)
			}
			key := appendJSON(nil, t.Elems[0], k)
			if len(key) > 0 && key[0] == '"' {
				dst = append(dst, key...)
			} else {
				dst = appendJSONString(dst, string(key))
			}
			dst = append(dst, ": "...)
			dst = appendJSON(dst, t.Elems[1], e)
		}
		return append(dst, '}')
	case cqltype.Tuple, cqltype.UDT:
		open, end := byte('['), byte(']')
		if t.Kind == cqltype.UDT {
			open, end = '{', '}'
		}
		dst = append(dst, open)
		for i, e := range tupleElems(t, v) {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			if t.Kind == cqltype.UDT {
				dst = appendJSONString(dst, cqltype.QuoteIdent(t.Fields[i]))
				dst = append(dst, ": "...)
			}
			dst = appendJSON(dst, t.Elems[i], e)
		}
		return append(dst, end)
	}
	if len(v) == 0 && t.Kind != cqltype.Blob {
		return append(dst, `""`...)
	}
	switch t.Kind {
	case cqltype.Boolean, cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint, cqltype.Counter,
		cqltype.Varint, cqltype.Decimal:
		return append(dst, nativeText(t, v)...)
	case cqltype.Float, cqltype.Double:
		s := nativeText(t, v)
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return append(dst, "null"...)
		}
		return append(dst, s...)
	case cqltype.Timestamp:
		return appendJSONString(dst, formatTimestamp(int64(binary.BigEndian.Uint64(v)), ' '))
	}
	return appendJSONString(dst, nativeText(t, v))
}

// FromJSON converts a JSON value to a serialized value of type t, as
// Cassandra's fromJson and INSERT JSON do. null is nil. Beyond the forms
// ToJSON writes it accepts, as Cassandra does, numbers and booleans written
// as strings ("12", "true"), timestamps as integer milliseconds, and
// collections, tuples and user types written as a string holding their
// JSON; dates and times must be strings. Keys of user-type objects are
// field names, case-folded unless written in double quotes ("\"Name\"").
// An empty JSON list or object is an empty collection, which the executor
// treats as null for a non-frozen column.
func FromJSON(t *cqltype.Type, data []byte) ([]byte, error) {
	x, err := decodeJSON(data)
	if err != nil {
		e := errorf(fmt.Sprintf("Could not decode JSON string '%s': %s", data, jsonReason(err)))
		e.syntax = true
		return nil, e
	}
	v, err := fromJSON(t, x)
	if err != nil || v == nil || t.Kind.Native() {
		return v, err
	}
	return cqltype.Normalize(t, v)
}

// DecodeObject decodes the JSON object of an INSERT JSON statement into
// its members by column name. As in Cassandra, names are case-folded to
// lower case unless written in double quotes inside the JSON string
// ("\"MyCol\"" is MyCol); a name given twice keeps its last value. Each
// value is the member's raw JSON, for FromJSON.
func DecodeObject(data []byte) (map[string]json.RawMessage, error) {
	x, err := decodeJSON(data)
	if err != nil {
		return nil, errorf(fmt.Sprintf("Could not decode JSON string as a map: %s. (String was: %s)", jsonReason(err), data))
	}
	obj, ok := x.(jsonObject)
	if !ok {
		return nil, errorf(fmt.Sprintf("Could not decode JSON string as a map: not an object. (String was: %s)", data))
	}
	out := make(map[string]json.RawMessage, len(obj))
	for _, m := range obj {
		out[identName(m.key)] = m.raw
	}
	return out, nil
}

// identName applies Cassandra's case rules to a JSON key naming a column
// or field.
func identName(key string) string {
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		return strings.ReplaceAll(key[1:len(key)-1], `""`, `"`)
	}
	return strings.ToLower(key)
}

func jsonReason(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// A decoded JSON value is nil, bool, json.Number, string, []any or
// jsonObject. Objects keep their members in order, so that duplicate keys
// resolve deterministically (the last wins, as in Jackson).
type jsonObject []jsonMember

type jsonMember struct {
	key string
	val any
	raw json.RawMessage
}

// maxJSONDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxJSONDepth = 100

func decodeJSON(data []byte) (any, error) {
	if x, ok := decodeScalar(data); ok {
		return x, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	x, err := decodeValue(dec, data, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the value")
	}
	return x, nil
}

func decodeValue(dec *json.Decoder, data []byte, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("too deeply nested")
	}
	tok, err := token(dec)
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			list := []any{}
			for dec.More() {
				e, err := decodeValue(dec, data, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, e)
			}
			if _, err := token(dec); err != nil {
				return nil, err
			}
			return list, nil
		case '{':
			obj := jsonObject{}
			for dec.More() {
				kt, err := token(dec)
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				start := skipSpace(data, int(dec.InputOffset()))
				val, err := decodeValue(dec, data, depth+1)
				if err != nil {
					return nil, err
				}
				raw := bytes.TrimSpace(data[start:dec.InputOffset()])
				obj = append(obj, jsonMember{key: key, val: val, raw: json.RawMessage(raw)})
			}
			if _, err := token(dec); err != nil {
				return nil, err
			}
			return obj, nil
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	}
	return tok, nil
}

// decodeScalar decodes a lone number, string, boolean or null without a
// json.Decoder, which costs more than the value for the common case of one
// column value. It reports false for anything else, or anything invalid,
// which the Decoder then handles and explains.
func decodeScalar(data []byte) (any, bool) {
	v := bytes.TrimSpace(data)
	if len(v) == 0 || !json.Valid(v) {
		return nil, false
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, false
		}
		return s, true
	case c == '-' || c >= '0' && c <= '9':
		return json.Number(v), true
	case c == 't':
		return true, true
	case c == 'f':
		return false, true
	case c == 'n':
		return nil, true
	}
	return nil, false
}

// token reads the next token, calling a premature end what it is.
func token(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("unexpected end of input")
	}
	return tok, err
}

// skipSpace skips JSON white space and the colon after an object key.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r' || data[i] == ':') {
		i++
	}
	return i
}

// javaClass names a decoded JSON value as Jackson's Java class, for
// Cassandra's messages.
func javaClass(x any) string {
	switch x := x.(type) {
	case string:
		return "String"
	case bool:
		return "Boolean"
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return "Double"
		}
		if _, err := strconv.ParseInt(s, 10, 32); err == nil {
			return "Integer"
		}
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return "Long"
		}
		return "BigInteger"
	case []any:
		return "ArrayList"
	case jsonObject:
		return "LinkedHashMap"
	}
	return "Object"
}

func jsonText(x any) string {
	switch x := x.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(plain(x))
	return string(b)
}

// plain turns a decoded value back into one encoding/json can marshal.
func plain(x any) any {
	switch x := x.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case jsonObject:
		out := make(map[string]any, len(x))
		for _, m := range x {
			out[m.key] = plain(m.val)
		}
		return out
	}
	return x
}

func expected(what string, x any) error {
	return errorf(fmt.Sprintf("Expected %s, but got a %s: %s", what, javaClass(x), jsonText(x)))
}

// stringOnly names the types FromJSON reads only from JSON strings, as
// Cassandra's messages call them.
var stringOnly = map[cqltype.Kind]string{
	cqltype.Date:     "a date value",
	cqltype.Time:     "a time value",
	cqltype.UUID:     "a uuid",
	cqltype.Timeuuid: "a timeuuid",
	cqltype.Inet:     "an inet value",
	cqltype.Duration: "a duration",
}

// isInteger reports whether a JSON number reads as a Java Integer (32) or
// a Long (64), as Jackson would decode it.
func isInteger(n json.Number, bits int) bool {
	_, err := strconv.ParseInt(string(n), 10, bits)
	return err == nil
}

func fromJSON(t *cqltype.Type, x any) ([]byte, error) {
	if x == nil {
		return nil, nil
	}
	str, isStr := x.(string)
	num, isNum := x.(json.Number)
	switch t.Kind {
	case cqltype.Ascii:
		if isStr {
			return Parse(t, str)
		}
		return nil, expected("an ascii string", x)
	case cqltype.Text:
		if isStr {
			return Parse(t, str)
		}
		return nil, expected("a UTF-8 string", x)
	case cqltype.Blob:
		bad := fmt.Sprintf("Value '%s' is not a valid blob representation", jsonText(x))
		switch {
		case !isStr:
			return nil, errorf(bad)
		case !strings.HasPrefix(str, "0x"):
			return nil, errorf(bad + ": String representation of blob is missing 0x prefix: " + str)
		}
		v, err := Parse(t, str[2:])
		if err != nil {
			return nil, errorf(bad + ": " + err.(*Error).Message(""))
		}
		return v, nil
	case cqltype.Boolean:
		switch x := x.(type) {
		case bool:
			if x {
				return []byte{1}, nil
			}
			return []byte{0}, nil
		case string:
			return Parse(t, x)
		}
		return nil, expected("a boolean value", x)
	case cqltype.Int:
		switch {
		case isStr:
			return Parse(t, str)
		case isNum && isInteger(num, 32):
			return Parse(t, string(num))
		}
		return nil, expected("an int value", x)
	case cqltype.Bigint, cqltype.Counter:
		switch {
		case isStr:
			return Parse(t, str)
		case isNum && isInteger(num, 64):
			return Parse(t, string(num))
		}
		return nil, expected("a bigint value", x)
	case cqltype.Smallint, cqltype.Tinyint:
		switch {
		case isStr:
			return Parse(t, str)
		case isNum:
			return Parse(t, string(num))
		}
		if t.Kind == cqltype.Smallint {
			return nil, expected("a short value", x)
		}
		return nil, expected("a byte value", x)
	case cqltype.Varint, cqltype.Decimal:
		text := jsonText(x)
		if isStr || isNum {
			if v, err := Parse(t, text); err == nil && (len(v) > 0 || t.Kind == cqltype.Decimal) {
				return v, nil
			}
		}
		return nil, errorf(fmt.Sprintf("Value '%s' is not a valid representation of a %s value", text, t.Kind))
	case cqltype.Float, cqltype.Double:
		switch {
		case isStr:
			return Parse(t, str)
		case isNum:
			return Parse(t, string(num))
		}
		return nil, expected("a "+t.Kind.String()+" value", x)
	case cqltype.Timestamp:
		switch {
		case isStr:
			return Parse(t, str)
		case isNum && isInteger(num, 64):
			return Parse(t, string(num))
		}
		return nil, expected("a long or a datestring representation of a timestamp value", x)
	case cqltype.Date, cqltype.Time, cqltype.UUID, cqltype.Timeuuid, cqltype.Inet, cqltype.Duration:
		if isStr {
			return Parse(t, str)
		}
		return nil, expected("a string representation of "+stringOnly[t.Kind], x)
	}
	// Collections, tuples and user types may come as a string holding
	// their JSON.
	if s, ok := x.(string); ok {
		var err error
		if x, err = decodeJSON([]byte(s)); err != nil {
			return nil, errorf(fmt.Sprintf("Could not decode JSON string '%s': %s", s, jsonReason(err)))
		}
		if x == nil {
			return nil, nil
		}
	}
	switch t.Kind {
	case cqltype.List, cqltype.Set:
		list, ok := x.([]any)
		if !ok {
			if t.Kind == cqltype.Set {
				return nil, expected("a list (representing a set)", x)
			}
			return nil, expected("a list", x)
		}
		dst := binary.BigEndian.AppendUint32(nil, uint32(len(list)))
		for _, e := range list {
			if e == nil {
				return nil, errorf("Invalid null element in " + t.Kind.String())
			}
			v, err := fromJSON(t.Elems[0], e)
			if err != nil {
				return nil, err
			}
			dst = appendElem(dst, v)
		}
		return dst, nil
	case cqltype.Map:
		obj, ok := x.(jsonObject)
		if !ok {
			return nil, expected("a map", x)
		}
		dst := binary.BigEndian.AppendUint32(nil, uint32(len(obj)))
		for _, m := range obj {
			if m.val == nil {
				return nil, errorf("Invalid null value in map")
			}
			k, err := fromJSON(t.Elems[0], m.key)
			if err != nil {
				return nil, err
			}
			if k == nil {
				return nil, errorf("Invalid null key in map")
			}
			v, err := fromJSON(t.Elems[1], m.val)
			if err != nil {
				return nil, err
			}
			dst = appendElem(appendElem(dst, k), v)
		}
		return dst, nil
	case cqltype.Tuple:
		list, ok := x.([]any)
		if !ok {
			return nil, expected("a list representation of a tuple", x)
		}
		switch {
		case len(list) > len(t.Elems):
			return nil, errorf(fmt.Sprintf("Tuple contains extra items (expected %d, got %d)", len(t.Elems), len(list)))
		case len(list) < len(t.Elems):
			return nil, errorf(fmt.Sprintf("Tuple is missing items (expected %d, got %d)", len(t.Elems), len(list)))
		}
		var dst []byte
		for i, et := range t.Elems {
			v, err := fromJSON(et, list[i])
			if err != nil {
				return nil, err
			}
			dst = appendElem(dst, v)
		}
		return dst, nil
	case cqltype.UDT:
		obj, ok := x.(jsonObject)
		if !ok {
			return nil, expected("a map", x)
		}
		vals := make([][]byte, len(t.Fields))
		for _, m := range obj {
			name := identName(m.key)
			f := fieldIndex(t, name)
			if f < 0 {
				return nil, errorf(fmt.Sprintf("Unknown field '%s' in value of user defined type %s", name, t.Name))
			}
			v, err := fromJSON(t.Elems[f], m.val)
			if err != nil {
				return nil, err
			}
			vals[f] = v
		}
		return udtValue(vals), nil
	}
	return nil, errorf(fmt.Sprintf("Cannot read a value of type %s from JSON", t))
}
