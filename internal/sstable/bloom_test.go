package sstable

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// TestBloomFPRate checks that the measured false-positive rate of filters
// built by the writer is near the theoretical rate.
func TestBloomFPRate(t *testing.T) {
	const keys, probes = 20000, 100000
	for _, bits := range []int{4, 10, 16} {
		t.Run(fmt.Sprintf("bits=%d", bits), func(t *testing.T) {
			var es []entry
			for i := range keys {
				es = append(es, entry{key: binary.BigEndian.AppendUint64(nil, uint64(2*i))})
			}
			data, props := writeTable(t, es, WriterOptions{BloomBitsPerKey: bits, BlockSize: 1 << 16})
			if props.FilterSize > uint64(keys*bits/8+64) {
				t.Fatalf("filter of %d bytes for %d keys at %d bits", props.FilterSize, keys, bits)
			}
			r := openTable(t, data, ReaderOptions{})
			for _, e := range es {
				if !r.MayContain(e.key) {
					t.Fatalf("false negative for %x", e.key)
				}
			}
			fp := 0
			for i := range probes {
				if r.MayContain(binary.BigEndian.AppendUint64(nil, uint64(2*i+1))) {
					fp++
				}
			}
			got, want := float64(fp)/probes, BloomFPRate(bits)
			t.Logf("false-positive rate %.4f, expected %.4f", got, want)
			// Allow four standard deviations of binomial noise, at least 10%.
			if tol := max(0.1*want, 4*math.Sqrt(want/probes)); math.Abs(got-want) > tol {
				t.Fatalf("false-positive rate %.4f, expected %.4f", got, want)
			}
		})
	}
}

func TestBloomCorrupt(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {0xff, 0}, {0xff, 31}} {
		if _, err := decodeBloom(b); err == nil {
			t.Errorf("decodeBloom(%x) succeeded", b)
		}
	}
}
