package conversion

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/internal/conversion/managed"
	"github.com/kopf-go/kopf/internal/selfsigned"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

const (
	group   = "kopf.dev"
	hookURL = "https://127.0.0.1:1/convert"
	timeout = 20 * time.Second
)

// caBundle is a CA's PEM, as a development run's self-signed one: the API
// server stores it and never uses it here.
func caBundle(t *testing.T) []byte {
	t.Helper()
	b, err := selfsigned.Generate([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return b.CA
}

// crds is an administrator's client of the CRDs.
func crds(t *testing.T) apiextensionsclient.Interface {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runs numbers the kinds of newCRD: a test run again (-count) gets a CRD
// of its own, not the one of its last run, which may still be deleted.
var runs atomic.Int32

// kindOf is a kind named after a test, unique in the test binary.
func kindOf(name string) string { return fmt.Sprintf("%s%d", name, runs.Add(1)) }

// newCRD installs a copy of the example's two-version CRD (no conversion)
// under a kind of the test's own, so that tests do not see each other's
// CRDs, waits until discovery serves it (the mapper of Conversions finds
// it there), and deletes it when the test ends.
func newCRD(t *testing.T, kind string) schema.GroupKind {
	t.Helper()
	data, err := os.ReadFile(exampleCRD)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	plural := strings.ToLower(kind) + "s"
	crd.Name = plural + "." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, Singular: strings.ToLower(kind)}
	api := crds(t).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := api.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}) })
	kopftest.Eventually(t, "the CRD "+crd.Name+" is established", timeout, func() bool {
		live, err := api.Get(context.Background(), crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range live.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
	kopftest.Eventually(t, "discovery serves "+kind, timeout, func() bool {
		list, err := discovery.NewDiscoveryClientForConfigOrDie(env.Config).ServerResourcesForGroupVersion(group + "/v2")
		return err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == kind })
	})
	return groupKind(kind)
}

// groupKind is a kind of newCRD's group.
func groupKind(kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }

// crdName is the name of a kind's CRD made by newCRD.
func crdName(gk schema.GroupKind) string { return strings.ToLower(gk.Kind) + "s." + gk.Group }

// get reads a CRD as an administrator.
func get(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := crds(t).ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the CRD %s: %v", name, err)
	}
	return crd
}

// webhookURL is the URL a CRD's conversion points at, "" with none.
func webhookURL(crd *apiextensionsv1.CustomResourceDefinition) string {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.URL == nil {
		return ""
	}
	return *c.Webhook.ClientConfig.URL
}

// patch edits a CRD with a JSON merge patch under a field manager other
// than the operator's: someone's hand edit, or cert-manager's cainjector.
func patch(t *testing.T, name, manager, body string) {
	t.Helper()
	_, err := crds(t).ApiextensionsV1().CustomResourceDefinitions().Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("patch the CRD %s as %s: %v", name, manager, err)
	}
}

// fields is what a field manager owns of a CRD (its managedFields'
// fieldsV1), "" if it owns nothing.
func fields(crd *apiextensionsv1.CustomResourceDefinition, manager string, op metav1.ManagedFieldsOperationType) string {
	var out bytes.Buffer
	for _, f := range crd.ManagedFields {
		if f.Manager == manager && f.Operation == op && f.FieldsV1 != nil {
			out.Write(f.FieldsV1.Raw)
		}
	}
	return out.String()
}

// requests counts what a client sends, seen by a wrapped transport.
type requests struct {
	patches, refused atomic.Int32
	refusedWhat      atomic.Value // string: the last refused request
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap returns a copy of cfg whose requests are counted: PATCHes of CRDs
// (the server-side applies) and answers 403.
func (n *requests) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/customresourcedefinitions/") {
				n.patches.Add(1)
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusForbidden {
				n.refused.Add(1)
				n.refusedWhat.Store(r.Method + " " + r.URL.String())
			}
			return resp, err
		})
	}
	return cfg
}

// conversions is a Conversions of the kinds that reads and writes with
// cfg; the mapper is an administrator's, as the manager's is the
// operator's own in the runner.
func conversions(t *testing.T, cfg *rest.Config, cc admissionregistrationv1.WebhookClientConfig, kinds ...schema.GroupKind) *managed.Conversions {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	return &managed.Conversions{
		Name:         "auto.kopf.dev",
		Kinds:        kinds,
		ClientConfig: cc,
		CRDs:         c,
		Clientset:    cs,
		Mapper:       mapper,
		Ready:        func() error { return nil },
		Identity:     "replica-0",
		Logger:       testr.New(t),
	}
}

// urlConfig is a development run's client config: a URL and a CA bundle.
func urlConfig(t *testing.T) admissionregistrationv1.WebhookClientConfig {
	u := hookURL
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle(t)}
}

// running is a started Conversions.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs c.Start until stop, or the end of the test.
func start(t *testing.T, c *managed.Conversions) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the runnable's context and returns what Start returned; it
// fails the test if Start does not return soon.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

// wait returns what Start returned, once it has (again on later calls).
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(timeout):
		t.Fatal("Start did not return")
		return nil
	}
}

// b64 is bytes as JSON carries them.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
