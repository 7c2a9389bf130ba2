package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// Config configures the CQL server.
type Config struct {
	// ListenAddress is the host:port of the CQL port.
	ListenAddress string `yaml:"listen_address"`
	// MaxFrameSize bounds a request frame, header included, as Cassandra's
	// native_transport_max_frame_size does; the body is counted compressed,
	// and decompressed it is held to the same bound.
	// The default, 16 MiB, is Cassandra 4's native_transport_max_frame_size:
	// large enough for any sane batch, small enough that the in-flight
	// bounds also bound memory.
	MaxFrameSize int `yaml:"max_frame_size"`
	// MaxConnections bounds open client connections; 0 is no bound.
	MaxConnections int `yaml:"max_connections"`
	// MaxInFlightPerConn bounds the requests of one connection executing
	// at once; past it the server stops reading from the connection.
	MaxInFlightPerConn int `yaml:"max_in_flight_per_conn"`
	// MaxInFlight bounds the requests executing at once on the server.
	MaxInFlight int `yaml:"max_in_flight"`
	// IdleTimeout closes connections without a request for that long;
	// 0 keeps them open (Cassandra's default too).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// Authenticator is "none" (everyone may connect) or "password"
	// (PasswordAuthenticator, checked by the server's Authenticator).
	Authenticator string `yaml:"authenticator"`

	TLS TLSConfig `yaml:"tls"`
}

// TLSConfig enables TLS on the CQL port when CertFile is set.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, makes client certificates signed by one of
	// its CAs required.
	ClientCAFile string `yaml:"client_ca_file"`
}

// DefaultConfig returns the configuration of the flags' defaults.
func DefaultConfig() Config {
	var c Config
	c.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	return c
}

// RegisterFlags registers the configuration's flags, with their defaults,
// in f under the prefix "cql.".
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	const p = "cql."
	f.StringVar(&c.ListenAddress, p+"listen-address", "127.0.0.1:9042", "Address of the CQL native protocol port.")
	f.IntVar(&c.MaxFrameSize, p+"max-frame-size", 16<<20, "Largest request frame in bytes, header included; larger frames are skipped and refused with an Invalid error, as Cassandra does.")
	f.IntVar(&c.MaxConnections, p+"max-connections", 0, "Most client connections at once; 0 is no limit.")
	f.IntVar(&c.MaxInFlightPerConn, p+"max-in-flight-per-conn", 1024, "Most requests of one connection executing at once; past it the server stops reading the connection.")
	f.IntVar(&c.MaxInFlight, p+"max-in-flight", 8192, "Most requests executing at once on this server.")
	f.DurationVar(&c.IdleTimeout, p+"idle-timeout", 0, "Close connections idle for this long; 0 never does.")
	f.StringVar(&c.Authenticator, p+"authenticator", "none", "none: anyone may connect; password: PasswordAuthenticator over the catalog's roles.")
	f.StringVar(&c.TLS.CertFile, p+"tls.cert-file", "", "PEM server certificate; enables TLS on the CQL port.")
	f.StringVar(&c.TLS.KeyFile, p+"tls.key-file", "", "PEM key of the server certificate.")
	f.StringVar(&c.TLS.ClientCAFile, p+"tls.client-ca-file", "", "PEM CAs of required client certificates; empty asks for none.")
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.ListenAddress == "" {
		errs = append(errs, errors.New("cql.listen-address is empty"))
	}
	if c.MaxFrameSize < 1<<10 || c.MaxFrameSize > 1<<31-1 {
		errs = append(errs, fmt.Errorf("cql.max-frame-size %d is not between 1 KiB and 2 GiB", c.MaxFrameSize))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("cql.max-connections %d is negative", c.MaxConnections))
	}
	if c.MaxInFlightPerConn < 1 {
		errs = append(errs, fmt.Errorf("cql.max-in-flight-per-conn %d is less than 1", c.MaxInFlightPerConn))
	}
	if c.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("cql.max-in-flight %d is less than 1", c.MaxInFlight))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("cql.idle-timeout %v is negative", c.IdleTimeout))
	}
	if c.Authenticator != "none" && c.Authenticator != "password" {
		errs = append(errs, fmt.Errorf("cql.authenticator %q is neither none nor password", c.Authenticator))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("cql.tls.cert-file and cql.tls.key-file go together"))
	}
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		errs = append(errs, errors.New("cql.tls.client-ca-file needs cql.tls.cert-file"))
	}
	return errors.Join(errs...)
}

// tlsConfig loads the certificates, or returns nil without TLS.
// aeadSuites are the TLS 1.2 suites offered: ECDHE key exchange (forward
// secrecy) with an AEAD cipher, AES-GCM or ChaCha20-Poly1305. Go's
// defaults still accept CBC suites with SHA-1 (ECDHE-ECDSA-AES128-SHA);
// TLS 1.3's suites are all AEAD and not configurable.
var aeadSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

func (c *TLSConfig) tlsConfig() (*tls.Config, error) {
	if c.CertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("frontend: loading the TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, CipherSuites: aeadSuites}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("frontend: reading the client CAs: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("frontend: no certificate in %s", c.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
