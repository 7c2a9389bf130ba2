package exec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// TestRequestTimeouts: a statement whose timeout has passed is cancelled
// and answered with the timeout of its kind; statements without one
// (system tables) run. A timeout of a nanosecond has passed before any
// work starts, so the answer does not depend on the machine's speed.
func TestRequestTimeouts(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{Executor: func(c *exec.Config) {
		c.Timeouts = exec.Timeouts{Read: time.Nanosecond, Range: time.Nanosecond, Write: time.Nanosecond, Truncate: time.Nanosecond}
	}})
	ss := srv.Session(t, "ks")
	// DDL has no timeout.
	cqltest.Exec(t, ss, "CREATE TABLE t (p int PRIMARY KEY, v int)")
	for _, tc := range []struct {
		stmt string
		code int
	}{
		{"SELECT v FROM t WHERE p = 1", 0x1200},
		{"SELECT v FROM t", 0x1200},
		{"INSERT INTO t (p, v) VALUES (2, 2)", 0x1100},
		{"BEGIN BATCH INSERT INTO t (p, v) VALUES (3, 3); APPLY BATCH", 0x1100},
		{"TRUNCATE t", 0x1003},
	} {
		err := ss.Query(tc.stmt).Exec()
		var re gocql.RequestError
		if !errors.As(err, &re) || re.Code() != tc.code {
			t.Errorf("%s: %v, want code %#x", tc.stmt, err, tc.code)
		}
	}
	var n int
	if err := ss.Query("SELECT count(*) FROM system.local").Scan(&n); err != nil || n != 1 {
		t.Errorf("system.local: %d %v", n, err)
	}
}
