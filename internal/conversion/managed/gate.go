package managed

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/conversion"
)

// DefaultSettle is how long after the last write of a CRD the API server
// is taken to convert through the webhook: it takes a CRD's change up
// within a moment.
const DefaultSettle = 2 * time.Second

// gatePoll is how often the gate looks again.
const gatePoll = 250 * time.Millisecond

// Gate holds back the first watch of a kind with a managed conversion
// until the API server converts the kind through the webhook
// (docs/conversion.md, "First start"): a watch opened before goes on
// serving objects converted without it (strategy None prunes the other
// version's fields), and the handlers would see those as the objects.
//
// The conversion is in effect when the CRD's strategy is Webhook and
// DefaultSettle has passed since the CRD's last write (the API server
// takes a CRD's change up within a moment), or, sooner, once a list of
// one object at a version other than the stored one went through this
// operator's webhook (Served counts it). A kind is waited for once per
// process; a conversion in place for longer is not waited for at all.
type Gate struct {
	CRDs    apiextensionsclient.Interface
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	Served  *conversion.Served
	// Kinds are the kinds whose conversion is managed; others pass.
	Kinds  []schema.GroupKind
	Clock  clock.Clock
	Logger logr.Logger
	// Settle replaces DefaultSettle, for tests.
	Settle time.Duration

	passed sync.Map // schema.GroupKind → true
}

// Wait returns once the kind's conversion is in effect, or ctx is done.
func (g *Gate) Wait(ctx context.Context, gvk schema.GroupVersionKind) {
	gk := gvk.GroupKind()
	if !g.gates(gk) {
		return
	}
	if _, ok := g.passed.Load(gk); ok {
		return
	}
	waiting := false
	for {
		inEffect, why, err := g.inEffect(ctx, gvk)
		if inEffect {
			// Said whether it waited or not: a conversion taken up within
			// the first look waits for nothing, and the line still tells
			// when the kind's watch began.
			g.Logger.Info("The API server converts the kind through the webhook: watching it now.", "kind", gk.String(), "waited", waiting)
			g.passed.Store(gk, true)
			return
		}
		kv := []any{"kind", gk.String(), "why", why}
		if err != nil {
			kv = append(kv, "error", err.Error())
		}
		if !waiting {
			g.Logger.Info("Waiting for the API server to convert the kind through the webhook before watching it.", kv...)
			waiting = true
		} else {
			g.Logger.V(1).Info("Still waiting for the API server to convert the kind through the webhook.", kv...)
		}
		select {
		case <-ctx.Done():
			return
		case <-g.Clock.After(gatePoll):
		}
	}
}

func (g *Gate) gates(gk schema.GroupKind) bool {
	for _, k := range g.Kinds {
		if k == gk {
			return true
		}
	}
	return false
}

// inEffect tells whether the API server converts the kind through the
// webhook now, and if not, why.
func (g *Gate) inEffect(ctx context.Context, gvk schema.GroupVersionKind) (bool, string, error) {
	mapping, err := g.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, "its resource is not known", err
	}
	crd, err := g.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, mapping.Resource.GroupResource().String(), metav1.GetOptions{})
	if err != nil {
		return false, "its CRD cannot be read", err
	}
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return false, "the CRD's conversion is not the webhook yet", nil
	}
	other := otherVersion(crd, gvk.Version)
	if other == "" {
		return true, "", nil // one version: nothing is converted
	}
	settle := g.Settle
	if settle == 0 {
		settle = DefaultSettle
	}
	if g.Clock.Since(lastWrite(crd)) >= settle {
		return true, "", nil
	}
	// Written a moment ago: a list that went through this webhook shows
	// that the API server has taken the conversion up. (A list need not
	// call it: the API server serves lists from a cache per version,
	// filled when objects are written or the cache is built anew.)
	before := g.Served.Count(gvk.GroupKind())
	list, err := g.Dynamic.Resource(mapping.Resource.GroupResource().WithVersion(other)).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return false, fmt.Sprintf("a list in %s failed", other), err
	}
	if len(list.Items) > 0 && g.Served.Count(gvk.GroupKind()) > before {
		return true, "", nil
	}
	return false, "the CRD's conversion was written a moment ago", nil
}

// otherVersion is a served version of the CRD that is not the stored
// one, the watched version first; "" if there is none.
func otherVersion(crd *apiextensionsv1.CustomResourceDefinition, watched string) string {
	stored := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			stored = v.Name
		}
	}
	if watched != stored {
		return watched
	}
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Storage {
			return v.Name
		}
	}
	return ""
}

// lastWrite is when the CRD was last written, by any manager.
func lastWrite(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	last := crd.CreationTimestamp.Time
	for _, m := range crd.ManagedFields {
		if m.Time != nil && m.Time.After(last) {
			last = m.Time.Time
		}
	}
	return last
}
