package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Which web configurations make every request authenticate, the condition
// under which --ui.secret-page defaults to on: basic auth users, or client
// certificates verified against a CA. TLS alone, a client certificate asked
// for but not required or not verified, or no file at all: no.
func TestWebConfigAuthenticates(t *testing.T) {
	dir := t.TempDir()
	writeSelfSigned(t, dir)
	for _, c := range []struct {
		name, yaml string
		want       bool
	}{
		{"basic auth", "basic_auth_users:\n  prom: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n", true},
		{"tls only", "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n", false},
		{"client cert verified", "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  client_ca_file: tls.crt\n  client_auth_type: RequireAndVerifyClientCert\n", true},
		{"client cert if given", "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  client_ca_file: tls.crt\n  client_auth_type: VerifyClientCertIfGiven\n", false},
		{"any client cert, unverified", "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  client_auth_type: RequireAnyClientCert\n", false},
		{"headers only", "http_server_config:\n  headers:\n    X-Frame-Options: deny\n", false},
	} {
		p := filepath.Join(dir, "web.yml")
		if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := WebConfigAuthenticates(p)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if got, err := WebConfigAuthenticates(""); got || err != nil {
		t.Errorf("no file: %v, %v", got, err)
	}
	p := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(p, []byte("basic_auth_user:\n  prom: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WebConfigAuthenticates(p); err == nil {
		t.Error("a misspelt key: no error")
	}
}

func writeSelfSigned(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
