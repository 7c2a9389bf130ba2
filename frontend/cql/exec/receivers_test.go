package exec_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// TestReceiversAgree: a WHERE clause's markers get the same receivers,
// named as Cassandra names them, whether a SELECT or a DELETE prepares it.
func TestReceiversAgree(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int, a int, b int, v int, PRIMARY KEY (k, a, b))")
	ctx := context.Background()
	sess := exec.NewSession()
	sess.SetKeyspace("ks")
	for where, want := range map[string]string{
		"k = ? AND (a, b) > (?, ?)":                 "k int, a int, b int",
		"k = ? AND (a, b) >= ? AND (a, b) < ?":      "k int, (a,b) frozen<tuple<int, int>>, (a,b) frozen<tuple<int, int>>",
		"k = ? AND (a, b) IN ((?, ?), (?, ?))":      "k int, a int, b int, a int, b int",
		"k = ? AND (a, b) IN ?":                     "k int, in((a,b)) list<frozen<tuple<int, int>>>",
		"k IN ? AND a = ? AND b IN (?, ?)":          "in(k) list<int>, a int, b int, b int",
		"k = blobAsInt(?) AND a = (int)? AND b = ?": "arg0(system.blobasint) blob, a int, b int",
	} {
		for _, stmt := range []string{"SELECT v FROM t WHERE ", "DELETE FROM t WHERE "} {
			p, err := srv.Executor.Prepare(ctx, sess, stmt+where, "")
			if err != nil {
				t.Fatalf("PREPARE %s%s: %v", stmt, where, err)
			}
			got := make([]string, len(p.Binds))
			for i, b := range p.Binds {
				got[i] = fmt.Sprintf("%s %s", b.Name, b.Type)
			}
			if g := strings.Join(got, ", "); g != want {
				t.Errorf("%s%s: receivers %s, want %s", stmt, where, g, want)
			}
		}
	}
	// A function of a marker in a SELECT's WHERE clause is evaluated.
	cqltest.Exec(t, s, "INSERT INTO t (k, a, b, v) VALUES (256, 1, 2, 3)")
	var v int
	if err := s.Query("SELECT v FROM t WHERE k = blobAsInt(?) AND a = 1 AND b = 2", []byte{0, 0, 1, 0}).Scan(&v); err != nil || v != 3 {
		t.Fatalf("k = blobAsInt(?): %d, %v", v, err)
	}
}
