package selfsigned

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"
)

// The serving certificate is signed by the CA, for every host given, and
// pairs with its key.
func TestGenerate(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b, err := Generate([]string{"localhost", "127.0.0.1", HostK3d}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(b.Cert, b.Key); err != nil {
		t.Fatalf("the certificate and key do not pair: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.CA) {
		t.Fatal("the CA does not parse")
	}
	block, _ := pem.Decode(b.Cert)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", HostK3d} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now.Add(time.Hour)}); err != nil {
			t.Errorf("the certificate does not verify for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "elsewhere.example.com", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("the certificate verifies for a host it was not made for")
	}
}

// Kopf's rules for the local clusters it knows, on the API server's
// certificate.
func TestGuessHost(t *testing.T) {
	tests := []struct {
		name string
		cert *x509.Certificate
		want string
	}{
		{"k3s subject", &x509.Certificate{Subject: pkix.Name{CommonName: "k3s"}}, HostK3d},
		{"k3s organization", &x509.Certificate{Subject: pkix.Name{Organization: []string{"k3s"}}}, HostK3d},
		{"k3s issuer", &x509.Certificate{Issuer: pkix.Name{CommonName: "k3s-server-ca@1700000000"}}, HostK3d},
		{"minikube subject", &x509.Certificate{Subject: pkix.Name{CommonName: "minikube"}}, HostMinikube},
		{"minikube issuer", &x509.Certificate{Issuer: pkix.Name{CommonName: "minikubeCA"}}, HostMinikube},
		{"docker desktop", &x509.Certificate{DNSNames: []string{"kubernetes", "docker-for-desktop"}}, HostDockerDesktop},
		{"another cluster", &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"}}, ""},
		{"no certificate", nil, ""},
	}
	for _, tt := range tests {
		if got := GuessHost(tt.cert); got != tt.want {
			t.Errorf("%s: GuessHost() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
