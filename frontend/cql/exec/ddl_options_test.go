package exec

import (
	"maps"
	"strings"
	"testing"
)

func TestSpeculativeRetry(t *testing.T) {
	for in, want := range map[string]string{
		"99p": "99p", "99PERCENTILE": "99p", "95.5p": "95.5p", "99.99999p": "99.99999p", "0.5 p": "0.5p",
		"50ms": "50ms", "50MS": "50ms", "7.9ms": "7ms", "always": "ALWAYS", "Never": "NEVER",
		"min(99p,50ms)": "MIN(99p,50ms)", "MAX(20ms, 90p)": "MAX(90p,20ms)",
	} {
		if got, err := speculativeRetry(in); err != nil || got != want {
			t.Errorf("speculativeRetry(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "99", "p", "0p", "100p", "-1p", "1.2.3p", "99pp", "ms", "MIN(99p)", "MIN(1ms,2ms)", "MIN(1p,2p)", "AVG(99p,1ms)", "MIN(MIN(1p,1ms),1ms)"} {
		if got, err := speculativeRetry(in); err == nil {
			t.Errorf("speculativeRetry(%q) = %q, want an error", in, got)
		}
	}
}

// FuzzSpeculativeRetry: any text is accepted or refused without a panic,
// and an accepted policy's stored form is accepted as itself.
func FuzzSpeculativeRetry(f *testing.F) {
	for _, s := range []string{"99p", "95.5PERCENTILE", "50ms", "ALWAYS", "never", "MIN(99p,50ms)", "max(1ms , 2p)", "0.00001p", "1e3ms", "..p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, err := speculativeRetry(s)
		if err != nil {
			if !strings.Contains(err.Error(), "speculative_retry") {
				t.Fatalf("%q: error %v does not name the option", s, err)
			}
			return
		}
		if again, err := speculativeRetry(norm); err != nil || again != norm {
			t.Fatalf("%q stored as %q, which reads as %q, %v", s, norm, again, err)
		}
	})
}

func TestValidCaching(t *testing.T) {
	for _, tc := range []struct {
		in, want map[string]string
	}{
		{map[string]string{}, map[string]string{"keys": "NONE", "rows_per_partition": "NONE"}},
		{map[string]string{"keys": "all"}, map[string]string{"keys": "ALL", "rows_per_partition": "NONE"}},
		{map[string]string{"keys": "ALL", "rows_per_partition": "0"}, map[string]string{"keys": "ALL", "rows_per_partition": "NONE"}},
		{map[string]string{"rows_per_partition": "2147483647"}, map[string]string{"keys": "NONE", "rows_per_partition": "ALL"}},
		{map[string]string{"rows_per_partition": "12"}, map[string]string{"keys": "NONE", "rows_per_partition": "12"}},
	} {
		if got, err := validCaching(tc.in); err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("validCaching(%v) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []map[string]string{
		{"keys": "some"}, {"rows_per_partition": "-1"}, {"rows_per_partition": "+1"}, {"rows_per_partition": "2147483648"}, {"rows": "1"},
	} {
		if got, err := validCaching(in); err == nil {
			t.Errorf("validCaching(%v) = %v, want an error", in, got)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", 0.01: "0.01", 0.5: "0.5", 6.71e-05: "6.71E-5", 1e-7: "1.0E-7", 1.5: "1.5",
		0.001: "0.001", 1e7: "1.0E7", 123.25: "123.25", -0.5: "-0.5",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestExtensionsOf(t *testing.T) {
	got := extensionsOf(map[string]string{"a": "0x0A0b", "b": "text", "c": "0xzz"})
	if string(got["a"]) != "\x0a\x0b" || string(got["b"]) != "text" || string(got["c"]) != "0xzz" || len(got) != 3 {
		t.Errorf("extensionsOf: %q", got)
	}
	if extensionsOf(map[string]string{}) != nil {
		t.Error("an empty extensions map is not stored as nil")
	}
}

// FuzzTableOptionMaps: compaction, compression and replication maps from
// clients are accepted or refused without a panic, and what is stored
// reads back as itself (DESCRIBE's statement recreates the same options).
func FuzzTableOptionMaps(f *testing.F) {
	for _, seed := range [][5]string{
		{"LZ4Compressor", "chunk_length_in_kb", "64", "lz4_compressor_type", "high"},
		{"ZstdCompressor", "compression_level", "-5", "min_compress_ratio", "2"},
		{"", "enabled", "false", "", ""},
		{"SnappyCompressor", "chunk_length_kb", "032", "crc_check_chance", "0.5"},
		{"LeveledCompactionStrategy", "sstable_size_in_mb", "160", "min_threshold", "6"},
		{"SizeTieredCompactionStrategy", "max_threshold", "0", "bucket_high", "1.5"},
		{"NetworkTopologyStrategy", "replication_factor", "3", "dc2", "0"},
		{"SimpleStrategy", "replication_factor", "3/1", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3], seed[4])
	}
	f.Fuzz(func(t *testing.T, class, k1, v1, k2, v2 string) {
		m := map[string]string{}
		if class != "" {
			m["class"] = class
		}
		if k1 != "" {
			m[k1] = v1
		}
		if k2 != "" {
			m[k2] = v2
		}
		if out, err := validCompression(maps.Clone(m)); err == nil {
			if again, err := validCompression(withPackage(out, compressionPackage)); err != nil || !maps.Equal(again, out) {
				t.Fatalf("compression %v stored as %v, read back as %v, %v", m, out, again, err)
			}
		}
		if out, err := validCompaction(maps.Clone(m)); err == nil {
			if again, err := validCompaction(withPackage(out, compactionPackage)); err != nil || !maps.Equal(again, out) {
				t.Fatalf("compaction %v stored as %v, read back as %v, %v", m, out, again, err)
			}
		}
		if out, err := validReplication("ks", maps.Clone(m), nil, "datacenter1"); err == nil {
			if again, err := validReplication("ks", out, nil, "datacenter1"); err != nil || !maps.Equal(again, out) {
				t.Fatalf("replication %v stored as %v, read back as %v, %v", m, out, again, err)
			}
		}
	})
}
