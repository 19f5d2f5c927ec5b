package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

// Kopf's selector forms, resolved through discovery, each serve the
// example kind.
func TestSelectorsServeTheirResource(t *testing.T) {
	for _, names := range [][]string{
		{"kopfexamples"}, {"kopfexample"}, {"KopfExample"}, {"kex"},
		{"kopfexamples.kopf.dev"}, {"kopfexamples.v1.kopf.dev"},
		{"kopf.dev", "kopfexamples"}, {"kopf.dev/v1", "kopfexamples"}, {"kopf.dev", "v1", "kopfexamples"},
	} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			reg := handlers.NewRegistry()
			var served servedCreates
			served.register(handlers.ForResource(reg, names...))
			env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
			create(t, exampleObject(t, ns))
			eventually(t, "the object is handled", func() bool { return served.createdIn(ns) })
		})
	}
}

// A selector that two groups serve is not served, and the log names both;
// the operator's other resources are served all the same.
func TestAmbiguousSelectorIsRefusedNamingTheCandidates(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	// A second group that serves "kopfexamples" too.
	installCRD(t, lateCRD("kopfexamples", "KopfExample", "twin"+suffix+".kopf.dev", "Namespaced", nil))
	reg := handlers.NewRegistry()
	var ambiguous, plain servedCreates
	ambiguous.register(handlers.ForResource(reg, "kopfexamples"))
	plain.register(handlers.ForKind(reg, "", "v1", "ConfigMap"))
	op := env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unambiguous resource is served", func() bool { return plain.createdIn(ns) })
	// The second group's CRD may be established only after the start: the
	// selector is refused once it is, naming both groups.
	twin := "kopfexamples.v1.twin" + suffix + ".kopf.dev"
	eventually(t, "the ambiguous selector is refused, naming both groups", func() bool {
		for _, e := range op.Logs.Entries("The resource is not served.") {
			if text := fmt.Sprint(e.Values); strings.Contains(text, "kopfexamples.v1.kopf.dev") && strings.Contains(text, twin) {
				return true
			}
		}
		return false
	})
}

// A resource whose CRD is installed after the start is waited for (said
// once) and served once the CRD is established, by its name or by its
// category; when the CRD is deleted, the kind stops cleanly: its objects
// are deleted and handled as such, and the operator goes on.
func TestResourcesThatAppearAndGoAtRuntime(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	group := "late" + suffix + ".kopf.dev"
	category := "late" + suffix
	reg := handlers.NewRegistry()
	var byName, byCategory servedCreates
	byName.register(handlers.ForResource(reg, "latecomers."+group))
	stopped := make(chan error, 1)
	handlers.Daemon(handlers.ForCategory(reg, category), "follower", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, nil
	})
	byCategory.registerAs(handlers.ForCategory(reg, category+"-created"), "-by-category")
	op := env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
	eventually(t, "the operator says it waits for the resource", func() bool {
		return len(op.Logs.Messages("Waiting for the resource to be served (its CRD to be installed).")) == 1
	})

	crd := lateCRD("latecomers", "Latecomer", group, "Namespaced", []string{category, category + "-created"})
	installCRD(t, crd)
	obj := createLate(t, group, "Latecomer", ns, "late-1")
	eventually(t, "the object is handled by name and by category", func() bool {
		return byName.createdIn(ns) && byCategory.createdIn(ns)
	})
	if n := len(op.Logs.Messages("Waiting for the resource to be served (its CRD to be installed).")); n != 1 {
		t.Errorf("the wait was logged %d times, want once", n)
	}

	if err := env.Client.Delete(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, cause.StopResourceDeleted) {
			t.Errorf("the daemon stopped with %v, want RESOURCE_DELETED", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not stop after its CRD's deletion")
	}
	eventually(t, "the CRD is gone", func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}))
	})
	eventually(t, "the kind is no longer served", func() bool {
		return len(op.Logs.Messages("The resource is no longer served; its objects are forgotten.")) >= 1
	})
	// The operator goes on: the resource served again is served again.
	installCRD(t, lateCRD("latecomers", "Latecomer", group, "Namespaced", []string{category, category + "-created"}))
	createLate(t, group, obj.GetKind(), ns, "late-2")
	eventually(t, "the object of the reinstalled resource is handled", func() bool {
		byName.mu.Lock()
		defer byName.mu.Unlock()
		return len(byName.created) == 2
	})
}

// Every resource, with a label filter: an on-event handler sees the
// labelled objects of any kind, and nothing else.
func TestEverythingWithAFilter(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg := handlers.NewRegistry()
	seen := make(chan string, 16)
	handlers.OnEvent(handlers.ForEverything(reg), "spy", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Event) (any, error) {
		select {
		case seen <- obj.GetKind() + "/" + obj.GetName():
		default:
		}
		return nil, nil
	}, handlers.Labels{"spied": filter.Present})
	env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spied", Labels: map[string]string{"spied": "yes"}}}
	quiet := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quiet"}}
	obj := exampleObject(t, ns)
	obj.SetLabels(map[string]string{"spied": "yes"})
	for _, o := range []client.Object{quiet, cm, obj} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{"ConfigMap/spied": false, "KopfExample/kopf-example-1": false}
	deadline := time.After(30 * time.Second)
	for want["ConfigMap/spied"] == false || want["KopfExample/kopf-example-1"] == false {
		select {
		case got := <-seen:
			if _, ok := want[got]; !ok {
				t.Errorf("the handler saw %s, which has no label", got)
			}
			want[got] = true
		case <-deadline:
			t.Fatalf("timed out; seen: %v", want)
		}
	}
}

// createLate creates an object of a kind whose CRD a test has just
// installed, once the API server serves it, and returns it.
func createLate(t *testing.T, group, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(group + "/v1")
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	eventually(t, "an object of "+kind+" can be created", func() bool {
		return env.Client.Create(context.Background(), obj.DeepCopy()) == nil
	})
	return obj
}

// lateCRD is a CRD made by a test.
func lateCRD(plural, kind, group, scope string, categories []string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.ResourceScope(scope),
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, Singular: strings.ToLower(kind), Categories: categories},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true)}},
			}},
		},
	}
}

// installCRD creates the CRD, and deletes it when the test ends.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	crd = crd.DeepCopy()
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatalf("install the CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
}

// A kind named with ForKind whose CRD comes after the start is waited for
// as a selector's is, and served once the CRD is established: the
// operator does not give up on it (controller-runtime alone would stop
// waiting for its cache after two minutes, and serve nothing).
func TestForKindWaitsForItsCRD(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	group := fmt.Sprintf("waiter%d.kopf.dev", time.Now().UnixNano()%100000)
	reg := handlers.NewRegistry()
	var served servedCreates
	served.register(handlers.ForKind(reg, group, "v1", "Waiter"))
	var other servedCreates
	other.registerAs(handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample"), "-other")
	op := env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
	create(t, exampleObject(t, ns))
	eventually(t, "the other kind is served meanwhile", func() bool { return other.createdIn(ns) })
	if n := len(op.Logs.Messages("Waiting for the resource to be served (its CRD to be installed).")); n != 1 {
		t.Errorf("the wait was logged %d times, want once", n)
	}
	installCRD(t, lateCRD("waiters", "Waiter", group, "Namespaced", nil))
	createLate(t, group, "Waiter", ns, "waiter-1")
	eventually(t, "the object of the kind installed later is handled", func() bool { return served.createdIn(ns) })
}
