package clients

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Served is the client handlers get (From) when the served
// namespaces follow patterns with globs: the manager's cache cannot follow
// them (its namespaces are fixed when it is made), and a cluster-wide one
// would need cluster-wide RBAC. Reads go to the engine's current cache,
// which holds the served namespaces and starts informers for the kinds
// handlers read as they read them; writes go to the manager's client.
type Served struct {
	client.Client
	// Cache is the engine's current run's cache, nil between runs.
	Cache func() client.Reader
	// Mapper is the engine's, which remembers what it found.
	Mapper meta.RESTMapper
}

func (c *Served) reader() (client.Reader, error) {
	if r := c.Cache(); r != nil {
		return r, nil
	}
	return nil, ErrFrozen
}

func (c *Served) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r, err := c.reader()
	if err != nil {
		return err
	}
	return r.Get(ctx, key, obj, opts...)
}

func (c *Served) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r, err := c.reader()
	if err != nil {
		return err
	}
	return r.List(ctx, list, opts...)
}

// RESTMapper is the engine's, which remembers what it found.
func (c *Served) RESTMapper() meta.RESTMapper { return c.Mapper }
