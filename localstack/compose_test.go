package localstack

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Docker is not available where these tests run, so compose.yaml and the
// Dockerfile are checked by structure, and the Sediment settings in them by
// the sediment binary's own configuration loader.

type composeFile struct {
	Name     string
	Services map[string]composeService
	Volumes  map[string]any
}

type composeService struct {
	Image       string
	Build       *struct{ Context, Dockerfile string }
	Command     []string
	Entrypoint  []string
	Environment map[string]string
	Ports       []string
	Volumes     []string
	DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
	Healthcheck *struct {
		Test    []string
		Retries int
	}
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// sedimentRoles are the compose services that run Sediment, by role.
var sedimentRoles = []string{"ingest", "compactor", "frontend"}

// pinned matches an image reference with a tag other than latest, or a digest.
var pinned = regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?(@sha256:[0-9a-f]{64})?$`)

func checkPinned(image string) error {
	m := pinned.FindStringSubmatch(image)
	switch {
	case m == nil:
		return fmt.Errorf("image %q: not an image reference", image)
	case m[1] == "" && m[2] == "":
		return fmt.Errorf("image %q: not pinned by tag or digest", image)
	case m[1] == ":latest" && m[2] == "":
		return fmt.Errorf("image %q: latest is not a pin", image)
	}
	return nil
}

// flagValue returns the value of -name=value in args.
func flagValue(args []string, name string) (string, int) {
	var v string
	n := 0
	for _, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-") // -name or --name
		if rest, ok := strings.CutPrefix(a, name+"="); ok {
			v, n = rest, n+1
		}
	}
	return v, n
}

func TestComposeStructure(t *testing.T) {
	c := loadCompose(t)
	var names []string
	for name := range c.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"compactor", "frontend", "ingest", "localstack", "minio", "minio-init", "nats"}; !slices.Equal(names, want) {
		t.Fatalf("services %q, want %q", names, want)
	}
	for name, s := range c.Services {
		if err := checkPinned(s.Image); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == "minio-init" { // a one-shot job
			continue
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) < 2 || !slices.Contains([]string{"CMD", "CMD-SHELL"}, s.Healthcheck.Test[0]) {
			t.Errorf("%s: no healthcheck test", name)
		}
		for dep, d := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("%s depends on %s, which is not a service", name, dep)
			}
			if d.Condition == "" {
				t.Errorf("%s: depends on %s without a condition", name, dep)
			}
		}
		for _, v := range s.Volumes {
			if vol, _, ok := strings.Cut(v, ":"); ok && !strings.HasPrefix(vol, ".") && !strings.HasPrefix(vol, "/") {
				if _, ok := c.Volumes[vol]; !ok {
					t.Errorf("%s: volume %s is not declared", name, vol)
				}
			}
		}
	}

	ls := c.Services["localstack"]
	for _, svc := range []string{"s3", "iam"} {
		if !slices.Contains(strings.Split(ls.Environment["SERVICES"], ","), svc) {
			t.Errorf("localstack: SERVICES=%q lacks %s", ls.Environment["SERVICES"], svc)
		}
	}
	if !slices.Contains(c.Services["nats"].Command, "-js") {
		t.Errorf("nats: command %q does not enable JetStream (-js)", c.Services["nats"].Command)
	}
	// The NATS image runs the version the tests use.
	natsVersion := strings.TrimPrefix(makefileVar(t, "NATS_VERSION"), "v")
	if img := c.Services["nats"].Image; !strings.HasPrefix(img, "nats:"+natsVersion) {
		t.Errorf("nats: image %s, want nats:%s (the Makefile's NATS_VERSION)", img, natsVersion)
	}

	for _, role := range sedimentRoles {
		s, ok := c.Services[role]
		if !ok {
			continue
		}
		if s.Build == nil || s.Build.Dockerfile == "" {
			t.Errorf("%s: no build with a dockerfile", role)
		} else if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
			t.Errorf("%s: dockerfile: %v", role, err)
		}
		if target, n := flagValue(s.Command, "target"); n != 1 || target != role {
			t.Errorf("%s: command %q: want exactly one -target=%s", role, s.Command, role)
		}
		env := s.Environment
		if h, _, _ := net.SplitHostPort(env["SEDIMENT_OBJECTSTORE_ENDPOINT"]); h != "minio" {
			t.Errorf("%s: object store endpoint %q is not the minio service", role, env["SEDIMENT_OBJECTSTORE_ENDPOINT"])
		}
		if u := env["SEDIMENT_MANIFEST_NATS_URL"]; !strings.HasPrefix(u, "nats://nats:") {
			t.Errorf("%s: NATS URL %q is not the nats service", role, u)
		}
		if !strings.Contains(c.Services["minio-init"].Command[0], "local/"+env["SEDIMENT_OBJECTSTORE_BUCKET"]) {
			t.Errorf("%s: bucket %q is not the one minio-init creates", role, env["SEDIMENT_OBJECTSTORE_BUCKET"])
		}
		_, httpPort, _ := net.SplitHostPort(env["SEDIMENT_HTTP_LISTEN_ADDRESS"])
		if hc := s.Healthcheck; hc != nil && len(hc.Test) >= 3 {
			if want := "http://127.0.0.1:" + httpPort + "/ready"; hc.Test[2] != want {
				t.Errorf("%s: healthcheck %q, want the probe of %s", role, hc.Test, want)
			}
		} else {
			t.Errorf("%s: healthcheck %v, want [CMD probe URL]", role, hc)
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+env["SEDIMENT_DATA_DIR"]) }) {
			t.Errorf("%s: no volume on its data dir %s", role, env["SEDIMENT_DATA_DIR"])
		}
	}
	ingest := c.Services["ingest"]
	if ingest.DependsOn["nats"].Condition != "service_healthy" || ingest.DependsOn["minio-init"].Condition != "service_completed_successfully" {
		t.Errorf("ingest: depends_on %v, want a healthy nats and a created bucket", ingest.DependsOn)
	}
	for _, role := range []string{"compactor", "frontend"} {
		if c.Services[role].DependsOn["ingest"].Condition != "service_healthy" {
			t.Errorf("%s: does not wait for a healthy ingest node", role)
		}
	}
	if !slices.ContainsFunc(c.Services["frontend"].Ports, func(p string) bool { return strings.HasSuffix(p, ":9042") }) {
		t.Errorf("frontend: CQL port 9042 not published: %q", c.Services["frontend"].Ports)
	}
}

// dockerStage is one FROM of a Dockerfile with its instructions.
type dockerStage struct {
	base, name string
	instrs     [][2]string // instruction (upper case), arguments
}

// parseDockerfile splits a Dockerfile into stages, joining continued lines.
func parseDockerfile(b []byte) ([]dockerStage, error) {
	var stages []dockerStage
	var line strings.Builder
	for raw := range strings.SplitSeq(string(b), "\n") {
		s := strings.TrimSpace(raw)
		if line.Len() == 0 && (s == "" || strings.HasPrefix(s, "#")) {
			continue
		}
		if rest, ok := strings.CutSuffix(s, "\\"); ok {
			line.WriteString(rest + " ")
			continue
		}
		line.WriteString(s)
		instr, args, _ := strings.Cut(line.String(), " ")
		line.Reset()
		instr, args = strings.ToUpper(instr), strings.TrimSpace(args)
		if instr == "FROM" {
			f := strings.Fields(args)
			st := dockerStage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("bad FROM %q", args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("%s before FROM", instr)
		}
		st := &stages[len(stages)-1]
		st.instrs = append(st.instrs, [2]string{instr, args})
	}
	return stages, nil
}

func (s dockerStage) args(instr string) []string {
	var out []string
	for _, in := range s.instrs {
		if in[0] == instr {
			out = append(out, in[1])
		}
	}
	return out
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := parseDockerfile(b)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a final one", len(stages))
	}
	for _, st := range stages {
		if st.base != "scratch" {
			if err := checkPinned(st.base); err != nil {
				t.Errorf("FROM %v", err)
			}
		}
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.base, "golang:") || build.name == "" {
		t.Errorf("first stage FROM %s AS %q, want a named golang build stage", build.base, build.name)
	}
	if !slices.Contains(build.args("ENV"), "CGO_ENABLED=0") {
		t.Errorf("build stage: no ENV CGO_ENABLED=0: the binary would not be static")
	}
	if !slices.ContainsFunc(build.args("RUN"), func(r string) bool { return strings.Contains(r, "go build") && strings.Contains(r, "./cmd/sediment") }) {
		t.Errorf("build stage: does not go build ./cmd/sediment")
	}
	if final.base != "scratch" && !strings.HasPrefix(final.base, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want distroless static or scratch", final.base)
	}
	users := final.args("USER")
	if len(users) == 0 {
		t.Errorf("final stage: no USER: the container would run as root")
	} else if u, _, _ := strings.Cut(users[len(users)-1], ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("final stage: USER %s is root", users[len(users)-1])
	}
	var exposed []string
	for _, e := range final.args("EXPOSE") {
		exposed = append(exposed, strings.Fields(e)...)
	}
	for _, p := range []string{"9042", "9180"} {
		if !slices.Contains(exposed, p) {
			t.Errorf("final stage: EXPOSE %q lacks %s", exposed, p)
		}
	}
	var copied []string
	for _, cp := range final.args("COPY") {
		f := strings.Fields(cp)
		if !slices.Contains(f, "--from="+build.name) {
			continue
		}
		for _, src := range f[:len(f)-1] {
			if !strings.HasPrefix(src, "--") {
				copied = append(copied, path.Base(src))
			}
		}
	}
	// The final stage has the binary and the probe compose's healthchecks run.
	for _, bin := range []string{"sediment", "healthcheck"} {
		if !slices.Contains(copied, bin) {
			t.Errorf("final stage: %s not copied from the build stage (copied %q)", bin, copied)
		}
	}
	if ep := final.args("ENTRYPOINT"); len(ep) != 1 || !strings.Contains(ep[0], "/sediment\"") {
		t.Errorf("final stage: ENTRYPOINT %q, want the sediment binary", ep)
	}
}

func TestParseDockerfileRejects(t *testing.T) {
	for _, bad := range []string{
		"RUN echo before any FROM\n",
		"FROM golang:1.26 build\n",
	} {
		if _, err := parseDockerfile([]byte(bad)); err == nil {
			t.Errorf("parseDockerfile(%q): no error", bad)
		}
	}
	for _, img := range []string{"nats", "nats:latest", "Nats:2"} {
		if checkPinned(img) == nil {
			t.Errorf("checkPinned(%q): no error", img)
		}
	}
}

// TestComposeSedimentConfig loads each Sediment service's environment and
// command with the sediment binary (-config.print), so that a misspelt flag,
// variable or value fails here rather than in a container.
func TestComposeSedimentConfig(t *testing.T) {
	bin := sedimentBinary(t)
	help, _ := exec.Command(bin, "-help").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9.-]+)`).FindAllSubmatch(help, -1) {
		name := string(m[1])
		flags["SEDIMENT_"+strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(name))] = true
	}
	if !flags["SEDIMENT_TARGET"] {
		t.Fatalf("no flags found in sediment -help:\n%s", help)
	}
	c := loadCompose(t)
	for _, role := range sedimentRoles {
		s := c.Services[role]
		env := []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range s.Environment {
			if !flags[k] {
				t.Errorf("%s: environment %s is no flag's variable", role, k)
			}
			env = append(env, k+"="+v)
		}
		cmd := exec.Command(bin, append(slices.Clone(s.Command), "-config.print")...)
		cmd.Env = env
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: sediment %q with its environment: %v\n%s", role, s.Command, err, out)
			continue
		}
		if !bytes.Contains(out, []byte("\ntarget: "+role+"\n")) && !bytes.HasPrefix(out, []byte("target: "+role+"\n")) {
			t.Errorf("%s: effective configuration has another target:\n%s", role, out)
		}
		if !bytes.Contains(out, []byte("backend: minio")) {
			t.Errorf("%s: effective configuration does not use MinIO:\n%s", role, out)
		}
	}
}

// sedimentBinary builds cmd/sediment, or returns $SEDIMENT_BIN when set.
func sedimentBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SEDIMENT_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "sediment")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/sediment").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ../cmd/sediment: %v\n%s", err, out)
	}
	return bin
}
