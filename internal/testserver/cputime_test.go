package testserver

import (
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for _, c := range []struct {
		stat string
		want time.Duration
		ok   bool
	}{
		{"4242 (minio) S 1 4242 4242 0 -1 4194560 9061 0 0 0 137 52 0 0 20 0 12 0 4711 0\n", 1890 * time.Millisecond, true},
		{"7 (a) b) (c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0", 70 * time.Millisecond, true},
		{"7 (minio S 1 7 7 0 -1 0 0 0 0 0 3 4", 0, false},
		{"7 (minio) S 1 7 7 0 -1 0 0 0 0 0 3", 0, false},
		{"7 (minio) S 1 7 7 0 -1 0 0 0 0 0 x 4", 0, false},
		{"7 (minio) S 1 7 7 0 -1 0 0 0 0 0 -3 4", 0, false},
	} {
		got, err := parseStatCPU(c.stat)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v, ok %v", c.stat, got, err, c.want, c.ok)
		}
	}
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add("4242 (minio) S 1 4242 4242 0 -1 4194560 9061 0 0 0 137 52 0 0 20 0 12 0 4711 0\n")
	f.Add("1 ()) R")
	f.Fuzz(func(t *testing.T, stat string) {
		if d, err := parseStatCPU(stat); err == nil && d < 0 {
			t.Fatalf("negative time %v", d)
		}
	})
}

func TestMinIOCPUTime(t *testing.T) {
	m := MinIO(t)
	d, err := m.CPUTime()
	switch {
	case runtime.GOOS != "linux":
		if err == nil {
			t.Fatalf("CPUTime = %v without /proc", d)
		}
	case err != nil || d <= 0:
		// Starting the server and creating the bucket took processor time.
		t.Fatalf("CPUTime = %v, %v", d, err)
	}
	m.Kill()
	if _, err := m.CPUTime(); err == nil {
		t.Fatal("CPUTime of a killed server")
	}
}
