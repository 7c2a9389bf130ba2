package exec_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// inList is "(0, 1, ..., n-1)".
func inList(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(i)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// wantGuardrail runs stmt and checks that it fails with an Invalid error
// (0x2200) whose message is msg.
func wantGuardrail(t *testing.T, s *gocql.Session, stmt, msg string) {
	t.Helper()
	err := s.Query(stmt).Exec()
	var re gocql.RequestError
	if !errors.As(err, &re) || re.Code() != 0x2200 || re.Message() != msg {
		t.Errorf("%.80s...: %v, want Invalid %q", stmt, err, msg)
	}
}

func TestQueryGuardrails(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))",
		"CREATE TABLE q (p1 int, p2 int, v int, PRIMARY KEY ((p1, p2)))",
		"INSERT INTO t (p, c1, c2, v) VALUES (1, 2, 3, 4)")

	// The defaults: 100 combinations of clustering keys and 100
	// partition keys pass, one more is refused.
	if got := rowsOf(t, s, 10, "SELECT v FROM t WHERE p = 1 AND c1 IN "+inList(10)+" AND c2 IN "+inList(10)); !slices.Equal(got, []string{"4"}) {
		t.Errorf("10 x 10 clustering keys: %v", got)
	}
	wantGuardrail(t, s, "SELECT v FROM t WHERE p = 1 AND c1 IN "+inList(10000)+" AND c2 IN "+inList(10000),
		"Aborting query because the cartesian product of the IN restrictions on clustering key produces 100000000 values, this exceeds fail threshold of 100.")
	if got := rowsOf(t, s, 10, "SELECT v FROM t WHERE p IN "+inList(100)); !slices.Equal(got, []string{"4"}) {
		t.Errorf("100 partition keys: %v", got)
	}
	wantGuardrail(t, s, "SELECT v FROM t WHERE p IN "+inList(101),
		"Aborting query because the cartesian product of the IN restrictions on partition key produces 101 values, this exceeds fail threshold of 100.")
	// A key named twice is one key.
	if got := rowsOf(t, s, 10, "SELECT v FROM t WHERE p IN "+inList(100)+" AND c1 IN (2, 2, 2)"); !slices.Equal(got, []string{"4"}) {
		t.Errorf("repeated values: %v", got)
	}
	// Writes are held to the same product.
	wantGuardrail(t, s, "DELETE FROM t WHERE p IN "+inList(101),
		"Aborting query because the cartesian product of the IN restrictions on partition key produces 101 values, this exceeds fail threshold of 100.")
	wantGuardrail(t, s, "DELETE FROM t WHERE p = 1 AND c1 IN "+inList(11)+" AND c2 IN "+inList(10),
		"Aborting query because the cartesian product of the IN restrictions on clustering key produces 110 values, this exceeds fail threshold of 100.")
	// Text past 1 MiB is refused before it is parsed.
	long := "SELECT v FROM t WHERE p IN " + inList(200000)
	wantGuardrail(t, s, long, fmt.Sprintf("Query text of %d bytes exceeds the maximum of 1048576 bytes", len(long)))
}

// TestQueryGuardrailsConfigured: the thresholds are the executor's, and
// warn levels reach the client as warnings.
func TestQueryGuardrailsConfigured(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{Executor: func(c *exec.Config) {
		c.Guardrails = exec.Guardrails{
			PartitionKeysInSelectWarn:    2,
			PartitionKeysInSelectFail:    -1,
			InSelectCartesianProductWarn: 3,
			InSelectCartesianProductFail: 1000,
			MaxQueryTextSize:             0,
		}
	}})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE q (p1 int, p2 int, c int, v int, PRIMARY KEY ((p1, p2), c))")
	want := []string{
		"The cartesian product of the IN restrictions on partition key produces 4 values, this exceeds warning threshold of 3.",
		"Query with partition keys in IN clause on table q, with number of partition keys 4 exceeds warning threshold of 2.",
	}
	if got := warningsOf(t, s, "SELECT v FROM q WHERE p1 IN (1, 2) AND p2 IN (3, 4)"); !slices.Equal(got, want) {
		t.Errorf("warnings\n  %q\nwant\n  %q", got, want)
	}
	if got := warningsOf(t, s, "SELECT v FROM q WHERE p1 IN (1, 2) AND p2 = 3"); got != nil {
		t.Errorf("two keys: warnings %q", got)
	}
	// With the partition key fail threshold off, 800 keys are read.
	if got := warningsOf(t, s, "SELECT v FROM q WHERE p1 IN "+inList(2)+" AND p2 IN "+inList(400)); len(got) != 2 {
		t.Errorf("800 keys: warnings %q", got)
	}
	// A million values, with the text bound off, cost a sort, not a
	// million squared comparisons.
	wantGuardrail(t, s, "SELECT v FROM q WHERE p1 IN "+inList(2)+" AND p2 IN "+inList(1000000),
		"Aborting query because the cartesian product of the IN restrictions on partition key produces 2000000 values, this exceeds fail threshold of 1000.")
	wantGuardrail(t, s, "SELECT v FROM q WHERE p1 IN "+inList(2)+" AND p2 IN "+inList(501),
		"Aborting query because the cartesian product of the IN restrictions on partition key produces 1002 values, this exceeds fail threshold of 1000.")
}
