package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// within fails unless got is within rel of want.
func within(t *testing.T, name string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*want {
		t.Errorf("%s = %g, want %g within %g%%", name, got, want, rel*100)
	}
}

// TestPercentilesUniform records 1..100000 µs once each: the q-th percentile
// is q% of the range, within the histogram's 0.1%.
func TestPercentilesUniform(t *testing.T) {
	r := newRecorder()
	for us := 100_000; us >= 1; us-- { // descending, so order cannot matter
		r.record(opWrite, time.Duration(us)*time.Microsecond, nil, 0)
	}
	l := r.report(&Config{Workload: Write}, time.Second).Latency
	within(t, "p50", l.P50, 50, 0.001)
	within(t, "p90", l.P90, 90, 0.001)
	within(t, "p99", l.P99, 99, 0.001)
	within(t, "p99.9", l.P999, 99.9, 0.001)
	within(t, "max", l.Max, 100, 0.001)
	within(t, "mean", l.Mean, 50, 0.001)
}

// TestPercentilesBimodal: 98.5% of operations take 1 ms and 1.5% take
// 250 ms, so p50 and p90 are 1 ms and p99 and p99.9 are 250 ms.
func TestPercentilesBimodal(t *testing.T) {
	r := newRecorder()
	for i := range 10_000 {
		d := time.Millisecond
		if i%200 < 3 {
			d = 250 * time.Millisecond
		}
		r.record(opRead, d, nil, 1)
	}
	l := r.report(&Config{Workload: Read}, time.Second).Latency
	within(t, "p50", l.P50, 1, 0.001)
	within(t, "p90", l.P90, 1, 0.001)
	within(t, "p99", l.P99, 250, 0.001)
	within(t, "p99.9", l.P999, 250, 0.001)
	within(t, "max", l.Max, 250, 0.001)
	within(t, "mean", l.Mean, 0.985*1+0.015*250, 0.001)
}

// TestPercentilesExponential draws latencies from an exponential
// distribution of mean 2 ms, whose q quantile is -2 ln(1-q) ms.
func TestPercentilesExponential(t *testing.T) {
	r := newRecorder()
	const n = 200_000
	for i := range n {
		// The quantiles of an exponential, evenly spaced: an exact sample.
		q := (float64(i) + 0.5) / n
		r.record(opRead, time.Duration(-2e6*math.Log(1-q)), nil, 1)
	}
	l := r.report(&Config{Workload: Read}, time.Second).Latency
	for _, c := range []struct {
		name string
		got  float64
		q    float64
	}{{"p50", l.P50, 0.5}, {"p90", l.P90, 0.9}, {"p99", l.P99, 0.99}, {"p99.9", l.P999, 0.999}} {
		within(t, c.name, c.got, -2*math.Log(1-c.q), 0.002)
	}
}

func TestRecorderCounts(t *testing.T) {
	r := newRecorder()
	r.record(opRead, time.Millisecond, nil, 1)
	r.record(opRead, time.Millisecond, nil, 0)
	r.record(opRead, time.Hour, nil, 1) // beyond the range: clamped
	r.record(opWrite, time.Millisecond, errors.New("boom"), 0)
	r.record(opWrite, 0, nil, 0) // below the range: clamped
	ops, errs, _ := r.tick()
	if ops != 5 || errs != 1 {
		t.Fatalf("tick: %d ops %d errors", ops, errs)
	}
	if ops, errs, _ := r.tick(); ops != 0 || errs != 0 {
		t.Fatalf("second tick: %d ops %d errors", ops, errs)
	}
	rep := r.report(&Config{Workload: Read}, 2*time.Second)
	if rep.Ops != 5 || rep.Misses != 1 || rep.Errors != 2 || rep.OpsPerSec != 2.5 || rep.FirstError != "boom" {
		t.Fatalf("report %+v", rep)
	}
	within(t, "max", rep.Latency.Max, 60_000, 0.001)
	if len(rep.ByOp) != 2 || rep.ByOp[0].Op != "write" || rep.ByOp[1].Rows != 2 {
		t.Fatalf("by op %+v", rep.ByOp)
	}
	// In a mixed workload a miss is not an error.
	if rep := r.report(&Config{Workload: Mixed}, time.Second); rep.Errors != 1 {
		t.Fatalf("mixed: %d errors, want 1", rep.Errors)
	}
}

func TestReportOutput(t *testing.T) {
	r := newRecorder()
	r.record(opScan, time.Millisecond, nil, 7)
	rep := r.report(&Config{Workload: Scan, Distribution: Uniform, Concurrency: 4, Connections: 2, RowSize: 10, Ceiling: true}, time.Second)
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workload  scan, uniform keys", "null server (ceiling)", "ops       1 (1 ops/s), 0 errors, 0 misses", "p99 1.000ms", "scan      1 ops, 0 errors, 0 misses, 7 rows"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Ops != 1 || back.ByOp[0].Rows != 7 || back.Latency.P99 != rep.Latency.P99 || !strings.Contains(js.String(), `"p99_ms": 1,`) {
		t.Fatalf("JSON report %s", js.String())
	}
}
