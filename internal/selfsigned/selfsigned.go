// Package selfsigned makes the certificates of a webhook server in
// development, as Kopf's WebhookServer does when it is given none: a CA of
// its own and a serving certificate for the hosts the API server may use,
// and it guesses that host for the local clusters Kopf knows (K3d/K3s,
// Minikube, Docker Desktop) from the API server's own certificate.
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// validity is how long the certificates are valid: a development run.
const validity = 365 * 24 * time.Hour

// Bundle is a CA and a serving certificate it signed, PEM-encoded.
type Bundle struct {
	CA, Cert, Key []byte
}

// Generate makes a CA and a serving certificate for the hosts (DNS names
// or IP addresses), valid from now.
func Generate(hosts []string, now time.Time) (Bundle, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("generate the CA's key: %w", err)
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kopf-go self-signed CA", Organization: []string{"kopf-go"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("sign the CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("generate the server's key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: firstOr(hosts, "localhost"), Organization: []string{"kopf-go"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else if h != "" {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("sign the server's certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Bundle{}, fmt.Errorf("encode the server's key: %w", err)
	}
	return Bundle{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func firstOr(hosts []string, def string) string {
	for _, h := range hosts {
		if h != "" {
			return h
		}
	}
	return def
}

// Hosts the local clusters reach their host machine at.
const (
	HostK3d           = "host.k3d.internal"
	HostMinikube      = "host.minikube.internal"
	HostDockerDesktop = "host.docker.internal"
)

// GuessHost tells, from the API server's certificate, the host name at
// which a local cluster reaches the machine the operator runs on, as
// Kopf's WebhookAutoServer does; "" if the cluster is none it knows.
func GuessHost(apiServer *x509.Certificate) string {
	if apiServer == nil {
		return ""
	}
	subject, issuer := apiServer.Subject, apiServer.Issuer
	switch {
	case subject.CommonName == "k3s" || slices.Contains(subject.Organization, "k3s") || strings.HasPrefix(issuer.CommonName, "k3s-"):
		return HostK3d
	case subject.CommonName == "minikube" || issuer.CommonName == "minikubeCA":
		return HostMinikube
	case slices.Contains(apiServer.DNSNames, "docker-for-desktop"):
		return HostDockerDesktop
	}
	return ""
}
