package exec_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// batchText is a text batch of n INSERTs into ks.t (k int, c int, v text),
// row i in partition i/perPart, each v of vlen bytes.
func batchText(kind string, n, perPart, vlen int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BEGIN %sBATCH ", kind)
	for i := range n {
		fmt.Fprintf(&b, "INSERT INTO t (k, c, v) VALUES (%d, %d, '%s'); ", i/perPart, i, strings.Repeat("x", vlen))
	}
	b.WriteString("APPLY BATCH")
	return b.String()
}

func warningsOf(t *testing.T, s *gocql.Session, stmt string) []string {
	t.Helper()
	it := s.Query(stmt).Iter()
	w := it.Warnings()
	if err := it.Close(); err != nil {
		t.Fatalf("%.60s...: %v", stmt, err)
	}
	return w
}

func TestBatchGuardrails(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))", "CREATE TABLE u (k int PRIMARY KEY, n counter)")

	// Each row: clustering 4 bytes, one cell of 16 + 100 bytes = 120.
	for _, tc := range []struct {
		name string
		stmt string
		want []string
	}{
		{"small", batchText("", 10, 1, 100), nil},
		// One partition is never checked, whatever its size.
		{"one partition", batchText("", 100, 100, 100), nil},
		{"over warn", batchText("", 50, 25, 100), []string{
			"Batch for [ks.t] is of size 6000, exceeding specified threshold of 5120 by 880."}},
		{"unlogged many partitions", batchText("UNLOGGED ", 11, 1, 0), []string{
			"Unlogged batch covering 11 partitions detected against table [ks.t]. You should use a logged batch for atomicity, or asynchronous writes for performance."}},
		{"unlogged ten partitions", batchText("UNLOGGED ", 10, 1, 0), nil},
		{"logged many partitions", batchText("", 20, 1, 0), nil},
		{"both", batchText("UNLOGGED ", 50, 4, 100), []string{
			"Batch for [ks.t] is of size 6000, exceeding specified threshold of 5120 by 880.",
			"Unlogged batch covering 13 partitions detected against table [ks.t]. You should use a logged batch for atomicity, or asynchronous writes for performance."}},
	} {
		if got := warningsOf(t, s, tc.stmt); !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings\n  %q\nwant\n  %q", tc.name, got, tc.want)
		}
	}

	// Two tables, and a counter batch (not logged) over 11 partitions.
	var b strings.Builder
	b.WriteString("BEGIN UNLOGGED BATCH ")
	for i := range 11 {
		fmt.Fprintf(&b, "INSERT INTO t (k, c, v) VALUES (%d, 0, ''); ", 100+i)
	}
	// The same key in another table is the same partition key, counted once.
	b.WriteString("INSERT INTO t2 (k, v) VALUES (100, 'x'); APPLY BATCH")
	cqltest.Exec(t, s, "CREATE TABLE t2 (k int PRIMARY KEY, v text)")
	want := []string{"Unlogged batch covering 11 partitions detected against tables [ks.t, ks.t2]. You should use a logged batch for atomicity, or asynchronous writes for performance."}
	if got := warningsOf(t, s, b.String()); !slices.Equal(got, want) {
		t.Errorf("two tables: warnings %q, want %q", got, want)
	}
	b.Reset()
	b.WriteString("BEGIN COUNTER BATCH ")
	for i := range 12 {
		fmt.Fprintf(&b, "UPDATE u SET n = n + 1 WHERE k = %d; ", i)
	}
	b.WriteString("APPLY BATCH")
	want = []string{"Unlogged batch covering 12 partitions detected against table [ks.u]. You should use a logged batch for atomicity, or asynchronous writes for performance."}
	if got := warningsOf(t, s, b.String()); !slices.Equal(got, want) {
		t.Errorf("counter batch: warnings %q, want %q", got, want)
	}

	// Past the fail threshold: refused, nothing written, by text and by the
	// protocol's BATCH message.
	big := batchText("", 500, 250, 100) // 60000 bytes in partitions 0 and 1
	cqltest.Exec(t, s, "TRUNCATE t")
	wantError(t, s, big, "Batch too large")
	pb := s.NewBatch(gocql.LoggedBatch)
	for i := range 500 {
		pb.Query("INSERT INTO t (k, c, v) VALUES (?, ?, ?)", i/250, i, strings.Repeat("x", 100))
	}
	if err := s.ExecuteBatch(pb); err == nil || !strings.Contains(err.Error(), "Batch too large") {
		t.Fatalf("a protocol batch of 60000 bytes: %v, want Batch too large", err)
	}
	if n := rowsOf(t, s, 100, "SELECT count(*) FROM t"); !slices.Equal(n, []string{"0"}) {
		t.Fatalf("a refused batch wrote rows: count %v", n)
	}
}

// TestBatchGuardrailsConfigured: the thresholds are the executor's.
func TestBatchGuardrailsConfigured(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{Executor: func(c *exec.Config) {
		c.Batch.SizeWarn = 100
		c.Batch.SizeFail = 1000
		c.Batch.UnloggedPartitionsWarn = -1
	}})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
	want := []string{"Batch for [ks.t] is of size 240, exceeding specified threshold of 100 by 140."}
	if got := warningsOf(t, s, batchText("UNLOGGED ", 2, 1, 100)); !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	// 40 rows of 20 bytes; the partition count warning is off.
	want = []string{"Batch for [ks.t] is of size 800, exceeding specified threshold of 100 by 700."}
	if got := warningsOf(t, s, batchText("UNLOGGED ", 40, 1, 0)); !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	wantError(t, s, batchText("", 10, 1, 100), "Batch too large")
}
