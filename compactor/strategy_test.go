package compactor

import (
	"errors"
	"math"
	"testing"
)

func TestParseStrategy(t *testing.T) {
	def := DefaultStrategy()
	with := func(f func(*Strategy)) Strategy {
		s := def
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		opts map[string]string
		want Strategy
	}{
		{"nil", nil, def},
		{"cassandra default", map[string]string{"class": "SizeTieredCompactionStrategy", "max_threshold": "32", "min_threshold": "4"}, def},
		{"ucs", map[string]string{"class": "UnifiedCompactionStrategy", "scaling_parameters": "T4", "target_sstable_size": "256MiB"},
			with(func(s *Strategy) { s.Fanout, s.TargetSize = 4, 256<<20 })},
		{"ucs list and N", map[string]string{"scaling_parameters": "N, L8", "target_sstable_size": "1GiB"},
			with(func(s *Strategy) { s.Fanout, s.TargetSize = 2, 1<<30 })},
		{"ucs leveled", map[string]string{"scaling_parameters": "L10"}, with(func(s *Strategy) { s.Fanout = 10 })},
		{"lcs", map[string]string{"class": "LeveledCompactionStrategy", "sstable_size_in_mb": "160", "fanout_size": "8"},
			with(func(s *Strategy) { s.TargetSize, s.Fanout = 160<<20, 8 })},
		{"ucs key wins", map[string]string{"sstable_size_in_mb": "160", "target_sstable_size": "100MB", "scaling_parameters": "T3", "fanout_size": "8"},
			with(func(s *Strategy) { s.TargetSize, s.Fanout = 100e6, 3 })},
		{"sediment keys", map[string]string{"l0_compaction_threshold": "6", "min_threshold": "2", "l0_limit": "30",
			"base_level_size": "10 MiB", "max_compaction_bytes": "4000000000"},
			with(func(s *Strategy) {
				s.L0Threshold, s.L0Limit, s.BaseLevelSize, s.MaxInputBytes = 6, 30, 10<<20, 4e9
			})},
		{"decimal and bytes", map[string]string{"target_sstable_size": "5kB", "base_level_size": "12345B"},
			with(func(s *Strategy) { s.TargetSize, s.BaseLevelSize = 5000, 12345 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStrategy(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseStrategyErrors(t *testing.T) {
	for _, opts := range []map[string]string{
		{"target_sstable_size": "big"},
		{"target_sstable_size": "0MiB"},
		{"target_sstable_size": "-5"},
		{"target_sstable_size": "9999999TiB"},
		{"sstable_size_in_mb": "x"},
		{"sstable_size_in_mb": "99999999999999999"},
		{"scaling_parameters": "X4"},
		{"scaling_parameters": "T"},
		{"scaling_parameters": "T1"},  // fanout < 2
		{"scaling_parameters": "T-4"}, // negative
		{"scaling_parameters": ""},
		{"fanout_size": "1"},
		{"min_threshold": "1"},
		{"l0_compaction_threshold": "abc"},
		{"l0_limit": "4"}, // not above the threshold
		{"l0_limit": "0"},
		{"base_level_size": ""},
		{"max_compaction_bytes": "1.5GiB"},
	} {
		if s, err := ParseStrategy(opts); !errors.Is(err, ErrInvalidStrategy) {
			t.Errorf("ParseStrategy(%v) = %+v, %v; want ErrInvalidStrategy", opts, s, err)
		}
	}
}

func TestLevelTarget(t *testing.T) {
	s := Strategy{BaseLevelSize: 100, Fanout: 10}
	for l, want := range map[int]int64{1: 100, 2: 1000, 3: 10000, 5: 1000000, NumLevels - 1: math.MaxInt64} {
		if got := s.LevelTarget(l); got != want {
			t.Errorf("LevelTarget(%d) = %d, want %d", l, got, want)
		}
	}
	huge := Strategy{BaseLevelSize: math.MaxInt64 / 2, Fanout: 10}
	if got := huge.LevelTarget(3); got != math.MaxInt64 {
		t.Errorf("overflowing target = %d, want MaxInt64", got)
	}
}

func FuzzParseStrategy(f *testing.F) {
	f.Add("target_sstable_size", "256MiB", "scaling_parameters", "T4")
	f.Add("sstable_size_in_mb", "160", "fanout_size", "10")
	f.Add("l0_limit", "3", "l0_compaction_threshold", "2")
	f.Add("max_compaction_bytes", "9223372036854775807B", "base_level_size", "8EiB")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		s, err := ParseStrategy(map[string]string{k1: v1, k2: v2})
		if err != nil {
			if !errors.Is(err, ErrInvalidStrategy) {
				t.Fatalf("error %v is not ErrInvalidStrategy", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed strategy %+v is invalid: %v", s, err)
		}
	})
}
