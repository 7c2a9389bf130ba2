package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/bulk"
	"github.com/sedimentdb/sediment/manifest"
)

// TestLoadUnloadCommands runs `sediment load` and `sediment unload` against
// an all-in-one process, as a user would.
func TestLoadUnloadCommands(t *testing.T) {
	dataDir := t.TempDir()
	p := startProcess(t, dataDir, "-ingest.shards=1", "-ingest.ranges=4")
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.users (id int PRIMARY KEY, name text, emails set<text>)",
	)
	if err := p.s.view.WaitFor(t.Context(), func(v *manifest.View) bool { return v.Table("ks", "users") != nil }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "users.csv")
	var csv strings.Builder
	csv.WriteString("user_id;name;emails\n")
	for i := range 200 {
		fmt.Fprintf(&csv, "%d;'user %d';[\"u%d@x\"]\n", i, i, i)
	}
	csv.WriteString("oops;'bad id';\n")
	if err := os.WriteFile(in, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rejects := filepath.Join(dir, "rejects.json")
	common := []string{fmt.Sprintf("-manifest.embedded-port=%d", p.natsPort), "-data.dir=" + dataDir}
	var out, errOut bytes.Buffer
	args := append([]string{"-table", "ks.users", "-delimiter", ";", "-quote", "'", "-mapping", "user_id=id",
		"-rejects", rejects, "-json", in}, common...)
	if code := loadMain(context.Background(), args, noEnv, &out, &errOut, false); code != 0 {
		rj, _ := os.ReadFile(rejects)
		t.Fatalf("load: exit %d\n%s%s%.600s", code, out.String(), errOut.String(), rj)
	}
	var st bulk.Stats
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("summary %q: %v", out.String(), err)
	}
	if st.State != manifest.LoadCommitted || st.Rows != 200 || st.Rejected != 1 || st.Records != 201 {
		t.Fatalf("summary %+v", st)
	}
	data, err := os.ReadFile(rejects)
	if err != nil {
		t.Fatal(err)
	}
	var rj bulk.Reject
	if err := json.Unmarshal(bytes.TrimSpace(data), &rj); err != nil || rj.Line != 202 || !strings.Contains(rj.Reason, "column id") {
		t.Fatalf("rejects %s: %+v %v", data, rj, err)
	}
	var n int
	if err := s.Query("SELECT count(*) FROM ks.users").Scan(&n); err != nil || n != 200 {
		t.Fatalf("count %d, %v", n, err)
	}

	// A row in the memtable only: -flush puts it in the unload.
	execCQL(t, s, "INSERT INTO ks.users (id, name) VALUES (1000, 'late')")
	outFile := filepath.Join(dir, "out.jsonl")
	out.Reset()
	errOut.Reset()
	args = append([]string{"-table", "ks.users", "-format", "json", "-flush", "-out", outFile}, common...)
	if code := unloadMain(context.Background(), args, noEnv, &out, &errOut); code != 0 {
		t.Fatalf("unload: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	f, err := os.Open(outFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, late := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		late = late || strings.Contains(sc.Text(), `"late"`)
	}
	if lines != 201 || !late {
		t.Fatalf("unloaded %d lines (late row: %t)\n%s", lines, late, out.String())
	}

	// Usage errors exit 2, failures 1.
	for _, bad := range [][]string{
		{"-table", "nokeyspace", in},
		{"-table", "ks.users", "-delimiter", ";;", in},
		{"-table", "ks.users", "-mapping", "x", in},
		{"-table", "ks.users"},
	} {
		if code := loadMain(context.Background(), append(bad, common...), noEnv, &out, &errOut, false); code != 2 {
			t.Errorf("load %q: exit %d, want 2", bad, code)
		}
	}
	if code := loadMain(context.Background(), append([]string{"-abandon", uuid.NewString()}, common...), noEnv, &out, &errOut, false); code != 1 {
		t.Errorf("abandoning an unknown load: exit %d, want 1", code)
	}
}
