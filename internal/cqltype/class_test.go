package cqltype

import (
	"strings"
	"testing"
)

// TestParseClassName: a type written as its Java class reads as the CQL
// type Cassandra's TypeParser gives, under the rules of the CQL form.
func TestParseClassName(t *testing.T) {
	for in, want := range map[string]string{
		`'org.apache.cassandra.db.marshal.Int32Type'`: "int",
		`'UTF8Type'`: "text",
		`'org.apache.cassandra.db.marshal.TimeUUIDType'`:        "timeuuid",
		`'ListType(org.apache.cassandra.db.marshal.Int32Type)'`: "list<int>",
		`'MapType(UTF8Type, LongType)'`:                         "map<text, bigint>",
		`'FrozenType(SetType(ByteType))'`:                       "frozen<set<tinyint>>",
		`'TupleType(Int32Type,UTF8Type)'`:                       "frozen<tuple<int, text>>",
		`'ReversedType(DoubleType)'`:                            "double",
		`list<'Int32Type'>`:                                     "list<int>",
		`'org.apache.cassandra.db.marshal.LexicalUUIDType'`:     "error: the custom type 'org.apache.cassandra.db.marshal.LexicalUUIDType' is not supported by Sediment",
		`'com.example.MyType'`:                                  "error: Unable to find abstract-type class 'com.example.MyType'",
		`'ListType(ListType(Int32Type))'`:                       "list<frozen<list<int>>>",
		`'SetType(DurationType)'`:                               "error: ",
		`'ListType(Int32Type'`:                                  "error: expected ')'",
		`'Int32Type`:                                            "error: unterminated string",
	} {
		typ, err := Parse(in, nil)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = typ.String()
		}
		if strings.HasPrefix(want, "error: ") {
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(want, "error: ")) {
				t.Errorf("Parse(%s) = %s, want %s", in, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("Parse(%s) = %s, want %s", in, got, want)
		}
	}
}
