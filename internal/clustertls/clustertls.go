// Package clustertls holds the cluster's mutual-TLS identity: a CA that
// signs every process of the cluster, and this process's certificate and
// key. Every internal server (the ingest RPC, the HTTP endpoints when asked)
// requires a client certificate signed by the CA, and every internal client
// presents its certificate and accepts only servers signed by the CA.
//
// The files are read again when they change (their size or modification
// time), checked at each new connection, so that rotating a certificate or
// the CA needs no restart: connections already open keep the identity they
// were made with, new ones get the new files. A rotation that leaves the
// files inconsistent for a moment (a certificate written before its key)
// keeps the last good identity and logs why.
//
// The CA is the boundary of trust: any certificate it signed is a member of
// the cluster, whatever host it names, so that one certificate can serve an
// autoscaling group whose addresses are not known in advance. Use a CA for
// this cluster alone.
package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Config names the files of the cluster's TLS identity. All three are set,
// or none (then internal traffic is plain TCP, as in the all-in-one mode on
// loopback).
type Config struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// RegisterFlags registers the flags under "cluster.tls-".
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	const p = "cluster.tls-"
	f.StringVar(&c.CAFile, p+"ca-file", "", "PEM file of the cluster CA: internal servers (ingest RPC) accept only clients it signed, internal clients only servers it signed. With -cluster.tls-cert-file and -cluster.tls-key-file; reloaded when it changes.")
	f.StringVar(&c.CertFile, p+"cert-file", "", "PEM certificate (chain) of this process, signed by the cluster CA, for both server and client authentication; reloaded when it changes.")
	f.StringVar(&c.KeyFile, p+"key-file", "", "PEM private key of -cluster.tls-cert-file; reloaded when it changes.")
}

// Enabled reports whether the files are configured.
func (c *Config) Enabled() bool { return c.CAFile != "" }

// Validate checks that all three files are named, or none.
func (c *Config) Validate() error {
	if (c.CAFile == "") != (c.CertFile == "") || (c.CAFile == "") != (c.KeyFile == "") {
		return errors.New("config: set all of -cluster.tls-ca-file, -cluster.tls-cert-file and -cluster.tls-key-file, or none")
	}
	return nil
}

// Identity is the loaded identity, reloaded when its files change. It is
// safe for concurrent use.
type Identity struct {
	cfg    Config
	logger *slog.Logger

	mu    sync.Mutex
	stamp [3]fileStamp
	cert  *tls.Certificate
	pool  *x509.CertPool
	// bad is the state of the files that last failed to load, tried again
	// only once they change again.
	bad [3]fileStamp
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	size int64
	mod  time.Time
}

// Load reads the files of cfg, which must be enabled.
func Load(cfg Config, logger *slog.Logger) (*Identity, error) {
	if logger == nil {
		logger = slog.Default()
	}
	id := &Identity{cfg: cfg, logger: logger.With("component", "clustertls")}
	stamp, err := id.stamps()
	if err != nil {
		return nil, err
	}
	if err := id.reload(stamp); err != nil {
		return nil, err
	}
	return id, nil
}

// stamps returns the files' sizes and modification times.
func (id *Identity) stamps() ([3]fileStamp, error) {
	var stamp [3]fileStamp
	for i, name := range id.files() {
		fi, err := os.Stat(name)
		if err != nil {
			return stamp, fmt.Errorf("clustertls: %w", err)
		}
		stamp[i] = fileStamp{fi.Size(), fi.ModTime()}
	}
	return stamp, nil
}

func (id *Identity) files() [3]string {
	return [3]string{id.cfg.CAFile, id.cfg.CertFile, id.cfg.KeyFile}
}

// reload reads the files again. id.mu is held, or id is not shared yet.
func (id *Identity) reload(stamp [3]fileStamp) error {
	caPEM, err := os.ReadFile(id.cfg.CAFile)
	if err != nil {
		return fmt.Errorf("clustertls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("clustertls: %s holds no PEM certificate", id.cfg.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(id.cfg.CertFile, id.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("clustertls: %w", err)
	}
	id.stamp, id.cert, id.pool = stamp, &cert, pool
	return nil
}

// current returns the identity, read again first if a file changed. A
// failed reload keeps the previous identity: a rotation in progress may
// have written one file and not yet the other.
func (id *Identity) current() (*tls.Certificate, *x509.CertPool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	stamp, err := id.stamps()
	if stamp == id.stamp || stamp == id.bad {
		return id.cert, id.pool
	}
	if err == nil {
		err = id.reload(stamp)
	}
	if err != nil {
		id.bad = stamp
		id.logger.Warn("cluster TLS files changed but do not load; keeping the previous certificates until they change again", "err", err)
	} else {
		id.logger.Info("cluster TLS files reloaded", "cert", id.cfg.CertFile, "not_after", id.cert.Leaf.NotAfter)
	}
	return id.cert, id.pool
}

// Server returns the configuration of a new server connection: it
// presents this process's certificate and requires a client certificate
// signed by the CA. Call it for each connection, so that each gets the
// current files.
func (id *Identity) Server() *tls.Config {
	cert, pool := id.current()
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{*cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}
}

// Client returns the configuration of a new client connection: it presents
// this process's certificate and accepts a server whose chain leads to the
// CA, whatever host name its certificate names (see the package comment).
func (id *Identity) Client() *tls.Config {
	cert, pool := id.current()
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{*cert},
		// The standard verification also checks the host name, which a
		// cluster certificate does not carry; VerifyConnection checks the
		// chain against the CA instead.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("clustertls: the server presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			return err
		},
	}
}
