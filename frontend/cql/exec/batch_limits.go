package exec

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/internal/model"
)

// Batch guardrails, as Cassandra 4's BatchStatement.verifyBatchSize and
// verifyBatchType: they look only at batches whose writes span more than
// one mutation (one keyspace and partition key), since a batch on one
// partition is the cheap, atomic case they want to encourage.
//
// The size counted is Cassandra's PartitionUpdate.dataSize: for every
// (non-static) row written, its clustering values plus, per cell, 16 bytes
// (timestamp, TTL, local deletion time) and the value and cell path, plus
// 12 bytes per collection column for its deletion time. A counter cell
// counts as an 8-byte value. Partition and range deletions and static rows
// count nothing.

// BatchLimits are the batch thresholds of cassandra.yaml, under the same
// names. Negative turns a check off.
type BatchLimits struct {
	// SizeWarn and SizeFail bound the data size (bytes) of a batch that
	// spans partitions (batch_size_warn_threshold, default 5 KiB, and
	// batch_size_fail_threshold, default 50 KiB): past the first the
	// answer carries a warning, past the second the batch is refused.
	SizeWarn int64 `yaml:"batch_size_warn_threshold"`
	SizeFail int64 `yaml:"batch_size_fail_threshold"`
	// UnloggedPartitionsWarn is how many partitions an UNLOGGED or COUNTER
	// batch may cover before its answer carries a warning
	// (unlogged_batch_across_partitions_warn_threshold, default 10).
	UnloggedPartitionsWarn int `yaml:"unlogged_batch_across_partitions_warn_threshold"`
}

// RegisterFlags registers the limits' flags with their defaults in f under
// the prefix "cql.".
func (l *BatchLimits) RegisterFlags(f *flag.FlagSet) {
	d := BatchLimits{}.withDefaults()
	f.Int64Var(&l.SizeWarn, "cql.batch-size-warn-threshold", d.SizeWarn, "Bytes of data in a batch spanning partitions past which its answer carries a warning; negative: never.")
	f.Int64Var(&l.SizeFail, "cql.batch-size-fail-threshold", d.SizeFail, "Bytes of data in a batch spanning partitions past which it is refused (Batch too large); negative: never.")
	f.IntVar(&l.UnloggedPartitionsWarn, "cql.unlogged-batch-across-partitions-warn-threshold", d.UnloggedPartitionsWarn, "Partitions an UNLOGGED or COUNTER batch may cover before its answer carries a warning; negative: never.")
}

func (l BatchLimits) withDefaults() BatchLimits {
	if l.SizeWarn == 0 {
		l.SizeWarn = 5 << 10
	}
	if l.SizeFail == 0 {
		l.SizeFail = 50 << 10
	}
	if l.UnloggedPartitionsWarn == 0 {
		l.UnloggedPartitionsWarn = 10
	}
	return l
}

// batchStats gathers what the guardrails need about a batch's writes.
type batchStats struct {
	// mutations are the distinct keyspace and partition key pairs;
	// partitions the distinct partition keys, whatever the table (as
	// Cassandra's set of DecoratedKey).
	mutations  map[string]struct{}
	partitions map[string]struct{}
	tables     map[string]struct{}
	size       int64
}

func newBatchStats() *batchStats {
	return &batchStats{mutations: map[string]struct{}{}, partitions: map[string]struct{}{}, tables: map[string]struct{}{}}
}

// addPartition counts what one statement writes to one partition.
func (b *batchStats) addPartition(p *partitionWrite) {
	b.touch(p.layout, p.pk)
	for _, r := range p.rows {
		b.size += clusteringSize(r.clustering) + rowDataSize(&r.row)
	}
}

// addCounters counts the increments of a COUNTER batch.
func (b *batchStats) addCounters(cs *counterSet) {
	for _, cp := range cs.order {
		b.touch(cp.layout, cp.pk)
		rows := map[string]bool{}
		for _, k := range cp.order {
			if k.row == "" {
				continue // the static row
			}
			b.size += 16 + 8
			if !rows[k.row] {
				rows[k.row] = true
				if ck, err := cp.layout.clusteringValues([]byte(k.row)); err == nil {
					b.size += clusteringSize(ck)
				}
			}
		}
	}
}

func (b *batchStats) touch(l *tableLayout, pk []byte) {
	b.mutations[l.keyspace+"\x00"+string(pk)] = struct{}{}
	b.partitions[string(pk)] = struct{}{}
	b.tables[ast.QuoteName(l.keyspace)+"."+ast.QuoteName(l.name())] = struct{}{}
}

func clusteringSize(ck [][]byte) int64 {
	var n int64
	for _, v := range ck {
		n += int64(len(v))
	}
	return n
}

// rowDataSize is Cassandra's data size of a row's columns: 16 bytes of
// times per cell with its value and path, and 12 more per complex
// (collection or user type) column.
func rowDataSize(r *model.Row) int64 {
	var n int64
	complexCols := map[uint32]bool{}
	for _, d := range r.ColumnDeletions {
		complexCols[d.Column] = true
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		n += 16 + int64(len(c.Path))
		if !c.Tombstone {
			n += int64(len(c.Value))
		}
		if len(c.Path) > 0 {
			complexCols[c.Column] = true
		}
	}
	return n + 12*int64(len(complexCols))
}

// tableList prints table names as Java prints a set of them.
func (b *batchStats) tableList() string {
	names := make([]string, 0, len(b.tables))
	for n := range b.tables {
		names = append(names, n)
	}
	slices.Sort(names)
	return "[" + strings.Join(names, ", ") + "]"
}

// verifyBatch applies the guardrails to a batch about to be applied: an
// error if it is too large, else warnings added to the answer.
func (e *Executor) verifyBatch(ctx context.Context, typ ast.BatchType, b *batchStats) error {
	if len(b.mutations) <= 1 {
		return nil
	}
	warn, fail := e.cfg.Batch.SizeWarn, e.cfg.Batch.SizeFail
	if fail >= 0 && b.size > fail {
		e.log.Error(fmt.Sprintf("Batch for %s is of size %d, exceeding specified threshold of %d by %d. (see batch_size_fail_threshold)",
			b.tableList(), b.size, fail, b.size-fail))
		return invalidf("Batch too large")
	}
	if warn >= 0 && b.size > warn {
		transport.AddWarning(ctx, fmt.Sprintf("Batch for %s is of size %d, exceeding specified threshold of %d by %d.",
			b.tableList(), b.size, warn, b.size-warn))
	}
	if limit := e.cfg.Batch.UnloggedPartitionsWarn; typ != ast.BatchLogged && limit >= 0 && len(b.partitions) > limit {
		s := ""
		if len(b.tables) > 1 {
			s = "s"
		}
		transport.AddWarning(ctx, fmt.Sprintf("Unlogged batch covering %d partitions detected against table%s %s. "+
			"You should use a logged batch for atomicity, or asynchronous writes for performance.",
			len(b.partitions), s, b.tableList()))
	}
	return nil
}
