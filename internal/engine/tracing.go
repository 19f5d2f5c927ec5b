package engine

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/tracing"
)

// handlersClient is the client that handlers find in their context: the
// manager's. When the operator traces, it is one like the manager's
// default client (reads through the manager's cache, writes to the API
// server) on a traced copy of the manager's HTTP client, so that the
// handlers' requests join their spans; the manager's own client and
// HTTP client are left as the program made them.
func handlersClient(mgr manager.Manager, t tracing.Tracer) (client.Client, error) {
	if !t.On() {
		return mgr.GetClient(), nil
	}
	c, err := client.New(mgr.GetConfig(), client.Options{
		HTTPClient: t.HTTPClient(mgr.GetHTTPClient()), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache()},
	})
	if err != nil {
		return nil, fmt.Errorf("create the handlers' client: %w", err)
	}
	return c, nil
}
