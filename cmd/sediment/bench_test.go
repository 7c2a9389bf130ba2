package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/loadgen"
)

// TestBenchCeiling runs `sediment bench -ceiling` end to end: the null
// server, the driver, the progress and the JSON report.
func TestBenchCeiling(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{
		"-ceiling", "-workload", "mixed", "-read-ratio", "0.5", "-count", "400",
		"-concurrency", "8", "-connections", "1", "-partitions", "50", "-json",
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if rep.Ops != 400 || rep.Errors != 0 || rep.Misses != 0 || !rep.Ceiling || rep.Workload != "mixed" || len(rep.ByOp) != 2 {
		t.Fatalf("report %+v", rep)
	}
}

func TestBenchText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := benchMain(context.Background(), []string{"-ceiling", "-workload", "read", "-count", "50", "-concurrency", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ops       50 (") || !strings.Contains(stdout.String(), "p99.9") {
		t.Fatalf("text report:\n%s", stdout.String())
	}
}

func TestBenchFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-workload", "nope"}, `unknown workload "nope"`},
		{[]string{"-concurrency", "x"}, "invalid value"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-hosts", " , "}, "no hosts"},
	} {
		var stdout, stderr bytes.Buffer
		if code := benchMain(context.Background(), c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var out bytes.Buffer
	if code := benchMain(context.Background(), []string{"-help"}, &out, &out); code != 0 || !strings.Contains(out.String(), "-read-ratio") {
		t.Fatalf("-help: exit %d\n%s", code, out.String())
	}
	cfg, asJSON, err := parseBenchFlags([]string{"-hosts", "a:1, b:2", "-count", "5", "-json"}, &out)
	if err != nil || asJSON != true || len(cfg.Hosts) != 2 || cfg.Hosts[1] != "b:2" || cfg.Duration != 0 || cfg.Count != 5 {
		t.Fatalf("%+v %v %v", cfg, asJSON, err)
	}
	if cfg, _, _ := parseBenchFlags(nil, &out); cfg.Duration != benchDefaultDuration {
		t.Fatalf("default duration %v", cfg.Duration)
	}
}

// TestBenchUnreachable: a run that cannot connect fails with exit code 1.
func TestBenchUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{"-hosts", "127.0.0.1:1", "-count", "1", "-timeout", "2s"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "connecting to") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
