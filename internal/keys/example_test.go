package keys_test

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/token"
)

// A table with PRIMARY KEY ((sensor), ts, name) WITH CLUSTERING ORDER BY
// (ts DESC): build row keys, then the byte range of one timestamp's rows.
func Example() {
	pk := binary.BigEndian.AppendUint64(nil, 7) // sensor bigint
	tok := token.Murmur3(pk)
	types := []*cqltype.Type{cqltype.TimestampType, cqltype.TextType}
	desc := []bool{true, false}
	ts := func(ms uint64) []byte { return binary.BigEndian.AppendUint64(nil, ms) }

	var rows [][]byte
	for _, c := range []struct {
		ms   uint64
		name string
	}{{1000, "a"}, {2000, "a"}, {2000, "b"}, {3000, "a"}} {
		k, err := keys.RowKey(nil, tok, pk, [][]byte{ts(c.ms), []byte(c.name)}, types, desc)
		if err != nil {
			panic(err)
		}
		rows = append(rows, k)
	}

	prefix := keys.AppendPartitionPrefix(nil, tok, pk)
	start, _ := keys.AppendBound(nil, prefix, [][]byte{ts(2000)}, types, desc, keys.Before)
	end, _ := keys.AppendBound(nil, prefix, [][]byte{ts(2000)}, types, desc, keys.After)
	for _, k := range rows {
		if bytes.Compare(start, k) < 0 && bytes.Compare(k, end) < 0 {
			vals, _ := keys.DecodeClustering(k, types, desc)
			fmt.Printf("ts=%d name=%s\n", binary.BigEndian.Uint64(vals[0]), vals[1])
		}
	}
	// ts DESC: the newest row sorts first.
	fmt.Println(bytes.Compare(rows[3], rows[0]) < 0)
	// Output:
	// ts=2000 name=a
	// ts=2000 name=b
	// true
}
