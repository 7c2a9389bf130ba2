package keys

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/token"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/keys.golden")

// goldenCases pin the key format: keys are stored in SSTables, so any change
// to their bytes is a format change.
func goldenCases() []struct {
	name string
	key  []byte
} {
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	be64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	// coll serializes a collection of n elements (n entries for maps).
	coll := func(n int, vs ...[]byte) []byte {
		b := be32(uint32(n))
		for _, v := range vs {
			b = append(be32Append(b, uint32(len(v))), v...)
		}
		return b
	}
	type row struct {
		name  string
		typ   string
		desc  bool
		value []byte
	}
	rows := []row{
		{"int 1", "int", false, be32(1)},
		{"int -1 desc", "int", true, be32(math.MaxUint32)},
		{"int empty", "int", false, []byte{}},
		{"int empty desc", "int", true, []byte{}},
		{"bigint min", "bigint", false, be64(1 << 63)},
		{"timestamp desc", "timestamp", true, be64(1764460800000)},
		{"date epoch", "date", false, be32(1 << 31)},
		{"time noon", "time", false, be64(43200 * 1e9)},
		{"boolean true (02)", "boolean", false, []byte{2}},
		{"float -0", "float", false, be32(0x80000000)},
		{"double NaN", "double", false, be64(0xfff8000000000001)},
		{"text a\\x00b", "text", false, []byte("a\x00b")},
		{"text a\\x00b desc", "text", true, []byte("a\x00b")},
		{"blob ff00", "blob", false, []byte{0xff, 0}},
		{"inet 10.0.0.1", "inet", false, []byte{10, 0, 0, 1}},
		{"uuid v4", "uuid", false, mustHex("00112233445547778899aabbccddeeff")},
		{"uuid v1", "uuid", false, mustHex("00112233445517778899aabbccddeeff")},
		{"timeuuid", "timeuuid", false, mustHex("00112233445517778899aabbccddeeff")},
		{"varint -129", "varint", false, []byte{0xff, 0x7f}},
		{"varint 300 padded", "varint", false, []byte{0, 0, 1, 0x2c}},
		{"decimal 1.50", "decimal", false, append(be32(2), 0, 150)},
		{"decimal -0.001", "decimal", false, append(be32(3), 0xff)},
		{"decimal 0", "decimal", false, be32(9)},
		{"list<int> [1, 2]", "frozen<list<int>>", false, coll(2, be32(1), be32(2))},
		{"set<text> {'', 'a'}", "frozen<set<text>>", false, coll(2, []byte{}, []byte("a"))},
		{"map<int, text> {1: 'x'}", "frozen<map<int, text>>", false, coll(1, be32(1), []byte("x"))},
		{"tuple (null, 1, null)", "tuple<int, int, int>", false, append(append(be32(math.MaxUint32), append(be32(4), be32(1)...)...), be32(math.MaxUint32)...)},
	}

	var out []struct {
		name string
		key  []byte
	}
	pk := []byte{0, 0, 0, 0, 0, 0, 0, 42}
	tok := token.Murmur3(pk)
	out = append(out, struct {
		name string
		key  []byte
	}{"header", HeaderKey(nil, tok, pk)})
	for _, r := range rows {
		typ := cqltype.MustParse(r.typ)
		k, err := RowKey(nil, tok, pk, [][]byte{r.value}, []*cqltype.Type{typ}, []bool{r.desc})
		if err != nil {
			panic(fmt.Sprintf("%s: %v", r.name, err))
		}
		out = append(out, struct {
			name string
			key  []byte
		}{"row " + r.name, k})
	}
	prefix := AppendPartitionPrefix(nil, tok, pk)
	types := []*cqltype.Type{cqltype.TimestampType, cqltype.TextType}
	desc := []bool{true, false}
	for _, kind := range []BoundKind{Before, After} {
		k, err := AppendBound(nil, prefix, [][]byte{be64(1764460800000)}, types, desc, kind)
		if err != nil {
			panic(err)
		}
		out = append(out, struct {
			name string
			key  []byte
		}{fmt.Sprintf("bound %d on timestamp desc", kind), k})
	}
	out = append(out, struct {
		name string
		key  []byte
	}{"partition end", AppendPartitionEnd(nil, prefix)})
	return out
}

func be32Append(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestGolden(t *testing.T) {
	const path = "testdata/keys.golden"
	var b strings.Builder
	b.WriteString("# name: key hex (token | escaped partition key | kind | clustering)\n")
	for _, c := range goldenCases() {
		fmt.Fprintf(&b, "%s: %x\n", c.name, c.key)
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("keys differ from %s (a format change; run with -rewrite only if intended):\n%s", path, diffLines(string(want), got))
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "-%s\n+%s\n", wl, gl)
		}
	}
	return b.String()
}
