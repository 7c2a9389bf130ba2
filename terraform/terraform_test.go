package terraform

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// TestModules checks the modules and the example of this directory.
func TestModules(t *testing.T) {
	problems, err := checkTree(".", ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	mods, err := loadModules(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range mods {
		dirs = append(dirs, filepath.ToSlash(m.dir))
	}
	for _, want := range []string{"examples/aws", "modules/bucket", "modules/compactor", "modules/frontend",
		"modules/iam", "modules/ingest", "modules/launch", "modules/nats", "modules/network"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("no module in %s (have %v)", want, dirs)
		}
		if _, err := os.Stat(filepath.Join(want, "README.md")); err != nil {
			t.Errorf("%s has no README: %v", want, err)
		}
	}
}

// TestCheckerRejects runs the checker on each broken configuration in
// testdata/bad: every problem it reports must be one that the case's
// want.txt lists, and every listed problem must be reported.
func TestCheckerRejects(t *testing.T) {
	cases, err := filepath.Glob("testdata/bad/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want := readLines(t, filepath.Join(dir, "want.txt"))
			problems, err := checkTree(dir, dir)
			if err != nil {
				t.Fatal(err)
			}
			matched := make([]bool, len(want))
			for _, p := range problems {
				i := slices.IndexFunc(want, func(w string) bool { return strings.Contains(p.String(), w) })
				if i < 0 {
					t.Errorf("unexpected problem: %s", p)
					continue
				}
				matched[i] = true
			}
			for i, w := range want {
				if !matched[i] {
					t.Errorf("not reported: %s (got %v)", w, problems)
				}
			}
		})
	}
}

// TestCheckerAccepts runs the checker on a configuration that uses every
// allowed exception.
func TestCheckerAccepts(t *testing.T) {
	problems, err := checkTree("testdata/good", "testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckerParseError requires a file that is not HCL to fail the check.
func TestCheckerParseError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("resource \"aws_s3_bucket\" {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkTree(dir, dir); err == nil {
		t.Fatal("a file that does not parse passed")
	}
}

// TestBucketActions pins each role's S3 actions in the iam module to the
// least each role needs.
func TestBucketActions(t *testing.T) {
	mods, err := loadModules("modules/iam")
	if err != nil || len(mods) != 1 {
		t.Fatalf("modules/iam: %v", err)
	}
	want := map[string][]string{
		"frontend":  {"s3:GetObject", "s3:ListBucket", "s3:PutObject"},
		"ingest":    {"s3:AbortMultipartUpload", "s3:GetObject", "s3:ListBucket", "s3:PutObject"},
		"compactor": {"s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:PutObject"},
		"nats":      {"s3:GetObject"}, // the nats-server tarball under releases/
	}
	for role, actions := range want {
		var got []string
		for _, d := range mods[0].blocks("data") {
			if d.Labels[0] != "aws_iam_policy_document" || d.Labels[1] != role {
				continue
			}
			for _, st := range statementBlocks(d.Body) {
				if a, ok := st.Attributes["actions"]; ok {
					for _, lit := range literals(a.Expr, func(s string) bool { return strings.HasPrefix(s, "s3:") }) {
						got = append(got, lit.value)
					}
				}
			}
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, actions) {
			t.Errorf("%s: S3 actions %v, want %v", role, got, actions)
		}
	}
}

// TestExampleOutputs requires the example to give the CQL endpoint and the
// bucket.
func TestExampleOutputs(t *testing.T) {
	mods, err := loadModules("examples/aws")
	if err != nil || len(mods) != 1 {
		t.Fatalf("examples/aws: %v", err)
	}
	var names []string
	for _, o := range mods[0].blocks("output") {
		names = append(names, o.Labels[0])
	}
	for _, want := range []string{"cql_endpoint", "bucket_name"} {
		if !slices.Contains(names, want) {
			t.Errorf("examples/aws has no output %q (have %v)", want, names)
		}
	}
}

// TestBacklogMetricsExist requires every sediment_compaction_* metric the
// compactor module scales on to be one the compaction package exports, so
// that a rename there cannot silently stop the autoscaling.
func TestBacklogMetricsExist(t *testing.T) {
	exported := map[string]bool{}
	re := regexp.MustCompile(`(?:desc\(|Name:\s*)"([a-z_]+)"`)
	srcs, _ := filepath.Glob("../compactor/*.go")
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			exported["sediment_compaction_"+m[1]] = true
		}
	}
	if len(exported) == 0 {
		t.Fatal("found no metrics in ../compaction")
	}
	used := map[string]bool{}
	for _, f := range []string{"modules/compactor/main.tf", "modules/compactor/cloudwatch_agent.sh.tftpl"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`sediment_compaction_[a-z_]+`).FindAllString(string(b), -1) {
			used[m] = true
		}
	}
	for _, want := range []string{"sediment_compaction_queued_jobs", "sediment_compaction_queued_bytes", "sediment_compaction_oldest_job_age_seconds"} {
		if !used[want] {
			t.Errorf("the compactor module does not use %s", want)
		}
	}
	for m := range used {
		if !exported[m] {
			t.Errorf("the compactor module uses %s, which ../compaction does not export", m)
		}
	}
}

// TestFlagsExist requires every sediment flag the modules set to be one the
// binary has, as listed by sediment -help.
func TestFlagsExist(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sediment")
	build := exec.Command("go", "build", "-o", bin, "../cmd/sediment")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "-help").CombinedOutput() // -help exits 0 or 2
	have := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z0-9.-]*)`).FindAllStringSubmatch(string(out), -1) {
		have[m[1]] = true
	}
	if len(have) < 10 {
		t.Fatalf("sediment -help listed %d flags:\n%s", len(have), out)
	}
	used := map[string]string{}
	mods, err := loadModules(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		for _, body := range m.bodies {
			hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
				if a, ok := n.(*hclsyntax.Attribute); ok && (a.Name == "flags" || a.Name == "extra_flags") {
					for _, k := range objectKeys(a.Expr) {
						used[k] = a.SrcRange.String()
					}
				}
				return nil
			})
		}
	}
	tmpl, err := os.ReadFile("modules/launch/sediment.sh.tftpl")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`sediment -target=\S+((?: -[a-z.-]+=\S+)*)`).FindAllStringSubmatch(string(tmpl), -1) {
		used["target"] = "modules/launch/sediment.sh.tftpl"
		for _, f := range regexp.MustCompile(`-([a-z.-]+)=`).FindAllStringSubmatch(m[1], -1) {
			used[f[1]] = "modules/launch/sediment.sh.tftpl"
		}
	}
	for _, want := range []string{"target", "data.dir", "node.address", "objectstore.bucket", "manifest.nats-url", "cql.listen-address", "ingest.rpc-address", "cache.disk-bytes"} {
		if _, ok := used[want]; !ok {
			t.Errorf("the modules never set -%s", want)
		}
	}
	for f, where := range used {
		if !have[f] {
			t.Errorf("%s: sediment has no flag -%s", where, f)
		}
	}
}

// objectKeys returns the literal keys of the object constructors in e,
// at any depth (flags are often merge(...) of several).
func objectKeys(e hclsyntax.Expression) []string {
	var keys []string
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if k, ok := n.(*hclsyntax.ObjectConsKeyExpr); ok {
			if v, diags := k.Value(nil); !diags.HasErrors() && v.Type() == cty.String {
				keys = append(keys, v.AsString())
			}
		}
		return nil
	})
	return keys
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s lists nothing", name)
	}
	return lines
}

// TestBinariesFromTheBucket: instances copy sediment and nats-server from
// the cluster's bucket with their instance role, never from a URL (a
// presigned one expires; the internet may be unreachable).
func TestBinariesFromTheBucket(t *testing.T) {
	for _, f := range []string{"modules/launch/sediment.sh.tftpl", "modules/nats/user_data.sh.tftpl"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "aws s3 cp ") {
			t.Errorf("%s does not copy its binary with aws s3 cp", f)
		}
		// The metadata service is the one host an instance asks over HTTP.
		for _, m := range regexp.MustCompile(`(?m)^[^#\n]*\b(curl|wget)\b[^\n]*`).FindAllString(string(b), -1) {
			if !strings.Contains(m, "http://169.254.169.254/") {
				t.Errorf("%s downloads with curl or wget: %s", f, m)
			}
		}
	}
}

// TestAlarms: the compactor module alarms on each cluster health gauge
// and on compaction lag, and the agent publishes those metrics.
func TestAlarms(t *testing.T) {
	mods, err := loadModules("modules/compactor")
	if err != nil || len(mods) != 1 {
		t.Fatalf("modules/compactor: %v", err)
	}
	alarmed := map[string]bool{}
	for _, r := range mods[0].blocks("resource") {
		if r.Labels[0] != "aws_cloudwatch_metric_alarm" {
			continue
		}
		hclsyntax.VisitAll(r.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			if tmpl, ok := n.(*hclsyntax.TemplateExpr); ok && len(tmpl.Parts) == 1 {
				if v, diags := tmpl.Parts[0].Value(nil); !diags.HasErrors() && v.Type() == cty.String && strings.HasPrefix(v.AsString(), "sediment_") {
					alarmed[v.AsString()] = true
				}
			}
			return nil
		})
	}
	agent, err := os.ReadFile("modules/compactor/cloudwatch_agent.sh.tftpl")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"sediment_cluster_stale_members", "sediment_cluster_unowned_ranges", "sediment_cluster_stale_owner_ranges", "sediment_compaction_oldest_job_age_seconds"} {
		if !alarmed[m] {
			t.Errorf("no alarm on %s (alarmed: %v)", m, alarmed)
		}
		if !strings.Contains(string(agent), "^"+m+"$") {
			t.Errorf("the CloudWatch agent does not publish %s", m)
		}
	}
}
