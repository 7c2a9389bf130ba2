package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/frontend"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Targets are the roles one process can run; "all" runs every one of them.
var Targets = []string{Frontend, Ingest, Compactor}

// Config is the whole configuration of one sediment process: one section per
// component, each with its own flags and validation.
type Config struct {
	Target  string     `yaml:"target"`
	DataDir string     `yaml:"data_dir"`
	Log     LogConfig  `yaml:"log"`
	HTTP    HTTPConfig `yaml:"http"`
	Node    NodeConfig `yaml:"node"`
	// ClusterTLS is the mutual-TLS identity of every internal connection.
	ClusterTLS clustertls.Config `yaml:"cluster_tls"`

	ObjectStore objectstore.Config `yaml:"objectstore"`
	Manifest    manifest.Config    `yaml:"manifest"`
	Ingest      ingest.Config      `yaml:"ingest"`
	GC          gc.Config          `yaml:"gc"`
	Compactor   compactor.Config   `yaml:"compactor"`
	// The frontend's sections keep their top-level keys: cql, cql_batch
	// and cache.
	Frontend frontend.Config `yaml:",inline"`

	// PrintConfig asks for the effective configuration as YAML, then exit.
	PrintConfig bool `yaml:"-"`
}

// RegisterFlags registers every component's flags, with their defaults, on f.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.StringVar(&c.Target, "target", "all", "Comma-separated roles to run: all, or any of "+strings.Join(Targets, ", ")+".")
	f.StringVar(&c.DataDir, "data.dir", "./data", "Directory for local state: commitlogs, the embedded NATS store, the file object store and the disk cache.")
	f.BoolVar(&c.PrintConfig, "config.print", false, "Print the effective configuration as YAML and exit.")
	c.Log.RegisterFlags(f)
	c.HTTP.RegisterFlags(f)
	c.Node.RegisterFlags(f)
	c.ClusterTLS.RegisterFlags(f)
	c.ObjectStore.RegisterFlags(f)
	c.Manifest.RegisterFlags(f)
	c.Ingest.RegisterFlags(f)
	c.GC.RegisterFlags(f)
	c.Compactor.RegisterFlags(f)
	c.Frontend.RegisterFlags(f)
}

// Validate checks every section.
func (c *Config) Validate() error {
	if _, err := c.Roles(); err != nil {
		return err
	}
	if c.DataDir == "" {
		return errors.New("config: -data.dir must not be empty")
	}
	if c.HTTP.TLS && !c.ClusterTLS.Enabled() {
		return errors.New("config: -http.tls needs the -cluster.tls-* files")
	}
	return errors.Join(c.Log.Validate(), c.HTTP.Validate(), c.Node.Validate(), c.ClusterTLS.Validate(), c.ObjectStore.Validate(), c.Manifest.Validate(), c.Ingest.Validate(), c.GC.Validate(), c.Compactor.Validate(), c.Frontend.Validate())
}

// Roles returns the roles named by Target.
func (c *Config) Roles() ([]string, error) {
	var roles []string
	for r := range strings.SplitSeq(c.Target, ",") {
		switch r = strings.TrimSpace(r); {
		case r == "all":
			roles = append(roles, Targets...)
		case slices.Contains(Targets, r):
			roles = append(roles, r)
		default:
			return nil, fmt.Errorf("config: unknown target %q (want all, %s)", r, strings.Join(Targets, ", "))
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles), nil
}

// LogConfig configures the process logger.
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

func (c *LogConfig) RegisterFlags(f *flag.FlagSet) {
	f.StringVar(&c.Level, "log.level", "info", "Log level: debug, info, warn or error.")
	f.StringVar(&c.Format, "log.format", "logfmt", "Log format: logfmt or json.")
}

func (c *LogConfig) Validate() error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.Level)); err != nil {
		return fmt.Errorf("config: -log.level: %w", err)
	}
	if c.Format != "logfmt" && c.Format != "json" {
		return fmt.Errorf("config: -log.format must be logfmt or json, not %q", c.Format)
	}
	return nil
}

// Logger builds the process logger writing to w.
func (c *LogConfig) Logger(w io.Writer) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.Level)) // checked by Validate
	opts := &slog.HandlerOptions{Level: l}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// HTTPConfig configures the HTTP server for metrics and health checks.
type HTTPConfig struct {
	ListenAddress string `yaml:"listen_address"`
	// Pprof serves Go's profiles under /debug/pprof/.
	Pprof bool `yaml:"pprof"`
	// BearerToken, or the content of BearerTokenFile, is required on every
	// endpoint but /healthz. A secret: never on the command line.
	BearerToken     string `yaml:"bearer_token"`
	BearerTokenFile string `yaml:"bearer_token_file"`
	// TLS serves HTTPS with the cluster certificate and requires a client
	// certificate the cluster CA signed on every endpoint but /healthz.
	TLS bool `yaml:"tls"`
}

func (c *HTTPConfig) RegisterFlags(f *flag.FlagSet) {
	f.StringVar(&c.ListenAddress, "http.listen-address", "127.0.0.1:9180", "Address for /metrics, /healthz, /ready and /status; empty disables the HTTP server. Off loopback, protect it with -http.bearer-token-file or -http.tls.")
	f.BoolVar(&c.Pprof, "http.pprof", false, "Serve Go's runtime profiles under /debug/pprof/ (they show memory contents and timings: for diagnosis only).")
	f.StringVar(&c.BearerToken, "http.bearer-token", "", "Token every HTTP request but /healthz must send as 'Authorization: Bearer <token>'. A secret: set $SEDIMENT_HTTP_BEARER_TOKEN or use -http.bearer-token-file; refused on the command line.")
	f.StringVar(&c.BearerTokenFile, "http.bearer-token-file", "", "File holding the token of -http.bearer-token (surrounding white space ignored), read at each request so that a new token applies at once.")
	f.BoolVar(&c.TLS, "http.tls", false, "Serve HTTPS with the -cluster.tls-* certificate and require, on every endpoint but /healthz, a client certificate the cluster CA signed.")
}

func (c *HTTPConfig) Validate() error {
	if c.BearerToken != "" && c.BearerTokenFile != "" {
		return errors.New("config: set -http.bearer-token or -http.bearer-token-file, not both")
	}
	return nil
}

// NodeConfig says how this process appears in the cluster's member list.
// Its ID is not configured here: it is kept in <data.dir>/node-id.
type NodeConfig struct {
	Address           string        `yaml:"address"`
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
}

func (c *NodeConfig) RegisterFlags(f *flag.FlagSet) {
	f.StringVar(&c.Address, "node.address", "", "Address (host:port) announced to the cluster's members, where other nodes reach this one's ingest RPC; empty: -ingest.rpc-address as it listens (then it must name a host), or the HTTP listen address without the ingest role.")
	f.DurationVar(&c.HeartbeatInterval, "node.heartbeat-interval", 5*time.Second, "Time between the node's heartbeats in the member list.")
}

func (c *NodeConfig) Validate() error {
	if c.HeartbeatInterval <= 0 {
		return errors.New("config: -node.heartbeat-interval must be positive")
	}
	if c.Address != "" {
		if _, _, err := net.SplitHostPort(c.Address); err != nil {
			return fmt.Errorf("config: -node.address: %w", err)
		}
	}
	return nil
}

// configFileFlag names the YAML file read before the command line.
const configFileFlag = "config.file"

// Load fills c from, in rising precedence: the flag defaults, the YAML file
// named by -config.file, environment variables (SEDIMENT_ followed by the flag
// name in upper case with '.' and '-' as '_', the way to pass secrets), and
// the command-line flags. Unknown YAML keys are errors.
func (c *Config) Load(args []string, getenv func(string) string) error {
	f := flag.NewFlagSet("sediment", flag.ContinueOnError)
	f.SetOutput(io.Discard)
	c.RegisterFlags(f)
	var file string
	f.StringVar(&file, configFileFlag, "", "YAML configuration file; flags and environment variables override it.")

	if err := checkRenamed(args, getenv); err != nil {
		return err
	}
	if err := checkSecrets(args); err != nil {
		return err
	}
	// A first pass over the command line finds the file without applying
	// the other flags, which must win over it.
	if err := f.Parse(args); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if file != "" {
		if err := c.loadYAML(file); err != nil {
			return err
		}
	}
	var errs []error
	f.VisitAll(func(fl *flag.Flag) {
		if v := getenv(EnvName(fl.Name)); v != "" {
			if err := f.Set(fl.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("config: $%s: %w", EnvName(fl.Name), err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := f.Parse(args); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if f.NArg() > 0 {
		return fmt.Errorf("config: unexpected argument %q", f.Arg(0))
	}
	// Local state defaults to places under the data directory.
	if c.ObjectStore.Dir == "" {
		c.ObjectStore.Dir = filepath.Join(c.DataDir, "objects")
	}
	if c.Manifest.EmbeddedDir == "" {
		c.Manifest.EmbeddedDir = filepath.Join(c.DataDir, "nats")
	}
	if c.Ingest.Commitlog.Dir == "" {
		c.Ingest.Commitlog.Dir = filepath.Join(c.DataDir, "commitlog")
	}
	return nil
}

func (c *Config) loadYAML(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var keys map[string]yaml.Node
	if err := yaml.Unmarshal(data, &keys); err == nil {
		for old, now := range renamedYAMLKeys {
			if _, ok := keys[old]; ok {
				return fmt.Errorf("config: %s: the section %s is now called %s", file, old, now)
			}
		}
	}
	d := yaml.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	if err := d.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config: %s: %w", file, err)
	}
	return nil
}

// renamedFlags maps the flags that were renamed to their new names, and
// renamedYAMLKeys the top-level YAML sections: the old spellings are
// refused with a message naming the new one.
var (
	renamedFlags = map[string]string{
		"compaction.workers":       "compactor.workers",
		"compaction.ack-wait":      "compactor.ack-wait",
		"compaction.read-ahead":    "compactor.read-ahead",
		"compaction.plan-interval": "compactor.plan-interval",
		"compaction.job-timeout":   "compactor.job-timeout",
	}
	renamedYAMLKeys = map[string]string{"compaction": "compactor"}
)

// checkRenamed refuses renamed flags on the command line and in the
// environment.
func checkRenamed(args []string, getenv func(string) string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if now, ok := renamedFlags[name]; ok && strings.HasPrefix(a, "-") {
			return fmt.Errorf("config: -%s is now -%s", name, now)
		}
	}
	for old, now := range renamedFlags {
		if getenv(EnvName(old)) != "" {
			return fmt.Errorf("config: $%s is now $%s", EnvName(old), EnvName(now))
		}
	}
	return nil
}

// secretFlags are the flags whose values are secrets. They are refused on
// the command line, which every user of the machine can read (ps,
// /proc/<pid>/cmdline, /debug/pprof/cmdline): the environment, the YAML
// file or a -*-file flag carries them instead, and -config.print redacts
// them.
var secretFlags = []string{"objectstore.secret-access-key", "http.bearer-token", "manifest.nats-password", "cql.auth.superuser-password"}

// checkSecrets refuses secretFlags on the command line.
func checkSecrets(args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if slices.Contains(secretFlags, name) && strings.HasPrefix(a, "-") {
			return fmt.Errorf("config: -%s carries a secret and is refused on the command line, which others can read: set $%s or put it in the -config.file", name, EnvName(name))
		}
	}
	return nil
}

// EnvName is the environment variable that sets the flag name.
func EnvName(flagName string) string {
	return "SEDIMENT_" + strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(flagName))
}

// printConfig writes cfg as YAML with its secrets (secretFlags) redacted.
func printConfig(w io.Writer, cfg Config) error {
	for _, s := range []*string{&cfg.ObjectStore.SecretAccessKey, &cfg.HTTP.BearerToken, &cfg.Manifest.Password, &cfg.Frontend.Auth.SuperuserPassword} {
		if *s != "" {
			*s = "<redacted>"
		}
	}
	out, err := yaml.Marshal(&cfg)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// Usage prints the flags and their defaults.
func Usage(w io.Writer) {
	f := flag.NewFlagSet("sediment", flag.ContinueOnError)
	var c Config
	c.RegisterFlags(f)
	f.String(configFileFlag, "", "YAML configuration file; flags and environment variables override it.")
	f.SetOutput(w)
	fmt.Fprintf(w, "Usage: sediment [flags]\n\nEvery flag can also be set in the YAML file given by -config.file, or by\nthe environment variable SEDIMENT_<FLAG> (for example -log.level as\nSEDIMENT_LOG_LEVEL); flags win over the environment, which wins over YAML.\n\n")
	f.PrintDefaults()
}
