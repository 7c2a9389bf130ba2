package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/clustertls/clustertlstest"
)

// tlsFlags are the -cluster.tls-* flags naming cfg's files.
func tlsFlags(cfg clustertls.Config) []string {
	return []string{"-cluster.tls-ca-file=" + cfg.CAFile, "-cluster.tls-cert-file=" + cfg.CertFile, "-cluster.tls-key-file=" + cfg.KeyFile}
}

// counterValue is the sum of the counter name's series in reg.
func counterValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestRunFrontendRemoteTLS runs an ingest process and frontend processes
// with cluster TLS: a frontend whose certificate the cluster CA signed
// writes and reads through the node; one whose certificate another CA
// signed cannot write, and the node logs and counts the refusal.
func TestRunFrontendRemoteTLS(t *testing.T) {
	certs := t.TempDir()
	ca := clustertlstest.NewCA(t, "cluster")
	ingestDir := t.TempDir()
	node := startProcess(t, ingestDir, append(tlsFlags(ca.WriteFiles(t, certs, "node")), "-target=ingest", "-node.heartbeat-interval=50ms")...)
	node.waitReady(t)
	frontendFlags := func(files clustertls.Config) []string {
		return append(append(tlsFlags(files), node.natsFlags()...), "-target=frontend", "-node.heartbeat-interval=50ms",
			"-objectstore.dir="+filepath.Join(ingestDir, "objects"))
	}
	fe := startProcess(t, t.TempDir(), frontendFlags(ca.WriteFiles(t, certs, "frontend"))...)
	fe.waitReady(t)
	s := cqlSession(t, fe, "")
	execCQL(t, s,
		"CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE r.t (k int PRIMARY KEY, v text)",
		"INSERT INTO r.t (k, v) VALUES (1, 'over mutual TLS')",
	)
	var v string
	if err := s.Query("SELECT v FROM r.t WHERE k = 1").Scan(&v); err != nil || v != "over mutual TLS" {
		t.Fatalf("read through the TLS frontend: %q %v", v, err)
	}
	if n := counterValue(t, node.s.reg, "sediment_ingest_rpc_refused_connections_total"); n != 0 {
		t.Fatalf("%v connections refused before the stranger came\n%s", n, node.log)
	}

	stranger := startProcess(t, t.TempDir(), frontendFlags(clustertlstest.NewCA(t, "other").WriteFiles(t, certs, "stranger"))...)
	stranger.waitReady(t)
	s2 := cqlSession(t, stranger, "")
	if err := s2.Query("INSERT INTO r.t (k, v) VALUES (2, 'forged')").Exec(); err == nil {
		t.Fatal("a frontend with another CA's certificate wrote through the node")
	}
	if err := s2.Query("SELECT v FROM r.t WHERE k = 1").Scan(&v); err == nil {
		t.Fatalf("a frontend with another CA's certificate read %q from the node's memtable", v)
	}
	if n := counterValue(t, node.s.reg, "sediment_ingest_rpc_refused_connections_total"); n == 0 {
		t.Fatalf("the refusals are not counted\n%s", node.log)
	}
	if !strings.Contains(node.log.String(), "ingest RPC refused a connection") {
		t.Fatalf("the refusal is not logged:\n%s", node.log)
	}
	if err := s.Query("SELECT v FROM r.t WHERE k = 2").Scan(&v); err == nil {
		t.Fatalf("the forged row %q is there", v)
	}
	stranger.stop(t)
	fe.stop(t)
	node.stop(t)
}
