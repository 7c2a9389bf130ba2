package cqltest

import "testing"

func TestStartAndConnect(t *testing.T) {
	srv := Start(t, Options{})
	s := srv.Session(t, "ks")
	Exec(t, s, "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v text)")
	var n int
	if err := s.Query("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ?", "ks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("system_schema.tables lists %d tables of ks, want 1", n)
	}
	md, err := s.KeyspaceMetadata("ks")
	if err != nil {
		t.Fatal(err)
	}
	if tm := md.Tables["t"]; tm == nil || len(tm.PartitionKey) != 1 || tm.PartitionKey[0].Name != "k" {
		t.Errorf("gocql's metadata of ks.t: %+v", md.Tables["t"])
	}
}
