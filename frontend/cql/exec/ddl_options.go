package exec

import (
	"encoding/hex"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/manifest"
)

// Table options.
//
// Every option Cassandra 4.0 accepts in CREATE and ALTER TABLE is validated
// with Cassandra's messages, stored in the manifest and shown by
// system_schema.tables and DESCRIBE. Sediment acts on default_time_to_live,
// gc_grace_seconds and compaction; the others describe Cassandra's storage
// and read path and are kept so that schemas round-trip. The obsolete
// read_repair_chance and dclocal_read_repair_chance are accepted and
// ignored, as Cassandra 4.0 does.

// maxTTL is Cassandra's Attributes.MAX_TTL: 20 years.
const maxTTL = 630720000

// minBloomFilterFPChance is Cassandra's
// BloomCalculations.minSupportedBloomFilterFpChance().
const minBloomFilterFPChance = 6.71e-05

// The packages of compaction strategies and compressors, which Cassandra
// adds to a short class name. Sediment stores classes by short name.
// Whatever the class, Sediment compacts with its own leveled strategy,
// which reads the options it knows (compactor.ParseStrategy).
const (
	compactionPackage  = "org.apache.cassandra.db.compaction."
	compressionPackage = "org.apache.cassandra.io.compress."
)

// applyTableProps applies WITH options to o and checks the result as
// Cassandra's TableParams.validate does. counter says the table has counter
// columns.
func applyTableProps(o *manifest.TableOptions, props []ast.Property, counter bool) error {
	if err := checkDuplicates(props); err != nil {
		return err
	}
	for _, p := range props {
		if err := applyTableProp(o, p, counter); err != nil {
			return err
		}
	}
	switch crc := crcCheckChance(*o); {
	case o.BloomFilterFPChance <= minBloomFilterFPChance || o.BloomFilterFPChance > 1:
		return configf("bloom_filter_fp_chance must be larger than %s and less than or equal to 1.0 (got %s)",
			javaDouble(minBloomFilterFPChance), javaDouble(o.BloomFilterFPChance))
	case crc < 0 || crc > 1:
		return configf("crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got %s)", javaDouble(crc))
	case o.MinIndexInterval < 1:
		return configf("min_index_interval must be greater than or equal to 1 (got %d)", o.MinIndexInterval)
	case o.MaxIndexInterval < o.MinIndexInterval:
		return configf("max_index_interval must be greater than or equal to min_index_interval (%d) (got %d)", o.MinIndexInterval, o.MaxIndexInterval)
	case o.MemtableFlushPeriod < 0:
		return configf("memtable_flush_period_in_ms must be greater than or equal to 0 (got %d)", o.MemtableFlushPeriod)
	}
	return nil
}

func applyTableProp(o *manifest.TableOptions, p ast.Property, counter bool) error {
	switch p.Name {
	case "default_time_to_live":
		n, err := propInt(p)
		if err != nil {
			return err
		}
		if n < 0 {
			return configf("default_time_to_live must be greater than or equal to 0 (got %d)", n)
		}
		if n > maxTTL {
			return configf("default_time_to_live must be less than or equal to %d (got %d)", maxTTL, n)
		}
		if n > 0 && counter {
			return invalidf("Cannot set default_time_to_live on a table with counters")
		}
		o.DefaultTTL = int32(n)
	case "gc_grace_seconds":
		n, err := propInt(p)
		if err != nil {
			return err
		}
		if n < 0 {
			return configf("gc_grace_seconds must be greater than or equal to 0 (got %d)", n)
		}
		o.GCGraceSeconds = int32(n)
	case "comment":
		s, err := propString(p)
		if err != nil {
			return err
		}
		o.Comment = s
	case "compaction":
		m, err := propMap(p)
		if err != nil {
			return err
		}
		if o.Compaction, err = validCompaction(m); err != nil {
			return err
		}
	case "compression":
		m, err := propMap(p)
		if err != nil {
			return err
		}
		if o.Compression, err = validCompression(m); err != nil {
			return err
		}
	case "caching":
		m, err := propMap(p)
		if err != nil {
			return err
		}
		if o.Caching, err = validCaching(m); err != nil {
			return err
		}
	case "extensions":
		m, err := propMap(p)
		if err != nil {
			return err
		}
		o.Extensions = extensionsOf(m)
	case "dclocal_read_repair_chance", "read_repair_chance":
		// Obsolete since 4.0; accepted and ignored, as Cassandra does.
		if _, err := propDouble(p); err != nil {
			return err
		}
	case "bloom_filter_fp_chance":
		f, err := propDouble(p)
		if err != nil {
			return err
		}
		o.BloomFilterFPChance = f
	case "crc_check_chance":
		f, err := propDouble(p)
		if err != nil {
			return err
		}
		o.CRCCheckChance = &f
	case "max_index_interval", "min_index_interval", "memtable_flush_period_in_ms":
		n, err := propInt(p)
		if err != nil {
			return err
		}
		switch p.Name {
		case "max_index_interval":
			o.MaxIndexInterval = int32(n)
		case "min_index_interval":
			o.MinIndexInterval = int32(n)
		default:
			o.MemtableFlushPeriod = int32(n)
		}
	case "cdc":
		b, err := propBool(p)
		if err != nil {
			return err
		}
		o.CDC = b
	case "speculative_retry", "additional_write_policy":
		s, err := propString(p)
		if err != nil {
			return err
		}
		policy, err := speculativeRetry(s)
		if err != nil {
			return err
		}
		if p.Name == "speculative_retry" {
			o.SpeculativeRetry = policy
		} else {
			o.AdditionalWritePolicy = policy
		}
	case "read_repair":
		s, err := propString(p)
		if err != nil {
			return err
		}
		switch up := strings.ToUpper(s); up {
		case "BLOCKING", "NONE":
			o.ReadRepair = up
		default:
			// Cassandra's ReadRepairStrategy.valueOf fails so.
			return configf("No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.%s", up)
		}
	case "id":
		return configf("Cannot alter table id.")
	default:
		return syntaxf("Unknown property '%s'", p.Name)
	}
	return nil
}

// crcCheckChance is o's crc_check_chance, the default when unset.
func crcCheckChance(o manifest.TableOptions) float64 {
	if o.CRCCheckChance == nil {
		return manifest.DefaultCRCCheckChance
	}
	return *o.CRCCheckChance
}

// validCaching checks a caching map and returns it normalized as
// Cassandra's CachingParams.asMap: both keys, upper-case values, 0 rows as
// NONE. A missing 'keys' means NONE, as in Cassandra.
func validCaching(m map[string]string) (map[string]string, error) {
	out := map[string]string{"keys": "NONE", "rows_per_partition": "NONE"}
	var rest []string
	for k, v := range m {
		switch k {
		case "keys":
			up := strings.ToUpper(v)
			if up != "ALL" && up != "NONE" {
				return nil, configf("Invalid value '%s' for caching sub-option 'keys': only 'ALL' and 'NONE' are allowed", v)
			}
			out[k] = up
		case "rows_per_partition":
			up := strings.ToUpper(v)
			if up == "ALL" || up == "NONE" {
				out[k] = up
				break
			}
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil || v[0] == '+' {
				return nil, configf("Invalid value '%s' for caching sub-option 'rows_per_partition': only 'ALL', 'NONE', and integer values are allowed", v)
			}
			switch n {
			case 0:
				out[k] = "NONE"
			case math.MaxInt32:
				out[k] = "ALL"
			default:
				out[k] = strconv.FormatUint(n, 10)
			}
		default:
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		slices.Sort(rest)
		return nil, configf("Invalid caching sub-options [%s]: only 'keys' and 'rows_per_partition' are allowed", strings.Join(rest, ", "))
	}
	return out, nil
}

// extensionsOf is the extensions map<text, blob>: a value written as a blob
// literal (0x...) is its bytes, any other value its text's bytes.
func extensionsOf(m map[string]string) map[string][]byte {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		if h, ok := strings.CutPrefix(strings.ToLower(v), "0x"); ok {
			if b, err := hex.DecodeString(h); err == nil {
				out[k] = b
				continue
			}
		}
		out[k] = []byte(v)
	}
	return out
}

// Speculative retry policies, as Cassandra's SpeculativeRetryPolicy parses
// them (case-insensitively): ALWAYS, NEVER, a percentile (99p,
// 99.5PERCENTILE), a fixed delay (50ms) or MIN/MAX of a percentile and a
// delay.
var (
	percentilePolicy = regexp.MustCompile(`(?i)^([0-9.]+)\s*(p|percentile)$`)
	fixedPolicy      = regexp.MustCompile(`(?i)^([0-9.]+)\s*ms$`)
	hybridPolicy     = regexp.MustCompile(`(?i)^(min|max)\(\s*([^,\s]+)\s*,\s*([^,\s)]+)\s*\)$`)
)

// speculativeRetry validates a policy and returns Cassandra's normalized
// form of it, as system_schema shows it.
func speculativeRetry(s string) (string, error) {
	invalid := configf("Invalid value %s for option 'speculative_retry'", s)
	switch up := strings.ToUpper(s); {
	case up == "ALWAYS" || up == "NEVER":
		return up, nil
	case percentilePolicy.MatchString(s):
		f, err := strconv.ParseFloat(percentilePolicy.FindStringSubmatch(s)[1], 64)
		if err != nil {
			return "", invalid
		}
		if f <= 0 || f >= 100 {
			return "", configf("Invalid value %s for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)", s)
		}
		// Cassandra rounds to four decimals, which can turn a valid
		// percentile into 100p or 0p that it refuses when read back; the
		// shortest exact form keeps every stored policy valid.
		return strconv.FormatFloat(f, 'f', -1, 64) + "p", nil
	case fixedPolicy.MatchString(s):
		f, err := strconv.ParseFloat(fixedPolicy.FindStringSubmatch(s)[1], 64)
		if err != nil || f > math.MaxInt32 {
			return "", invalid
		}
		return strconv.FormatInt(int64(f), 10) + "ms", nil
	case hybridPolicy.MatchString(s):
		m := hybridPolicy.FindStringSubmatch(s)
		a, errA := speculativeRetry(m[2])
		b, errB := speculativeRetry(m[3])
		if errA != nil || errB != nil {
			return "", invalid
		}
		if strings.HasSuffix(a, "ms") {
			a, b = b, a
		}
		if !strings.HasSuffix(a, "p") || !strings.HasSuffix(b, "ms") {
			return "", invalid
		}
		return strings.ToUpper(m[1]) + "(" + a + "," + b + ")", nil
	}
	return "", invalid
}

// javaDouble formats f as Java's Double.toString does, which Cassandra's
// messages and DESCRIBE use: 0.01, 1.0, 6.71E-5.
func javaDouble(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-3 || a >= 1e7) {
		s := strconv.FormatFloat(f, 'E', -1, 64) // 6.71E-05
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		n, _ := strconv.Atoi(exp)
		return mant + "E" + strconv.Itoa(n)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".NI") {
		s += ".0"
	}
	return s
}

// Compaction sub-options each strategy's validateOptions understands in
// Cassandra 4 (UCS: 5). Every class also takes the common ones and
// Sediment's own planner keys (compactor.ParseStrategy).
var (
	commonCompactionOptions = []string{
		"enabled", "min_threshold", "max_threshold", "provide_overlapping_tombstones",
		"tombstone_threshold", "tombstone_compaction_interval", "unchecked_tombstone_compaction",
		"log_all", "only_purge_repaired_tombstones",
		"l0_compaction_threshold", "l0_limit", "base_level_size", "max_compaction_bytes",
	}
	stcsOptions              = []string{"min_sstable_size", "bucket_low", "bucket_high"}
	strategyCompactionOption = map[string][]string{
		"SizeTieredCompactionStrategy": stcsOptions,
		"LeveledCompactionStrategy":    append([]string{"sstable_size_in_mb", "fanout_size", "single_sstable_uplevel"}, stcsOptions...),
		"TimeWindowCompactionStrategy": append([]string{"compaction_window_unit", "compaction_window_size", "timestamp_resolution",
			"expired_sstable_check_frequency_seconds", "unsafe_aggressive_sstable_expiration"}, stcsOptions...),
		"UnifiedCompactionStrategy": {"scaling_parameters", "target_sstable_size", "base_shard_count", "min_sstable_size",
			"flush_size_override", "max_sstables_to_compact", "expired_sstable_check_frequency_seconds",
			"unsafe_aggressive_sstable_expiration", "overlap_inclusion_method", "sstable_growth"},
	}
)

// validCompaction checks a compaction map as Cassandra's CompactionParams
// does and returns it with the class by short name (shown with its
// package). Cassandra's asMap also adds min_threshold and max_threshold
// with their defaults (4 and 32) to the strategies that take them; Sediment
// shows only the options given (see docs/cql.md).
func validCompaction(m map[string]string) (map[string]string, error) {
	class, ok := m["class"]
	if !ok {
		return nil, configf("Missing sub-option 'class' for the 'compaction' option")
	}
	short := strings.TrimPrefix(class, compactionPackage)
	known, ok := strategyCompactionOption[short]
	if !ok {
		if !strings.Contains(class, ".") {
			class = compactionPackage + class
		}
		return nil, configf("Unable to find compaction strategy class '%s'", class)
	}
	if err := compactionValues(short, m); err != nil {
		return nil, err
	}
	out := maps.Clone(m)
	delete(out, "class")
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if !slices.Contains(known, k) && !slices.Contains(commonCompactionOptions, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		return nil, configf("Properties specified [%s] are not understood by %s", strings.Join(unknown, ", "), short)
	}
	if short != "UnifiedCompactionStrategy" {
		thresholds := map[string]int64{"min_threshold": 4, "max_threshold": 32}
		for _, k := range []string{"min_threshold", "max_threshold"} {
			v, ok := out[k]
			if !ok {
				continue
			}
			// StringUtils.isNumeric: digits only, no sign.
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || strings.TrimLeft(v, "0123456789") != "" {
				return nil, configf("Invalid value %s for '%s' compaction sub-option - must be an integer", v, k)
			}
			thresholds[k] = n
		}
		switch lo, hi := thresholds["min_threshold"], thresholds["max_threshold"]; {
		case lo <= 0 || hi <= 0:
			return nil, configf("Disabling compaction by setting compaction thresholds to 0 has been removed, set the compaction option 'enabled' to false instead.")
		case lo <= 1:
			return nil, configf("Min compaction threshold cannot be less than 2 (got %d)", lo)
		case lo > hi:
			return nil, configf("Min compaction threshold (got %d) cannot be greater than max compaction threshold (got %d)", lo, hi)
		}
	}
	if _, err := compactor.ParseStrategy(m); err != nil {
		return nil, configf("Invalid compaction options: %v", err)
	}
	out["class"] = short
	return out, nil
}

// compactionValues checks the values of the sub-options Cassandra 4's
// LeveledCompactionStrategy and SizeTieredCompactionStrategyOptions
// validate (the latter for the size-tiered, leveled and time-window
// strategies), with their messages.
func compactionValues(class string, m map[string]string) error {
	if err := commonCompactionValues(m); err != nil {
		return err
	}
	if class == "LeveledCompactionStrategy" {
		size, ok := m["sstable_size_in_mb"]
		if !ok {
			size = "1"
		}
		n, err := strconv.ParseInt(size, 10, 32)
		if err != nil {
			return configf("%s is not a parsable int (base10) for sstable_size_in_mb", size)
		}
		if n < 1 {
			return configf("sstable_size_in_mb must be larger than 0, but was %d", n)
		}
		if v, ok := m["fanout_size"]; ok {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				// Cassandra names the sstable size's text here.
				return configf("%s is not a parsable int (base10) for fanout_size", size)
			}
			if n < 1 {
				return configf("fanout_size must be larger than 0, but was %d", n)
			}
		}
	}
	if class == "UnifiedCompactionStrategy" {
		return nil
	}
	if v, ok := m["min_sstable_size"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return configf("%s is not a parsable int (base10) for min_sstable_size", v)
		}
		if n < 0 {
			return configf("min_sstable_size must be non negative: %d", n)
		}
	}
	bucket := func(key string, def float64) (float64, error) {
		v, ok := m[key]
		if !ok {
			return def, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, configf("%s is not a parsable float for %s", v, key)
		}
		return f, nil
	}
	low, err := bucket("bucket_low", 0.5)
	if err != nil {
		return err
	}
	high, err := bucket("bucket_high", 1.5)
	if err != nil {
		return err
	}
	if high <= low {
		return configf("bucket_high value (%s) is less than or equal to the bucket_low value (%s)", javaDouble(high), javaDouble(low))
	}
	return nil
}

// commonCompactionValues checks the sub-options every strategy takes as
// Cassandra's AbstractCompactionStrategy.validateOptions does, first of
// all, with its messages (Java's %f for the threshold).
func commonCompactionValues(m map[string]string) error {
	if v, ok := m["tombstone_threshold"]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
		if err != nil {
			return configf("%s is not a parsable int (base10) for tombstone_threshold", v)
		}
		if f < 0 {
			return configf("tombstone_threshold must be greater than 0, but was %f", float32(f))
		}
	}
	if v, ok := m["tombstone_compaction_interval"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return configf("%s is not a parsable int (base10) for tombstone_compaction_interval", v)
		}
		if n < 0 {
			return configf("tombstone_compaction_interval must be greater than 0, but was %d", n)
		}
	}
	isBool := func(v string) bool { return strings.EqualFold(v, "true") || strings.EqualFold(v, "false") }
	if v, ok := m["unchecked_tombstone_compaction"]; ok && !isBool(v) {
		return configf("'unchecked_tombstone_compaction' should be either 'true' or 'false', not '%s'", v)
	}
	if v, ok := m["log_all"]; ok && !isBool(v) {
		return configf("'log_all' should either be 'true' or 'false', not %s", v)
	}
	if v, ok := m["enabled"]; ok && !isBool(v) {
		return configf("enabled should either be 'true' or 'false', not %s", v)
	}
	return nil
}

// compressorOptions are the options each compressor accepts besides the
// common ones (its supportedOptions in Cassandra).
var compressorOptions = map[string][]string{
	"LZ4Compressor":     {"lz4_compressor_type", "lz4_high_compressor_level"},
	"ZstdCompressor":    {"compression_level"},
	"SnappyCompressor":  nil,
	"DeflateCompressor": nil,
	"NoopCompressor":    nil,
}

// zstdMinLevel and zstdMaxLevel bound ZstdCompressor's compression_level:
// zstd's minimum (negative, fastest) and maximum levels.
const (
	zstdMinLevel = -131072
	zstdMaxLevel = 22
)

// validCompression checks a compression map as Cassandra 4's
// CompressionParams.fromMap does and returns it as its asMap shows it: the
// class by short name (shown with its package), chunk_length_in_kb always
// present, or only enabled: false when compression is off.
func validCompression(m map[string]string) (map[string]string, error) {
	opts := maps.Clone(m)
	enabled := true
	if v, ok := opts["enabled"]; ok {
		enabled = strings.EqualFold(v, "true") // Java's Boolean.parseBoolean
		delete(opts, "enabled")
	}
	_, hasClass := opts["class"]
	_, hasOldClass := opts["sstable_compression"]
	if len(m) > 0 && enabled && !hasClass && !hasOldClass {
		return nil, configf("Missing sub-option 'class' for the 'compression' option.")
	}
	disabled := map[string]string{"enabled": "false"}
	if !enabled {
		if len(opts) > 0 {
			return nil, configf("If the 'enabled' option is set to false no other options must be specified")
		}
		return disabled, nil
	}
	class := opts["sstable_compression"]
	if hasClass {
		if hasOldClass {
			return nil, configf("The 'sstable_compression' option must not be used if the compression algorithm is already specified by the 'class' option")
		}
		if class = opts["class"]; class == "" {
			return nil, configf("The 'class' option must not be empty. To disable compression use 'enabled' : false")
		}
	}
	delete(opts, "class")
	delete(opts, "sstable_compression")

	chunk := "16"
	if _, ok := opts["chunk_length_in_kb"]; ok {
		if _, old := opts["chunk_length_kb"]; old {
			return nil, configf("The 'chunk_length_kb' option must not be used if the chunk length is already specified by the 'chunk_length_in_kb' option")
		}
	} else if v, ok := opts["chunk_length_kb"]; ok {
		opts["chunk_length_in_kb"] = v
	}
	delete(opts, "chunk_length_kb")
	var chunkKB int64
	v, chunkGiven := opts["chunk_length_in_kb"]
	if chunkGiven {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, configf("Invalid value for chunk_length_in_kb")
		}
		if n > math.MaxInt32/1024 {
			return nil, configf("Value of chunk_length_in_kb is too large (%d)", n)
		}
		chunkKB, chunk = n, strconv.FormatInt(n, 10)
		delete(opts, "chunk_length_in_kb")
	}
	var ratio string
	if v, ok := opts["min_compress_ratio"]; ok {
		// Cassandra fails with a server error on a ratio that is not a
		// number; a clear message serves better.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, configf("min_compress_ratio must be a number (got %s)", v)
		}
		if f != 0 && f < 1 {
			return nil, configf("min_compress_ratio can either be 0 or greater than or equal to 1")
		}
		delete(opts, "min_compress_ratio")
		if f != 0 { // asMap shows it only when not the default, 0
			ratio = javaDouble(f)
		}
	}
	if class == "" {
		// No class at all (compression = {}) turns compression off.
		if len(opts) > 0 {
			return nil, configf("Unknown compression options ([%s]) since no compression class found", strings.Join(slices.Sorted(maps.Keys(opts)), ", "))
		}
		return disabled, nil
	}
	short := strings.TrimPrefix(class, compressionPackage)
	supported, ok := compressorOptions[short]
	if !ok {
		if !strings.Contains(class, ".") {
			class = compressionPackage + class
		}
		return nil, configf("Could not create Compression for type %s", class)
	}
	if err := compressorOption(short, opts); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		switch {
		case k == "crc_check_chance", slices.Contains(supported, k):
		default:
			return nil, configf("Unknown compression options %s", k)
		}
	}
	if chunkGiven {
		// CompressionParams.validate, after the compressor is made.
		switch {
		case chunkKB <= 0:
			return nil, configf("Invalid negative or null chunk_length_in_kb")
		case chunkKB&(chunkKB-1) != 0:
			return nil, configf("chunk_length_in_kb must be a power of 2")
		}
	}
	opts["class"] = short
	opts["chunk_length_in_kb"] = chunk
	if ratio != "" {
		opts["min_compress_ratio"] = ratio
	}
	return opts, nil
}

// compressorOption checks the values of a compressor's own options, as the
// compressor's create does.
func compressorOption(class string, opts map[string]string) error {
	switch class {
	case "LZ4Compressor":
		if t, ok := opts["lz4_compressor_type"]; ok && t != "fast" && t != "high" {
			return configf("Invalid compressor type '%s' specified for LZ4 parameter 'lz4_compressor_type'. Valid options are [high, fast].", t)
		}
		if l, ok := opts["lz4_high_compressor_level"]; ok {
			if n, err := strconv.ParseInt(l, 10, 32); err != nil || n < 1 || n > 17 {
				return configf("Invalid value [%s] for parameter 'lz4_high_compressor_level'. Value must be between 1 and 17.", l)
			}
		}
	case "ZstdCompressor":
		if l, ok := opts["compression_level"]; ok {
			n, err := strconv.ParseInt(l, 10, 32)
			if err != nil {
				return configf("ZstdCompressor.create() threw an error: java.lang.NumberFormatException For input string: \"%s\"", l)
			}
			if n < zstdMinLevel || n > zstdMaxLevel {
				return configf("ZstdCompressor.create() threw an error: java.lang.IllegalArgumentException compression_level=%d is invalid", n)
			}
		}
	}
	return nil
}

// optionsCQL are a table's options as DESCRIBE writes them, in Cassandra
// 4.0's (alphabetical) order, with the values system_schema.tables shows.
func optionsCQL(o manifest.TableOptions) []string {
	ext := make([]string, 0, len(o.Extensions))
	for _, k := range slices.Sorted(maps.Keys(o.Extensions)) {
		ext = append(ext, cqlString(k)+": 0x"+hex.EncodeToString(o.Extensions[k]))
	}
	return []string{
		"additional_write_policy = " + cqlString(o.AdditionalWritePolicy),
		"bloom_filter_fp_chance = " + javaDouble(o.BloomFilterFPChance),
		"caching = " + cqlMap(o.Caching),
		"cdc = " + strconv.FormatBool(o.CDC),
		"comment = " + cqlString(o.Comment),
		"compaction = " + cqlMap(withPackage(o.Compaction, compactionPackage)),
		"compression = " + cqlMap(withPackage(o.Compression, compressionPackage)),
		"crc_check_chance = " + javaDouble(crcCheckChance(o)),
		"default_time_to_live = " + strconv.Itoa(int(o.DefaultTTL)),
		"extensions = {" + strings.Join(ext, ", ") + "}",
		"gc_grace_seconds = " + strconv.Itoa(int(o.GCGraceSeconds)),
		"max_index_interval = " + strconv.Itoa(int(o.MaxIndexInterval)),
		"memtable_flush_period_in_ms = " + strconv.Itoa(int(o.MemtableFlushPeriod)),
		"min_index_interval = " + strconv.Itoa(int(o.MinIndexInterval)),
		"read_repair = " + cqlString(o.ReadRepair),
		"speculative_retry = " + cqlString(o.SpeculativeRetry),
	}
}

// withPackage returns an option map with its class as Cassandra shows it:
// with its package.
func withPackage(m map[string]string, pkg string) map[string]string {
	out := maps.Clone(m)
	if c, ok := out["class"]; ok && !strings.Contains(c, ".") {
		out["class"] = pkg + c
	}
	return out
}
