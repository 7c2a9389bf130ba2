package exec_test

import "testing"

// TestSelectFunctionsOfAggregates: a scalar function of an aggregate is
// applied to the group's result, as in Cassandra; an aggregate of an
// aggregate is refused with Cassandra's message.
func TestSelectFunctionsOfAggregates(t *testing.T) {
	_, s := selectEnv(t)
	for q, want := range map[string][]string{
		`SELECT toJson(max(v)) FROM t WHERE pk = 'a'`:                 {`"a9"`},
		`SELECT toJson(count(*)) FROM t`:                              {"30"},
		`SELECT blobAsText(textAsBlob(min(v))) FROM t WHERE pk = 'b'`: {"b0"},
		`SELECT cast(sum(ck) AS text) FROM t WHERE pk = 'c'`:          {"45"},
		`SELECT toJson(max(ck)), ck FROM t WHERE pk = 'a'`:            {"9|0"},
		`SELECT pk, toJson(max(v)) FROM t GROUP BY pk`:                {`a|"a9"`, `c|"c9"`, `b|"b9"`}, // partitions in token order
		`SELECT toJson(max(v)), count(*) FROM t WHERE pk = 'none'`:    {"null|0"},
	} {
		wantRows(t, rowsOf(t, s, 0, q), want...)
	}
	// token of an aggregate: the token of the greatest key.
	var own, ofMax int64
	if err := s.Query(`SELECT token(pk) FROM t WHERE pk = 'c' LIMIT 1`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	if err := s.Query(`SELECT token(max(pk)) FROM t`).Scan(&ofMax); err != nil || ofMax != own {
		t.Errorf("token(max(pk)) = %d (%v), want token('c') = %d", ofMax, err, own)
	}
	for _, q := range []string{
		`SELECT max(min(v)) FROM t`,
		`SELECT max(toJson(min(v))) FROM t`,
		`SELECT count(blobAsText(textAsBlob(max(v)))) FROM t`,
	} {
		wantErr(t, s, q, codeInvalid, "aggregate functions cannot be used as arguments of aggregate functions")
	}
}
