package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/test/testenv"
)

// startWithEnv runs an example as startExample does, with more variables
// in its environment.
func startWithEnv(t *testing.T, name, namespace string, environ []string, flags ...string) *operator {
	t.Helper()
	p, err := testenv.StartProcess(filepath.Join(binDir, name),
		append([]string{"--standalone", "--verbose", "--namespace=" + namespace}, flags...),
		append([]string{"KUBECONFIG=" + kubeconfig}, environ...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		t.Logf("the output of %s:\n%s", name, p.Output())
	})
	return &operator{p}
}

// tlsClient is an HTTPS client that offers HTTP/2 and HTTP/1.1, as
// client-go and Prometheus do, with the client certificate if given. It
// does not check the server's certificate: what is tested is what the
// server accepts and speaks.
func tlsClient(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the server's certificate is not under test
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

// httpsGet sends a GET with the bearer token (if any) and returns the
// response with its body read, or nil if the server does not answer.
func httpsGet(c *http.Client, url, token string) (*http.Response, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, ""
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return httpsDo(c, req)
}

// httpsDo sends the request and returns the response with its body read, or
// nil if the server does not answer.
func httpsDo(c *http.Client, req *http.Request) (*http.Response, string) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, ""
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, ""
	}
	return resp, string(body)
}

// httpProtocol is the HTTP protocol of a response and the one its TLS
// handshake negotiated, e.g. "HTTP/1.1 http/1.1" or "HTTP/2.0 h2".
func httpProtocol(resp *http.Response) string {
	negotiated := ""
	if resp.TLS != nil {
		negotiated = resp.TLS.NegotiatedProtocol
	}
	return resp.Proto + " " + negotiated
}

// accountToken makes a ServiceAccount in the namespace and returns a
// token of it from the TokenRequest API, as a scraper's pod would have.
func accountToken(t *testing.T, namespace, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	testenv.Create(t, env.Client, sa)
	expiry := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	if err := env.Client.SubResource("token").Create(context.Background(), sa, req); err != nil {
		t.Fatalf("request a token for %s/%s: %v", namespace, name, err)
	}
	return req.Status.Token
}

// bindMetricsReader binds a metrics-reader ClusterRole (get on the
// non-resource URL /metrics, as kubebuilder's scaffolds ship it) to the
// account; the role is named after the namespace, so tests do not share
// it.
func bindMetricsReader(t *testing.T, namespace, account string) {
	t.Helper()
	name := "kopf-e2e-metrics-reader-" + namespace
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: account}}}
	testenv.Create(t, env.Client, role, binding)
}

// reviewBody is the JSON of an admission review of the creation of a
// KopfExample with spec.field, padded with an annotation to at least
// size bytes.
func reviewBody(t *testing.T, namespace, name, field string, size int) []byte {
	t.Helper()
	obj := extraAdmissionObject(namespace, name, field, false)
	if size > 0 {
		obj.SetAnnotations(map[string]string{"padding": strings.Repeat("x", size)})
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":       "e2e-" + name,
			"kind":      map[string]any{"group": "kopf.dev", "version": "v1", "kind": "KopfExample"},
			"resource":  map[string]any{"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
			"name":      name,
			"namespace": namespace,
			"operation": "CREATE",
			"userInfo":  map[string]any{"username": "e2e"},
			"object":    json.RawMessage(raw),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// postReview posts a body to the webhook server with the content type.
func postReview(c *http.Client, url, contentType string, body []byte) (*http.Response, string) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, ""
	}
	req.Header.Set("Content-Type", contentType)
	return httpsDo(c, req)
}

// webhookRequests is controller-runtime's count of the webhook server's
// answers with the HTTP code, read from plain-HTTP metrics at the address.
func webhookRequests(at, code string) float64 {
	prefix := fmt.Sprintf(`controller_runtime_webhook_requests_total{code=%q,webhook="/"} `, code)
	for line := range strings.SplitSeq(scrapeMetrics(at), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}

// keyPair is a certificate and its key, in PEM, with what signs others.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// newCertificate makes a certificate for the name, signed by the parent
// (self-signed if nil): a CA, or a leaf for servers at 127.0.0.1 and for
// clients.
func newCertificate(t *testing.T, name string, isCA bool, parent *keyPair) *keyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &keyPair{cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
}

// tlsCertificate is the pair as a client's TLS certificate.
func (k *keyPair) tlsCertificate(t *testing.T) *tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(k.certPEM, k.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// writeFiles writes the files (name: content) into the directory.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
