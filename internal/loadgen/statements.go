package loadgen

import (
	"fmt"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// statement is one statement the workloads prepare, with the shape a server
// gives it: the client runs its text, the NullHandler answers with its shape.
type statement struct {
	text string
	// bound are the bind markers, pk the indexes of the partition key among
	// them.
	bound []wire.ColumnSpec
	pk    []uint16
	// result are the columns of the rows it returns; none for a write.
	result []wire.ColumnSpec
}

// workloadStatements are the statements of the workloads over one keyspace
// and table.
type workloadStatements struct {
	insert, read, scan, counter statement
	setup                       []string
}

func newWorkloadStatements(ks, table string) workloadStatements {
	ctr := table + "_counter"
	col := func(t, name string, typ *cqltype.Type) wire.ColumnSpec {
		return wire.ColumnSpec{Keyspace: ks, Table: t, Name: name, Type: typ}
	}
	pk, ck := col(table, "pk", cqltype.BigintType), col(table, "ck", cqltype.BigintType)
	v := col(table, "v", cqltype.BlobType)
	cpk, cck := col(ctr, "pk", cqltype.BigintType), col(ctr, "ck", cqltype.BigintType)
	return workloadStatements{
		insert: statement{
			text:  fmt.Sprintf("INSERT INTO %s.%s (pk, ck, v) VALUES (?, ?, ?)", ks, table),
			bound: []wire.ColumnSpec{pk, ck, v}, pk: []uint16{0},
		},
		read: statement{
			text:  fmt.Sprintf("SELECT v FROM %s.%s WHERE pk = ? AND ck = ?", ks, table),
			bound: []wire.ColumnSpec{pk, ck}, pk: []uint16{0},
			result: []wire.ColumnSpec{v},
		},
		scan: statement{
			text:  fmt.Sprintf("SELECT ck, v FROM %s.%s WHERE pk = ?", ks, table),
			bound: []wire.ColumnSpec{pk}, pk: []uint16{0},
			result: []wire.ColumnSpec{ck, v},
		},
		counter: statement{
			text:  fmt.Sprintf("UPDATE %s.%s SET c = c + 1 WHERE pk = ? AND ck = ?", ks, ctr),
			bound: []wire.ColumnSpec{cpk, cck}, pk: []uint16{0},
		},
		setup: []string{
			fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks),
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck))", ks, table),
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (pk bigint, ck bigint, c counter, PRIMARY KEY (pk, ck))", ks, ctr),
		},
	}
}
