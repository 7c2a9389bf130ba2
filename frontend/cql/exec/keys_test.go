package exec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// TestKeyLengthLimit: partition keys and clustering values longer than
// 65535 bytes are refused as Cassandra refuses them (its SSTables write
// them with an unsigned short length); a compound key counts in its
// composed form.
func TestKeyLengthLimit(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TABLE p (k text, c text, v int, PRIMARY KEY (k, c))",
		"CREATE TABLE pc (a text, b text, v int, PRIMARY KEY ((a, b)))")
	longest, over := strings.Repeat("k", 65535), strings.Repeat("k", 65536)
	for _, tc := range []struct {
		stmt string
		args []any
		msg  string // "" when accepted
	}{
		{"INSERT INTO p (k, c, v) VALUES (?, 'c', 1)", []any{longest}, ""},
		{"INSERT INTO p (k, c, v) VALUES (?, ?, 1)", []any{"k", longest}, ""},
		{"INSERT INTO p (k, c, v) VALUES (?, 'c', 1)", []any{over}, "Key length of 65536 is longer than maximum of 65535"},
		{"UPDATE p SET v = 2 WHERE k = ? AND c = 'c'", []any{over}, "Key length of 65536 is longer than maximum of 65535"},
		{"DELETE FROM p WHERE k IN ('a', ?)", []any{over}, "Key length of 65536 is longer than maximum of 65535"},
		{"SELECT v FROM p WHERE k = ?", []any{over}, "Key length of 65536 is longer than maximum of 65535"},
		{"INSERT INTO p (k, c, v) VALUES ('k', ?, 1)", []any{over}, "Key length of 65536 is longer than maximum of 65535"},
		// Composed: 2 + 33000 + 1 bytes per component.
		{"INSERT INTO pc (a, b, v) VALUES (?, ?, 1)", []any{strings.Repeat("a", 33000), strings.Repeat("b", 33000)}, "Key length of 66006 is longer than maximum of 65535"},
		{"INSERT INTO pc (a, b, v) VALUES (?, ?, 1)", []any{strings.Repeat("a", 32000), strings.Repeat("b", 32000)}, ""},
	} {
		err := s.Query(tc.stmt, tc.args...).Exec()
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.stmt, err)
			}
			continue
		}
		var re gocql.RequestError
		if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid || re.Message() != tc.msg {
			t.Errorf("%s: %v, want Invalid %q", tc.stmt, err, tc.msg)
		}
	}
	var v int
	if err := s.Query("SELECT v FROM p WHERE k = ? AND c = 'c'", longest).Scan(&v); err != nil || v != 1 {
		t.Fatalf("the longest key reads back: %d, %v", v, err)
	}
}
