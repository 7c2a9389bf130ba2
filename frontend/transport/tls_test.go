package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCert makes a self-signed certificate for 127.0.0.1, usable as its
// own CA, and writes it and its key as PEM files in dir.
func testCert(t *testing.T, dir, name string) (tls.Certificate, *x509.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := x509.ParseCertificate(der)
	return pair, parsed, certFile, keyFile
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	_, serverCert, certFile, keyFile := testCert(t, dir, "server")
	clientPair, _, clientCA, _ := testCert(t, dir, "client")
	roots := x509.NewCertPool()
	roots.AddCert(serverCert)

	for _, requireClient := range []bool{false, true} {
		cfg := testConfig()
		cfg.TLS = TLSConfig{CertFile: certFile, KeyFile: keyFile}
		if requireClient {
			cfg.TLS.ClientCAFile = clientCA
		}
		_, addr := startServer(t, cfg, newTestHandler(), nil)
		connect := func(certs []tls.Certificate) (*client, error) {
			nc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, Certificates: certs})
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { nc.Close() })
			return &client{t: t, nc: nc, v: 4}, nc.Handshake()
		}
		c, err := connect([]tls.Certificate{clientPair})
		if err != nil {
			t.Fatal(err)
		}
		c.startup(nil)
		if requireClient {
			// TLS 1.3 reports a refused client certificate on the first read.
			c, err := connect(nil)
			if err == nil {
				c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = c.nc.Read(make([]byte, 1))
			}
			if err == nil {
				t.Fatal("a client without a certificate was served")
			}
		}
	}
	bad := testConfig()
	bad.TLS = TLSConfig{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: keyFile}
	if _, err := New(bad, newTestHandler(), Options{}); err == nil {
		t.Fatal("a missing certificate was accepted")
	}
}

// TestTLSOffersOnlyAEAD: over TLS 1.2 the server agrees only to ECDHE
// suites with an AEAD cipher; the CBC-SHA suites Go would accept by
// default are refused, and TLS 1.3 (all AEAD) is served.
func TestTLSOffersOnlyAEAD(t *testing.T) {
	dir := t.TempDir()
	_, serverCert, certFile, keyFile := testCert(t, dir, "server")
	roots := x509.NewCertPool()
	roots.AddCert(serverCert)
	cfg := testConfig()
	cfg.TLS = TLSConfig{CertFile: certFile, KeyFile: keyFile}
	_, addr := startServer(t, cfg, newTestHandler(), nil)
	handshake := func(version uint16, suite uint16) error {
		c := &tls.Config{RootCAs: roots, MinVersion: version, MaxVersion: version}
		if suite != 0 {
			c.CipherSuites = []uint16{suite}
		}
		nc, err := tls.Dial("tcp", addr, c)
		if err == nil {
			nc.Close()
		}
		return err
	}
	for _, suite := range []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	} {
		if err := handshake(tls.VersionTLS12, suite); err != nil {
			t.Errorf("TLS 1.2 %s refused: %v", tls.CipherSuiteName(suite), err)
		}
	}
	for _, suite := range []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	} {
		if err := handshake(tls.VersionTLS12, suite); err == nil {
			t.Errorf("TLS 1.2 %s accepted", tls.CipherSuiteName(suite))
		}
	}
	if err := handshake(tls.VersionTLS13, 0); err != nil {
		t.Errorf("TLS 1.3 refused: %v", err)
	}
	if err := handshake(tls.VersionTLS11, 0); err == nil {
		t.Error("TLS 1.1 accepted")
	}
}
