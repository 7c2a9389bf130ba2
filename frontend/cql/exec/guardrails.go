package exec

import (
	"context"
	"flag"
	"fmt"
	"math"

	"github.com/sedimentdb/sediment/frontend/transport"
)

// Guardrails are the query guardrails of Cassandra 4.1's cassandra.yaml,
// under its names and with its messages (db/guardrails/Guardrails.java);
// a refusal is an Invalid error, as Cassandra's GuardrailViolatedException
// is, and a warning goes to the client with the answer. Negative turns a
// threshold off.
//
// Cassandra ships them off; Sediment's fail thresholds default to
// ScyllaDB's max_partition_key_restrictions_per_query and
// max_clustering_key_restrictions_per_query (100), because an IN list
// unchecked lets one statement of a few kilobytes ask for 10^8 keys.
type Guardrails struct {
	// PartitionKeysInSelectWarn and PartitionKeysInSelectFail bound the
	// partition keys a SELECT names (partition_keys_in_select_*).
	PartitionKeysInSelectWarn int `yaml:"partition_keys_in_select_warn_threshold"`
	PartitionKeysInSelectFail int `yaml:"partition_keys_in_select_fail_threshold"`
	// InSelectCartesianProductWarn and InSelectCartesianProductFail bound
	// the keys the IN restrictions of a SELECT's partition key, or of its
	// clustering columns, combine into (in_select_cartesian_product_*).
	InSelectCartesianProductWarn int `yaml:"in_select_cartesian_product_warn_threshold"`
	InSelectCartesianProductFail int `yaml:"in_select_cartesian_product_fail_threshold"`
	// MaxQueryTextSize bounds the text of a statement, in bytes, so that
	// the tokens and tree of a huge one are never built. Cassandra has
	// only its frame limit; 0 turns it off.
	MaxQueryTextSize int `yaml:"max_query_text_size"`
}

// RegisterFlags registers the guardrails' flags with their defaults in f
// under the prefix "cql.".
func (g *Guardrails) RegisterFlags(f *flag.FlagSet) {
	f.IntVar(&g.PartitionKeysInSelectWarn, "cql.partition-keys-in-select-warn-threshold", -1, "Partition keys a SELECT may name before its answer carries a warning; negative: never.")
	f.IntVar(&g.PartitionKeysInSelectFail, "cql.partition-keys-in-select-fail-threshold", 100, "Partition keys a SELECT may name before it is refused; negative: never.")
	f.IntVar(&g.InSelectCartesianProductWarn, "cql.in-select-cartesian-product-warn-threshold", -1, "Keys the IN restrictions of a SELECT's partition key or clustering columns may combine into before its answer carries a warning; negative: never.")
	f.IntVar(&g.MaxQueryTextSize, "cql.max-query-text-size", 1<<20, "Largest statement text in bytes; larger ones are refused (Invalid) before they are parsed; 0: only the frame limit applies.")
	f.IntVar(&g.InSelectCartesianProductFail, "cql.in-select-cartesian-product-fail-threshold", 100, "Keys the IN restrictions of a SELECT's partition key or clustering columns may combine into before it is refused; negative: never.")
}

// DefaultGuardrails returns the guardrails of the flags' defaults.
func DefaultGuardrails() Guardrails {
	var g Guardrails
	g.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	return g
}

// exceeds reports whether n is past threshold t, negative being off.
func exceeds(n, t int) bool { return t >= 0 && n > t }

// checkCartesianProduct guards the keys the IN values of a key's
// columns combine into; what is "partition key" or "clustering key".
func (g *Guardrails) checkCartesianProduct(ctx context.Context, what string, cols [][][]byte) error {
	n := productSize(cols)
	if err := g.refuseProduct(what, n); err != nil {
		return err
	}
	if exceeds(n, g.InSelectCartesianProductWarn) {
		transport.AddWarning(ctx, fmt.Sprintf("The cartesian product of the IN restrictions on %s produces %d values, this exceeds warning threshold of %d.", what, n, g.InSelectCartesianProductWarn))
	}
	return nil
}

// refuseProduct refuses n keys combined from IN values past the fail
// threshold.
func (g *Guardrails) refuseProduct(what string, n int) error {
	if exceeds(n, g.InSelectCartesianProductFail) {
		return invalidf("Aborting query because the cartesian product of the IN restrictions on %s produces %d values, this exceeds fail threshold of %d.", what, n, g.InSelectCartesianProductFail)
	}
	return nil
}

// checkPartitionKeys guards the partition keys a SELECT of table names.
func (g *Guardrails) checkPartitionKeys(ctx context.Context, table string, n int) error {
	if exceeds(n, g.PartitionKeysInSelectFail) {
		return invalidf("Aborting query with partition keys in IN clause on table %s, number of partition keys %d exceeds fail threshold of %d.", table, n, g.PartitionKeysInSelectFail)
	}
	if exceeds(n, g.PartitionKeysInSelectWarn) {
		transport.AddWarning(ctx, fmt.Sprintf("Query with partition keys in IN clause on table %s, with number of partition keys %d exceeds warning threshold of %d.", table, n, g.PartitionKeysInSelectWarn))
	}
	return nil
}

// productSize returns how many combinations product(cols) makes, without
// making them; it saturates at math.MaxInt.
func productSize(cols [][][]byte) int {
	n := 1
	for _, vals := range cols {
		if len(vals) == 0 {
			return 0
		}
		if n > math.MaxInt/len(vals) {
			return math.MaxInt
		}
		n *= len(vals)
	}
	return n
}
