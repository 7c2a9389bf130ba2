package wire

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// benchRows is a page of n rows of a key, a bigint and a 100-byte text.
func benchRows(n int) *Rows {
	r := &Rows{Metadata: Metadata{Columns: []ColumnSpec{
		{Keyspace: "ks", Table: "t", Name: "k", Type: cqltype.TextType},
		{Keyspace: "ks", Table: "t", Name: "n", Type: cqltype.BigintType},
		{Keyspace: "ks", Table: "t", Name: "v", Type: cqltype.TextType},
	}}}
	v := bytes.Repeat([]byte("x"), 100)
	for i := range n {
		r.Rows = append(r.Rows, [][]byte{[]byte(fmt.Sprintf("key%08d", i)), make([]byte, 8), v})
	}
	return r
}

// BenchmarkRowsEncode measures encoding a page of rows into a reused
// frame buffer, the server's per-answer work.
func BenchmarkRowsEncode(b *testing.B) {
	for _, n := range []int{1, 100, 5000} {
		r := benchRows(n)
		for _, c := range []Compressor{nil, LZ4, Snappy} {
			name := "none"
			if c != nil {
				name = c.Name()
			}
			b.Run(fmt.Sprintf("rows=%d/compression=%s", n, name), func(b *testing.B) {
				buf, _ := AppendFrame(nil, Header{Version: V4, Response: true}, nil, r, nil)
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if buf, err = AppendFrame(buf[:0], Header{Version: V4, Response: true}, nil, r, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeExecute measures decoding an EXECUTE with n bound
// values, the server's per-request work.
func BenchmarkDecodeExecute(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		x := &Execute{ID: make([]byte, 16), Params: QueryParams{Consistency: LocalQuorum, PageSize: 5000, Timestamp: 1, HasTimestamp: true}}
		for range n {
			x.Params.Values = append(x.Params.Values, BytesValue(make([]byte, 100)))
		}
		body, _ := x.AppendBody(nil, V4)
		b.Run(fmt.Sprintf("values=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeRequest(OpExecute, V4, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecompress measures decompressing a page of rows.
func BenchmarkDecompress(b *testing.B) {
	for _, n := range []int{100, 5000} {
		body, _ := benchRows(n).AppendBody(nil, V4)
		for _, c := range Compressors {
			z := c.Compress(nil, body)
			b.Run(fmt.Sprintf("rows=%d/%s", n, c.Name()), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportMetric(float64(len(body))/float64(len(z)), "ratio")
				var out []byte
				for b.Loop() {
					var err error
					if out, err = c.Decompress(out[:0], z, len(body)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAppendSegments measures framing a write's envelopes in v5
// segments into a reused buffer, the writer's per-write work: pages of
// small answers packed together, and one answer larger than a segment.
func BenchmarkAppendSegments(b *testing.B) {
	for _, n := range []int{1, 100, 5000} {
		env, err := AppendFrame(nil, Header{Version: V5, Response: true}, nil, benchRows(n), nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, lz4 := range []bool{false, true} {
			b.Run(fmt.Sprintf("rows=%d/lz4=%v", n, lz4), func(b *testing.B) {
				out, _ := AppendSegments(nil, env, lz4)
				b.SetBytes(int64(len(env)))
				b.ReportAllocs()
				b.ReportMetric(float64(len(out))/float64(len(env)), "out/in")
				for b.Loop() {
					out, _ = AppendSegments(out[:0], env, lz4)
				}
			})
		}
	}
}

// BenchmarkSegmentReader measures reading envelopes back from segments.
func BenchmarkSegmentReader(b *testing.B) {
	env, _ := AppendFrame(nil, Header{Version: V5, Response: true}, nil, benchRows(100), nil)
	for _, lz4 := range []bool{false, true} {
		b.Run(fmt.Sprintf("lz4=%v", lz4), func(b *testing.B) {
			segs, _ := AppendSegments(nil, bytes.Repeat(env, 10), lz4)
			b.SetBytes(int64(10 * len(env)))
			b.ReportAllocs()
			r := bytes.NewReader(segs)
			sr := NewSegmentReader(r, lz4)
			buf := make([]byte, 64<<10)
			for b.Loop() {
				r.Reset(segs)
				for {
					if _, err := sr.Read(buf); err != nil {
						break
					}
				}
				sr.err = nil
			}
		})
	}
}
