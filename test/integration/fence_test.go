package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/pkg/patch"
)

// A fenced write that is held on its way while the object moves to
// another member, and then delivered, does not land: the API server
// refuses the version it carries, the writer reads the object live, finds
// it granted elsewhere, and writes nothing more. Without the fence the
// same delayed write lands after the move.
func TestADelayedWriteLandsNowhereAfterAMove(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		name := "unfenced"
		if fenced {
			name = "fenced"
		}
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			obj.SetNamespace(ns)
			obj.SetName("kex")
			obj.SetAnnotations(map[string]string{"grant": "me"})
			if err := env.Client.Create(context.Background(), obj); err != nil {
				t.Fatal(err)
			}

			// The writer's first patch is held until the test lets it go.
			held, release := make(chan struct{}), make(chan struct{})
			var holding atomic.Bool
			holding.Store(true)
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTrip(func(req *http.Request) (*http.Response, error) {
					if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/kex") && holding.CompareAndSwap(true, false) {
						close(held)
						<-release
					}
					return rt.RoundTrip(req)
				})
			})
			c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			w := write.New(gvk, "kopf.zalando.org/KopfFinalizerMarker", clients.NewCurrent(c), write.FixedProbe(false), write.Timeout)
			if fenced {
				w.WithFence(func(o metav1.Object) error {
					if g := o.GetAnnotations()["grant"]; g != "me" {
						return errors.New("granted to " + g)
					}
					return nil
				})
			}
			p := patch.New()
			p.SetLabel("written-by", "me")
			done := make(chan error, 1)
			go func() {
				_, err := w.Commit(context.Background(), logr.Discard(), obj, p, write.KeepFinalizer)
				done <- err
			}()
			<-held
			// The object moves meanwhile, as a handover moves it.
			moved := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"grant":"other"}}}`))
			if err := env.Client.Patch(context.Background(), obj.DeepCopy(), moved); err != nil {
				t.Fatal(err)
			}
			close(release)
			err = <-done

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(gvk)
			if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "kex"}, stored); err != nil {
				t.Fatal(err)
			}
			landed := stored.GetLabels()["written-by"] == "me"
			_, isFenced := write.AsFenced(err)
			switch {
			case fenced && (landed || !isFenced):
				t.Errorf("the fenced write: landed %v, error %v; want nothing landed and a *FencedError", landed, err)
			case !fenced && (!landed || err != nil):
				t.Errorf("the unfenced write: landed %v, error %v; want it landed (the hole the fence closes)", landed, err)
			}
		})
	}
}
