package write

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// StatusProbe finds out (once) whether a kind has a status subresource,
// which decides where results go; a failed lookup is retried on the next
// call.
type StatusProbe struct {
	lookup func(context.Context) (bool, error)
	mu     sync.Mutex
	known  *bool
}

// DiscoveryProbe asks discovery about the kind.
func DiscoveryProbe(disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind) *StatusProbe {
	return &StatusProbe{lookup: func(context.Context) (bool, error) { return hasStatusSubresource(disco, gvk) }}
}

// FixedProbe knows the answer already (tests).
func FixedProbe(has bool) *StatusProbe { return &StatusProbe{known: &has} }

// Has reports (and remembers) whether the kind has /status.
func (p *StatusProbe) Has(ctx context.Context) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known != nil {
		return *p.known, nil
	}
	has, err := p.lookup(ctx)
	if err != nil {
		return false, err
	}
	p.known = &has
	return has, nil
}

// hasStatusSubresource asks discovery whether the kind has /status.
func hasStatusSubresource(disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return false, fmt.Errorf("discover the resources of %s: %w", gvk.GroupVersion(), err)
	}
	plural := ""
	for _, res := range list.APIResources {
		if res.Kind == gvk.Kind && !strings.Contains(res.Name, "/") {
			plural = res.Name
		}
	}
	if plural == "" {
		return false, fmt.Errorf("discover the resource of kind %s in %s: not served", gvk.Kind, gvk.GroupVersion())
	}
	for _, res := range list.APIResources {
		if res.Name == plural+"/status" {
			return true, nil
		}
	}
	return false, nil
}
