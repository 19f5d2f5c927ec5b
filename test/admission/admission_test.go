package admission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.uber.org/goleak"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/test/testenv"

	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/filter"
)

const managed = "auto.kopf.dev"

// warnings collects the API server's warnings to a client.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// dryRuns records what the handlers were told about dry runs, by object.
type dryRuns struct {
	mu sync.Mutex
	m  map[string]bool
}

func (d *dryRuns) set(name string, v bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m[name] = v
}

func (d *dryRuns) get(name string) (bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[name]
	return v, ok
}

// registry is the operator under test: the handlers of Kopf's example
// 17-admission, and a typed one.
func registry(seen *dryRuns) *handlers.Registry {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnValidate(kex, "validate2", func(context.Context, *unstructured.Unstructured, *admission.Request) error {
		return admission.Error{Message: "I'm too lazy anyway. Go away!", Code: 555}
	}, handlers.Field("spec.field"), handlers.Value(filter.Equals("not-allowed")))
	handlers.OnValidate(kex, "authhook", func(_ context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
		seen.set(obj.GetName(), r.DryRun)
		r.Warn(fmt.Sprintf("%s of %s by %s, dry run: %v", r.Operation, obj.GetName(), r.UserInfo.Username, r.DryRun))
		return nil
	})
	handlers.OnMutate(kex, "inject", func(_ context.Context, _ *unstructured.Unstructured, r *admission.Request) error {
		r.Patch.Set(123, "spec", "injected")
		return nil
	})
	handlers.OnMutate(kex, "mutate1", func(_ context.Context, _ *unstructured.Unstructured, r *admission.Request) error {
		r.Patch.Set("yes", "spec", "labelled")
		return nil
	}, handlers.Labels{"somelabel": filter.Equals("somevalue")})
	cms := handlers.For[*corev1.ConfigMap](reg)
	handlers.OnValidate(cms, "cm_check", func(_ context.Context, cm *corev1.ConfigMap, _ *admission.Request) error {
		if _, ok := cm.Data["forbidden"]; ok {
			return &admission.Error{Message: "the key 'forbidden' is forbidden", Code: 422}
		}
		return nil
	}, handlers.Labels{"kopf-go-test": filter.Present}, handlers.Operations(admission.Create),
		handlers.Persistent(), handlers.IgnoreFailures())
	return reg
}

// startOperator runs the registry's webhooks in a manager of their own,
// on envtest's local serving port, with managed configurations pointing
// there; the returned function stops it.
func startOperator(t *testing.T, reg *handlers.Registry, metricsAt string) func() {
	t.Helper()
	log := logr.Discard()
	if testing.Verbose() {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	mgr, clientConfig := testenv.WebhookManager(t, cfg, env.WebhookInstallOptions,
		manager.Options{Logger: log, Metrics: metricsserver.Options{BindAddress: metricsAt}})
	err := handlers.SetupWebhooksWithManager(mgr, reg, handlers.WebhookOptions{Path: "/kopf", Managed: managed, ClientConfig: clientConfig})
	if err != nil {
		t.Fatal(err)
	}
	return testenv.RunManager(t, mgr)
}

func kex(namespace, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "spec": spec}}
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.SetLabels(labels)
	return obj
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "admission-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

func TestAdmission(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// Runs last: after the operator's stop and the configurations' removal.
		if err := goleak.Find(ignore, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: managed}})
		_ = k8s.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: managed}})
	})
	ctx := context.Background()
	ns := namespace(t)
	seen := &dryRuns{m: map[string]bool{}}
	metricsAt := testenv.FreeAddress(t)
	stop := startOperator(t, registry(seen), metricsAt)

	warned := &warnings{}
	wcfg := *cfg
	wcfg.WarningHandlerWithContext = warned
	c, err := client.New(&wcfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// The API server starts calling webhooks a moment after their
	// configuration appears: wait until a dry run is mutated.
	await.NoneMissing(t, "the webhooks take effect", 60*time.Second, func() string {
		probe := kex(ns, "probe", nil, map[string]any{})
		err := c.Create(ctx, probe, client.DryRunAll)
		if injected, _, _ := unstructured.NestedInt64(probe.Object, "spec", "injected"); err == nil && injected == 123 {
			return ""
		}
		return fmt.Sprintf("a dry run's mutation (last: %v, %v)", err, probe.Object)
	})
	warned.take()

	t.Run("an admission error rejects with its message and code", func(t *testing.T) {
		err := c.Create(ctx, kex(ns, "rejected", nil, map[string]any{"field": "not-allowed"}))
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			t.Fatalf("Create() = %v, want a rejection", err)
		}
		if code := status.Status().Code; code != 555 {
			t.Errorf("code = %d, want 555", code)
		}
		if msg := status.Status().Message; !strings.Contains(msg, "I'm too lazy anyway. Go away!") ||
			!strings.Contains(msg, `"validate2.spec.field.auto.kopf.dev"`) {
			t.Errorf("message = %q, want the handler's message from its webhook", msg)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rejected"}, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kopf.dev/v1", "kind": "KopfExample"}}); !apierrors.IsNotFound(err) {
			t.Errorf("Get() = %v, want not found", err)
		}
	})

	t.Run("mutations and warnings", func(t *testing.T) {
		warned.take()
		if err := c.Create(ctx, kex(ns, "plain", nil, map[string]any{"field": "allowed"})); err != nil {
			t.Fatal(err)
		}
		got := kex(ns, "plain", nil, nil)
		if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		if injected, _, _ := unstructured.NestedInt64(got.Object, "spec", "injected"); injected != 123 {
			t.Errorf("spec = %v, want injected: 123", got.Object["spec"])
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "labelled"); found {
			t.Errorf("spec = %v: the label-filtered mutator ran on an object without the label", got.Object["spec"])
		}
		if w := warned.take(); !hasWarning(w, "CREATE", "plain", false) {
			t.Errorf("warnings = %q, want the handler's", w)
		}
		if dry, ok := seen.get("plain"); !ok || dry {
			t.Errorf("dry run = %v (seen: %v), want false", dry, ok)
		}
	})

	t.Run("a label-filtered mutator", func(t *testing.T) {
		obj := kex(ns, "labelled", map[string]string{"somelabel": "somevalue"}, map[string]any{})
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if labelled, _, _ := unstructured.NestedString(obj.Object, "spec", "labelled"); labelled != "yes" {
			t.Errorf("spec = %v, want labelled: yes", obj.Object["spec"])
		}
		other := kex(ns, "other-label", map[string]string{"somelabel": "other"}, map[string]any{})
		if err := c.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(other.Object, "spec", "labelled"); found {
			t.Errorf("spec = %v: mutated with another label value", other.Object["spec"])
		}
	})

	t.Run("dry runs", func(t *testing.T) {
		warned.take()
		obj := kex(ns, "dry", nil, map[string]any{})
		if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if injected, _, _ := unstructured.NestedInt64(obj.Object, "spec", "injected"); injected != 123 {
			t.Errorf("spec = %v, want injected: 123 in the dry run's answer", obj.Object["spec"])
		}
		if dry, ok := seen.get("dry"); !ok || !dry {
			t.Errorf("dry run = %v (seen: %v), want true", dry, ok)
		}
		if w := warned.take(); !hasWarning(w, "CREATE", "dry", true) {
			t.Errorf("warnings = %q, want the handler's", w)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), kex(ns, "dry", nil, nil)); !apierrors.IsNotFound(err) {
			t.Errorf("Get() = %v, want not found after a dry run", err)
		}
	})

	t.Run("typed objects", func(t *testing.T) {
		bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad", Labels: map[string]string{"kopf-go-test": ""}},
			Data: map[string]string{"forbidden": "x"}}
		err := c.Create(ctx, bad)
		var status *apierrors.StatusError
		if !errors.As(err, &status) || status.Status().Code != 422 || !strings.Contains(status.Status().Message, "the key 'forbidden' is forbidden") {
			t.Errorf("Create() = %v, want a rejection with 422", err)
		}
		// The object selector (from the label filter) keeps others out.
		unlabelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"}, Data: map[string]string{"forbidden": "x"}}
		if err := c.Create(ctx, unlabelled); err != nil {
			t.Errorf("Create() = %v, want no webhook for objects without the label", err)
		}
	})

	t.Run("the calls are counted", func(t *testing.T) { checkWebhookMetrics(t, metricsAt) })

	t.Run("the managed configurations", func(t *testing.T) {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: managed}, v); err != nil {
			t.Fatal(err)
		}
		byName := map[string]admissionregistrationv1.ValidatingWebhook{}
		for _, w := range v.Webhooks {
			byName[w.Name] = w
		}
		if len(byName) != 3 {
			t.Errorf("validating webhooks = %v, want 3", keys(byName))
		}
		cm := byName["cm-check.auto.kopf.dev"]
		if len(cm.Rules) != 1 || !slices.Equal(cm.Rules[0].Resources, []string{"configmaps"}) ||
			!slices.Equal(cm.Rules[0].APIGroups, []string{""}) ||
			!slices.Equal(cm.Rules[0].Operations, []admissionregistrationv1.OperationType{"CREATE"}) ||
			ptr.Deref(cm.FailurePolicy, "") != admissionregistrationv1.Ignore ||
			cm.ObjectSelector == nil || len(cm.ObjectSelector.MatchExpressions) != 1 ||
			cm.ObjectSelector.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
			t.Errorf("cm-check = %+v", cm)
		}
		field := byName["validate2.spec.field.auto.kopf.dev"]
		if u := ptr.Deref(field.ClientConfig.URL, ""); !strings.HasSuffix(u, "/kopf/validate2/spec.field") ||
			ptr.Deref(field.TimeoutSeconds, 0) != 30 || ptr.Deref(field.MatchPolicy, "") != admissionregistrationv1.Equivalent ||
			ptr.Deref(field.SideEffects, "") != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("validate2 = %+v", field)
		}
		mut := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: managed}, mut); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, w := range mut.Webhooks {
			names = append(names, w.Name)
			if w.Name == "mutate1.auto.kopf.dev" && (w.ObjectSelector == nil || len(w.ObjectSelector.MatchExpressions) != 1 ||
				w.ObjectSelector.MatchExpressions[0].Operator != metav1.LabelSelectorOpIn) {
				t.Errorf("mutate1's object selector = %+v, want somelabel In [somevalue]", w.ObjectSelector)
			}
		}
		if !slices.Equal(names, []string{"inject.auto.kopf.dev", "mutate1.auto.kopf.dev"}) {
			t.Errorf("mutating webhooks = %v", names)
		}
	})

	// On exit, only the persistent webhooks stay.
	stop()
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: managed}, v); err != nil {
		t.Fatal(err)
	}
	if len(v.Webhooks) != 1 || v.Webhooks[0].Name != "cm-check.auto.kopf.dev" {
		t.Errorf("validating webhooks after exit = %+v, want only cm-check", v.Webhooks)
	}
	mut := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: managed}, mut); err != nil {
		t.Fatal(err)
	}
	if len(mut.Webhooks) != 0 {
		t.Errorf("mutating webhooks after exit = %+v, want none", mut.Webhooks)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// hasWarning reports whether a warning names the operation and the object,
// a user (whoever envtest authenticates as), and the dry run flag.
func hasWarning(warnings []string, operation, name string, dryRun bool) bool {
	return slices.ContainsFunc(warnings, func(w string) bool {
		prefix := fmt.Sprintf("%s of %s by ", operation, name)
		suffix := fmt.Sprintf(", dry run: %v", dryRun)
		return strings.HasPrefix(w, prefix) && strings.HasSuffix(w, suffix) && len(w) > len(prefix)+len(suffix)
	})
}
