package manifest

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// redactURL replaces the passwords in a comma-separated list of NATS URLs.
func redactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// Config configures the manifest's connection to NATS.
type Config struct {
	// ClusterName prefixes every bucket, so clusters can share a NATS.
	ClusterName string `yaml:"cluster_name"`
	// NATSURL lists the servers of an external NATS; empty starts an
	// embedded one storing under EmbeddedDir.
	NATSURL string `yaml:"nats_url"`
	// EmbeddedDir is the embedded server's JetStream directory (default
	// <data.dir>/nats); EmbeddedPort its port on 127.0.0.1 (0: any free one).
	EmbeddedDir  string `yaml:"embedded_dir"`
	EmbeddedPort int    `yaml:"embedded_port"`
	// CredentialsFile is a NATS .creds file (JWT and NKey seed).
	CredentialsFile string `yaml:"credentials_file"`
	// NKeySeedFile holds the NKey seed of this process's NATS user.
	NKeySeedFile string `yaml:"nkey_seed_file"`
	// User and Password, or the content of PasswordFile, authenticate to
	// an external NATS. Password is a secret: never on the command line.
	User         string `yaml:"nats_user"`
	Password     string `yaml:"nats_password"`
	PasswordFile string `yaml:"nats_password_file"`
	// TLS to an external NATS: a CA to trust, and a client certificate.
	TLSCAFile   string `yaml:"tls_ca_file"`
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// ConnectTimeout bounds the first connection; after it the client
	// reconnects forever, since the catalog is needed for the node's life.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	ReconnectWait  time.Duration `yaml:"reconnect_wait"`
	// MaxAttempts bounds the compare-and-set attempts of one change.
	MaxAttempts int `yaml:"max_attempts"`
	// Replicas of the catalog's buckets (Options.Replicas).
	Replicas int `yaml:"replicas"`
}

// RegisterFlags registers the configuration's flags, with their defaults, in
// f under the prefix "manifest.".
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	const p = "manifest."
	f.StringVar(&c.ClusterName, p+"cluster-name", "sediment", "Cluster name; prefixes the NATS KV buckets (letters, digits, '-').")
	f.StringVar(&c.NATSURL, p+"nats-url", "", "NATS server URLs, comma-separated; empty starts an embedded NATS server.")
	f.StringVar(&c.EmbeddedDir, p+"embedded-dir", "", "JetStream directory of the embedded NATS server (default <data.dir>/nats).")
	f.IntVar(&c.EmbeddedPort, p+"embedded-port", 4222, "Port of the embedded NATS server on 127.0.0.1 (0: any free port).")
	f.StringVar(&c.CredentialsFile, p+"credentials-file", "", "NATS credentials (.creds) file for an external NATS.")
	f.StringVar(&c.NKeySeedFile, p+"nkey-seed-file", "", "File holding the NKey seed of this process's user on an external NATS.")
	f.StringVar(&c.User, p+"nats-user", "", "User name on an external NATS, with -manifest.nats-password-file (or $SEDIMENT_MANIFEST_NATS_PASSWORD). To join an all-in-one node's embedded NATS: "+EmbeddedUser+", with its <data.dir>/nats/password.")
	f.StringVar(&c.Password, p+"nats-password", "", "Password of -manifest.nats-user. A secret: set $SEDIMENT_MANIFEST_NATS_PASSWORD or use -manifest.nats-password-file; refused on the command line.")
	f.StringVar(&c.PasswordFile, p+"nats-password-file", "", "File holding the password of -manifest.nats-user (surrounding white space ignored).")
	f.StringVar(&c.TLSCAFile, p+"tls-ca-file", "", "CA certificate file to verify the NATS servers.")
	f.StringVar(&c.TLSCertFile, p+"tls-cert-file", "", "Client certificate file for NATS TLS.")
	f.StringVar(&c.TLSKeyFile, p+"tls-key-file", "", "Client key file for NATS TLS.")
	f.DurationVar(&c.ConnectTimeout, p+"connect-timeout", 10*time.Second, "Deadline of the first connection to NATS.")
	f.DurationVar(&c.ReconnectWait, p+"reconnect-wait", time.Second, "Pause between reconnection attempts to NATS.")
	f.IntVar(&c.MaxAttempts, p+"max-attempts", 64, "Compare-and-set attempts of one catalog change before it fails.")
	f.IntVar(&c.Replicas, p+"replicas", 1, "Replicas of the catalog's KV buckets in NATS: 3 in a NATS cluster that must survive the loss of a server (as -ingest.log.replicas).")
}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	var errs []error
	if !clusterNameRE.MatchString(c.ClusterName) {
		errs = append(errs, fmt.Errorf("manifest: cluster name %q must be 1-64 letters, digits or '-'", c.ClusterName))
	}
	embedded := c.NATSURL == ""
	if embedded && (c.CredentialsFile != "" || c.NKeySeedFile != "" || c.User != "" || c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "") {
		errs = append(errs, errors.New("manifest: credentials and TLS options apply to an external NATS (-manifest.nats-url)"))
	}
	if embedded && c.EmbeddedDir == "" {
		errs = append(errs, errors.New("manifest: the embedded NATS needs -manifest.embedded-dir"))
	}
	if c.EmbeddedPort < 0 || c.EmbeddedPort > 65535 {
		errs = append(errs, fmt.Errorf("manifest: embedded port %d is outside [0, 65535]", c.EmbeddedPort))
	}
	if (c.Password != "" || c.PasswordFile != "") && c.User == "" {
		errs = append(errs, errors.New("manifest: a NATS password needs -manifest.nats-user"))
	}
	if c.Password != "" && c.PasswordFile != "" {
		errs = append(errs, errors.New("manifest: set -manifest.nats-password or -manifest.nats-password-file, not both"))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("manifest: set both or neither of -manifest.tls-cert-file and -manifest.tls-key-file"))
	}
	if c.ConnectTimeout <= 0 || c.ReconnectWait <= 0 {
		errs = append(errs, errors.New("manifest: connect timeout and reconnect wait must be positive"))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("manifest: replicas %d outside [1, 5]", c.Replicas))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("manifest: max attempts %d is below 1", c.MaxAttempts))
	}
	return errors.Join(errs...)
}

// Options returns the options Open takes from the configuration.
func (c *Config) Options() Options {
	return Options{MaxAttempts: c.MaxAttempts, Replicas: c.Replicas}
}

// Connect dials NATS at url (an embedded server's URL when NATSURL is
// empty) with the configured credentials and TLS, reconnecting forever.
// An error never shows the URL's password.
func (c *Config) Connect(url string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("sediment"),
		nats.Timeout(c.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(c.ReconnectWait),
		nats.RetryOnFailedConnect(false),
	}
	if c.CredentialsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredentialsFile))
	}
	if c.NKeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("manifest: -manifest.nkey-seed-file: %w", err)
		}
		opts = append(opts, opt)
	}
	if c.User != "" {
		password := c.Password
		if c.PasswordFile != "" {
			data, err := os.ReadFile(c.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("manifest: -manifest.nats-password-file: %w", err)
			}
			password = strings.TrimSpace(string(data))
		}
		opts = append(opts, nats.UserInfo(c.User, password))
	}
	if c.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(c.TLSCAFile))
	}
	if c.TLSCertFile != "" {
		opts = append(opts, nats.ClientCert(c.TLSCertFile, c.TLSKeyFile))
	}
	if url == "" {
		url = c.NATSURL
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("manifest: connect to NATS at %s: %w", redactURL(url), err)
	}
	return nc, nil
}
