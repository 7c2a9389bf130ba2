package status

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// render returns the page of src.
func render(t *testing.T, src Source) string {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler(src).ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	return rec.Body.String()
}

// queueRegistry holds the queue gauges under the names
// compaction.RegisterQueueMetrics gives them.
func queueRegistry(up bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name string, v float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: name}, func() float64 { return v }))
	}
	if !up {
		gauge("sediment_compaction_queue_up", 0)
		return reg
	}
	gauge("sediment_compaction_queue_up", 1)
	gauge("sediment_compaction_queued_jobs", 4)
	gauge("sediment_compaction_queued_bytes", 123456)
	gauge("sediment_compaction_oldest_job_age_seconds", 7.25)
	return reg
}

func TestQueue(t *testing.T) {
	got := figures(t, render(t, Source{Gatherer: queueRegistry(true)}))
	for name, want := range map[string]string{"queue/jobs": "4", "queue/bytes": "123456", "queue/oldest-age": "7.2"} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	page := render(t, Source{Gatherer: queueRegistry(false)})
	if !strings.Contains(page, "compaction queue: did not answer") || strings.Contains(page, `"queue/jobs"`) {
		t.Errorf("a queue that did not answer shows as:\n%s", page)
	}
	page = render(t, Source{Gatherer: prometheus.NewRegistry()})
	if strings.Contains(page, "Compaction queue") {
		t.Errorf("a process without a queue shows one:\n%s", page)
	}
}

// An empty process, as before its modules start, still renders.
func TestEmpty(t *testing.T) {
	page := render(t, Source{Catalog: func() Catalog { return Catalog{} }})
	for _, want := range []string{"no members", "no tables", "no caches in this process", "no archived versions"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestCost(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sediment_objectstore_requests_total", Help: "h"}, []string{"backend", "operation"})
	reg.MustRegister(reqs)
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	// The cost rate is over the window the samples cover: a day here.
	hist := NewHistory(reg, 0, 48*time.Hour)
	hist.Sample(now.Add(-24 * time.Hour))
	// Two backends' counts add up per operation.
	reqs.WithLabelValues("s3", "put").Add(600_000)
	reqs.WithLabelValues("file", "put").Add(400_000)              // 1e6 PUT: $5
	reqs.WithLabelValues("s3", "multipart_upload_part").Add(1000) // $0.005
	reqs.WithLabelValues("s3", "get_range").Add(10_000_000)       // $4
	reqs.WithLabelValues("s3", "head").Add(5000)                  // $0.002
	reqs.WithLabelValues("s3", "delete").Add(99_999)              // free
	reqs.WithLabelValues("s3", "multipart_abort").Add(3)          // free
	hist.Sample(now)
	got := figures(t, render(t, Source{Gatherer: reg, History: hist, Started: now.Add(-24 * time.Hour), Now: func() time.Time { return now }}))
	for name, want := range map[string]string{
		"requests/put": "1000000", "requests/get_range": "10000000", "requests/delete": "99999",
		"cost/total":  "$9.007000",
		"cost/window": "24h0m0s",
		"cost/hourly": "$0.375292", // $9.007 in a day
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	good := objectstore.Attrs{Key: "manifest/c_sstables/t.x/00000000000000000012", Size: 9}
	v, err := parseVersion(good)
	if err != nil || v.Bucket != "c_sstables" || v.Key != "t.x" || v.Version != 12 || v.Size != 9 {
		t.Errorf("parseVersion(%q) = %+v, %v", good.Key, v, err)
	}
	for _, k := range []string{
		"manifest/c_sstables/t.x/12",                   // not padded
		"manifest/c_sstables/t.x/00000000000000000000", // version 0
		"manifest/c_sstables/00000000000000000012",
		"manifest//t.x/00000000000000000012",
		"other/c_sstables/t.x/00000000000000000012",
		"manifest/c_sstables/t.x/0000000000000000001x",
	} {
		if _, err := parseVersion(objectstore.Attrs{Key: k}); err == nil {
			t.Errorf("parseVersion(%q) accepted it", k)
		}
	}
}

// FuzzParseVersion: object keys in the bucket are outside bytes. Whatever
// parses must name the same object when formatted back.
func FuzzParseVersion(f *testing.F) {
	f.Add("manifest/c_sstables/t.x/00000000000000000012")
	f.Add("manifest/c_schema/k.ks/18446744073709551615")
	f.Add("manifest/a/b/c/d")
	f.Add("")
	f.Fuzz(func(t *testing.T, key string) {
		v, err := parseVersion(objectstore.Attrs{Key: key})
		if err != nil {
			return
		}
		if back := fmt.Sprintf("%s%s/%s/%020d", archivePrefix, v.Bucket, v.Key, v.Version); back != key {
			t.Fatalf("parseVersion(%q) = %+v, which formats as %q", key, v, back)
		}
	})
}

// TestArchive: the archive is listed at most once per ArchiveEvery, shown
// newest first up to ArchiveLimit, and a listing that fails shows an error
// and is not kept.
func TestArchive(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	st, err := objectstore.NewFile(vfs.Default, t.TempDir(), reg)
	if err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 4; v++ {
		if _, err := st.Put(ctx, fmt.Sprintf("manifest/c_schema/k.ks/%020d", v), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// Another cluster's archive is not shown.
	if _, err := st.Put(ctx, "manifest/d_schema/k.ks/00000000000000000009", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	h := Handler(Source{
		Now:          func() time.Time { return now },
		Catalog:      func() Catalog { return Catalog{Store: st, Cluster: "c"} },
		ArchiveLimit: 3,
	})
	page := func() map[string]string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
		return figures(t, rec.Body.String())
	}
	lists := func() uint64 { return uint64(requestsOf(t, reg, "list")) }

	got := page()
	// Equal modification times fall back to descending object names.
	for _, v := range []int{4, 3, 2} {
		if k := fmt.Sprintf("manifest/manifest/c_schema/k.ks/%020d", v); got[k] != fmt.Sprint(v) {
			t.Errorf("%s = %q", k, got[k])
		}
	}
	if len(got) != 3+1 { // three versions and the time
		t.Errorf("figures %v", got)
	}
	page()
	if n := lists(); n != 1 {
		t.Errorf("%d LIST requests for two pages within ArchiveEvery", n)
	}
	now = now.Add(DefaultArchiveEvery)
	page()
	if n := lists(); n != 2 {
		t.Errorf("%d LIST requests after ArchiveEvery, want 2", n)
	}

	// A foreign object in the archive: an error, listed again next time.
	if _, err := st.Put(ctx, "manifest/c_schema/stray", []byte("x")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultArchiveEvery)
	for i := range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
		if !strings.Contains(rec.Body.String(), "not a manifest archive object") {
			t.Errorf("page %d does not show the listing error", i)
		}
	}
	if n := lists(); n != 4 {
		t.Errorf("%d LIST requests, want 4: a failed listing is not kept", n)
	}
}

// requestsOf returns the requests of operation op counted in reg.
func requestsOf(t *testing.T, reg prometheus.Gatherer, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return float64(requests(mfs, time.Second).count(op))
}
