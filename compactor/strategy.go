package compactor

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInvalidStrategy marks compaction options that cannot be parsed.
var ErrInvalidStrategy = errors.New("compaction: invalid strategy options")

// NumLevels is the number of levels, L0 included. The last level has no
// size target: data that reaches it stays there.
const NumLevels = 7

// Strategy is a table's leveled compaction strategy, per token range: L0
// holds the overlapping flushes, L1 to L6 non-overlapping SSTables, each
// level Fanout times the size of the one above. See docs/compaction.md.
type Strategy struct {
	// TargetSize is the size at which a compaction output ends.
	TargetSize int64
	// Fanout is the size ratio of consecutive levels.
	Fanout int
	// L0Threshold is the number of L0 SSTables of a range at which they
	// are compacted into L1.
	L0Threshold int
	// L0Limit is the number of L0 SSTables of a range at which flushes
	// should stop (L0Pressure reaches 1).
	L0Limit int
	// BaseLevelSize is L1's target size per range; Ln's is
	// BaseLevelSize·Fanout^(n-1).
	BaseLevelSize int64
	// MaxInputBytes bounds a plan's inputs, unless a single upper-level
	// SSTable with what it overlaps in the next level exceeds it alone.
	MaxInputBytes int64
}

// Defaults of the strategy's options.
const (
	DefaultTargetSize    = 256 << 20
	DefaultFanout        = 10
	DefaultL0Threshold   = 4
	DefaultL0Limit       = 20
	DefaultBaseLevelSize = 64 << 20
	DefaultMaxInputBytes = 8 * DefaultTargetSize
)

// DefaultStrategy returns the strategy of a table whose compaction options
// set nothing Sediment reads.
func DefaultStrategy() Strategy {
	return Strategy{
		TargetSize:    DefaultTargetSize,
		Fanout:        DefaultFanout,
		L0Threshold:   DefaultL0Threshold,
		L0Limit:       DefaultL0Limit,
		BaseLevelSize: DefaultBaseLevelSize,
		MaxInputBytes: DefaultMaxInputBytes,
	}
}

// ParseStrategy reads a table's compaction options (manifest
// TableOptions.Compaction) over DefaultStrategy. Whatever the class, it
// reads these keys and ignores the others:
//
//	key                      meaning                         example
//	target_sstable_size      TargetSize (UCS)                '256MiB'
//	sstable_size_in_mb       TargetSize in MiB (LCS)         '160'
//	scaling_parameters       Fanout from the first of a      'T4', 'L10', 'N' (= 2)
//	                         UCS list, T or L alike
//	fanout_size              Fanout (LCS)                    '10'
//	min_threshold            L0Threshold (STCS)              '4'
//	l0_compaction_threshold  L0Threshold                     '4'
//	l0_limit                 L0Limit                         '20'
//	base_level_size          BaseLevelSize                   '64MiB'
//	max_compaction_bytes     MaxInputBytes                   '2GiB'
//
// Sizes are bytes with an optional unit: B, KiB, MiB, GiB, TiB (binary) or
// kB, KB, MB, GB, TB (decimal). Where two keys set one field, the
// Sediment-specific or UCS key wins.
func ParseStrategy(opts map[string]string) (Strategy, error) {
	s := DefaultStrategy()
	// Each step reads the first of its keys that is set, by priority.
	steps := []struct {
		keys  []string
		parse func(key, v string) error
	}{
		{[]string{"target_sstable_size", "sstable_size_in_mb"}, func(k, v string) (err error) {
			if k == "sstable_size_in_mb" {
				v += "MiB"
			}
			s.TargetSize, err = parseSize(v)
			return err
		}},
		{[]string{"scaling_parameters", "fanout_size"}, func(k, v string) (err error) {
			if k == "scaling_parameters" {
				s.Fanout, err = parseScaling(v)
			} else {
				s.Fanout, err = parseCount(v)
			}
			return err
		}},
		{[]string{"l0_compaction_threshold", "min_threshold"}, func(_, v string) (err error) {
			s.L0Threshold, err = parseCount(v)
			return err
		}},
		{[]string{"l0_limit"}, func(_, v string) (err error) {
			s.L0Limit, err = parseCount(v)
			return err
		}},
		{[]string{"base_level_size"}, func(_, v string) (err error) {
			s.BaseLevelSize, err = parseSize(v)
			return err
		}},
		{[]string{"max_compaction_bytes"}, func(_, v string) (err error) {
			s.MaxInputBytes, err = parseSize(v)
			return err
		}},
	}
	for _, st := range steps {
		for _, k := range st.keys {
			if v, ok := opts[k]; ok {
				if err := st.parse(k, v); err != nil {
					return Strategy{}, fmt.Errorf("%w: %s = %q: %v", ErrInvalidStrategy, k, v, err)
				}
				break
			}
		}
	}
	if err := s.Validate(); err != nil {
		return Strategy{}, err
	}
	return s, nil
}

// Validate checks that s can plan.
func (s Strategy) Validate() error {
	switch {
	case s.TargetSize <= 0:
		return fmt.Errorf("%w: target size %d", ErrInvalidStrategy, s.TargetSize)
	case s.Fanout < 2:
		return fmt.Errorf("%w: fanout %d (want 2 or more)", ErrInvalidStrategy, s.Fanout)
	case s.L0Threshold < 2:
		return fmt.Errorf("%w: L0 threshold %d (want 2 or more)", ErrInvalidStrategy, s.L0Threshold)
	case s.L0Limit <= s.L0Threshold:
		return fmt.Errorf("%w: L0 limit %d must exceed the L0 threshold %d", ErrInvalidStrategy, s.L0Limit, s.L0Threshold)
	case s.BaseLevelSize <= 0:
		return fmt.Errorf("%w: base level size %d", ErrInvalidStrategy, s.BaseLevelSize)
	case s.MaxInputBytes <= 0:
		return fmt.Errorf("%w: max compaction bytes %d", ErrInvalidStrategy, s.MaxInputBytes)
	}
	return nil
}

// LevelTarget returns the target size of level n per range (n ≥ 1), or
// math.MaxInt64 for the last level, which has none.
func (s Strategy) LevelTarget(n int) int64 {
	if n >= NumLevels-1 {
		return math.MaxInt64
	}
	t := s.BaseLevelSize
	for range n - 1 {
		if t > math.MaxInt64/int64(s.Fanout) {
			return math.MaxInt64
		}
		t *= int64(s.Fanout)
	}
	return t
}

// parseScaling reads the fanout from a UCS scaling parameter list: its
// first entry, Tn or Ln, or N for 2. Sediment's levels above L0 are always
// leveled, so T and L give the same fanout.
func parseScaling(v string) (int, error) {
	first, _, _ := strings.Cut(v, ",")
	first = strings.TrimSpace(first)
	switch {
	case strings.EqualFold(first, "N"):
		return 2, nil
	case len(first) > 1 && strings.ContainsAny(first[:1], "TtLl"):
		return parseCount(first[1:])
	}
	return 0, errors.New("want Tn, Ln or N")
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive integer")
	}
	return n, nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{ // longest suffixes first
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// parseSize reads a positive byte count with an optional unit.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want a positive size such as 256MiB")
	}
	return n * mult, nil
}
