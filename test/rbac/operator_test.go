package rbac

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// namespaceBase is a name for the test's namespaces: its name's end and
// a number.
func namespaceBase(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	return strings.Trim(name[max(0, len(name)-30):], "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
}

// namespace creates the namespace, and deletes it when the test ends.
func namespace(t *testing.T, name string) string {
	t.Helper()
	testenv.Create(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

// serviceAccount creates a ServiceAccount.
func serviceAccount(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Create(t, admin, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

// token is a token of the ServiceAccount, valid for an hour.
func token(t *testing.T, namespace, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}
	if err := admin.SubResource("token").Create(context.Background(), sa, req); err != nil {
		t.Fatalf("request a token for %s/%s: %v", namespace, name, err)
	}
	return req.Status.Token
}

// kubeconfig writes a kubeconfig file that connects as the ServiceAccount.
func kubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token(t, namespace, name)}
	c.Contexts["operator"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator"}
	c.CurrentContext = "operator"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func ptrTo[T any](v T) *T { return &v }

// runner is the standalone runner running in the test.
type runner struct {
	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan error
	t        *testing.T
}

// startRunner runs the standalone runner with the command line and the
// options until stop is called or the test ends; it must then return nil.
func startRunner(t *testing.T, reg *handlers.Registry, args []string, opts handlers.Options) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{cancel: cancel, done: make(chan error, 1), t: t}
	go func() { r.done <- handlers.Run(ctx, reg, args, handlers.RunOptions{Options: opts}) }()
	t.Cleanup(r.stop)
	return r
}

// stop stops the runner (a graceful stop, as on SIGTERM) and waits for it.
func (r *runner) stop() {
	r.stopOnce.Do(func() {
		r.cancel()
		if err := <-r.done; err != nil {
			r.t.Errorf("the runner returned %v, want nil", err)
		}
	})
}

// eventually polls cond until it holds, or fails the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kopftest.Eventually(t, what, 90*time.Second, cond)
}

// waitFor polls missing until it says nothing is missing, or fails the
// test with what is still missing.
func waitFor(t *testing.T, what string, missing func() string) {
	t.Helper()
	await.NoneMissing(t, what, 90*time.Second, missing)
}

// scrape gets the metrics at addr with the bearer token, and tells whether
// they were served (200). The runner serves them over HTTPS by default,
// with a self-signed certificate unless given one, hence no verification
// here; the token is what the operator's TokenReview and
// SubjectAccessReview ask the API server about.
func scrape(addr, bearer string) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the runner's self-signed certificate
	}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
