package posting

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/posting"
)

// checkLeaks fails the test if goroutines started after this call are
// still running when the test ends; client-go's idle connections may stay.
func checkLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := goleak.Find(ignore, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")); err != nil {
			t.Error(err)
		}
	})
}

// withPoster runs fn with a running poster in its context, as the engine
// runs handlers, then stops the poster, which posts what is still queued.
func withPoster(t *testing.T, p *posting.Poster, fn func(ctx context.Context)) {
	t.Helper()
	checkLeaks(t)
	if p.Client == nil {
		p.Client = env.Client
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	fn(posting.NewContext(context.Background(), p))
	cancel()
	wg.Wait()
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "posting-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	ns.TypeMeta = metav1.TypeMeta{} // as clients return typed objects
	return ns
}

// example creates a KopfExample in the namespace.
func example(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1",
		"kind":       "KopfExample",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       map[string]any{"field": "value"},
	}}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// configMap creates a ConfigMap in the namespace and returns it with an
// empty TypeMeta, so that its kind must come from a scheme.
func configMap(t *testing.T, namespace, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	cm.TypeMeta = metav1.TypeMeta{}
	return cm
}

// eventsAbout lists the Events in the namespace about the object's uid,
// in the order of their creation.
func eventsAbout(t *testing.T, namespace string, uid types.UID) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID == uid {
			out = append(out, ev)
		}
	}
	sortByCreation(out)
	return out
}

// sortByCreation orders Events by their resource versions, which grow with
// every write to one apiserver.
func sortByCreation(events []corev1.Event) {
	slices.SortFunc(events, func(a, b corev1.Event) int {
		return cmp.Or(cmp.Compare(len(a.ResourceVersion), len(b.ResourceVersion)),
			strings.Compare(a.ResourceVersion, b.ResourceVersion))
	})
}

// summary is an Event's type, reason and message.
func summary(events []corev1.Event) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.Type+"/"+ev.Reason+"/"+ev.Message)
	}
	return out
}
