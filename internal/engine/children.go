package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kopf-go/kopf/internal/children"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// The watches of children (handlers.Children): each run has a cache of
// its own for them, which holds only the children that hierarchies.Adopt
// labelled as the run's kinds' (so that it grows with the operator's
// objects, not with the cluster, and the handlers' reads of the child's
// kind through the run's cache still see every object), and one
// controller per owner kind and child kind, so that freezes, pauses and
// changes of the served namespaces end and begin them with the rest.

// childGVKs finds the kinds of the registered children: typed ones from
// the scheme.
func childGVKs(reg *registry.Registry, scheme *runtime.Scheme) (map[*registry.ChildKind]schema.GroupVersionKind, error) {
	out := map[*registry.ChildKind]schema.GroupVersionKind{}
	for _, kind := range reg.Kinds {
		for _, ck := range kind.Children {
			gvk, err := registeredGVK(ck.GVK, ck.NewObject(), scheme)
			if err != nil {
				return nil, fmt.Errorf("find the kind of the children %T: %w", ck.NewObject(), err)
			}
			out[ck] = gvk
		}
	}
	return out, nil
}

// ownedChildren is one owner kind's children of one kind in a run.
type ownedChildren struct {
	owner *kindState
	kind  *registry.ChildKind
	gvk   schema.GroupVersionKind
}

// newChild is an empty child of the kind, its GVK set if unstructured.
func (o ownedChildren) newChild() client.Object {
	return objects.Kind{Registered: &registry.Kind{NewObject: o.kind.NewObject}, GVK: o.gvk}.New()
}

// ownedChildren are the run's kinds' children whose resources are served;
// those that are not are logged and left out.
func (e *engine) ownedChildren(kinds []*kindState) []ownedChildren {
	var out []ownedChildren
	for _, r := range kinds {
		for _, ck := range r.objects.Registered.Children {
			gvk := e.childGVKs[ck]
			if _, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				e.log.Error(err, "The children's resource is not served: their handlers wait for the next run.", "kind", r.objects.GVK.String(), "children", gvk.String())
				continue
			}
			out = append(out, ownedChildren{owner: r, kind: ck, gvk: gvk})
		}
	}
	return out
}

// childrenCache makes the run's cache of the children: of each child
// kind, only those labelled with the kind of an owner of theirs.
func (e *engine) childrenCache(namespaces []string, owned []ownedChildren) (cache.Cache, error) {
	owners := map[schema.GroupVersionKind]map[string]bool{}
	objects := map[schema.GroupVersionKind][]client.Object{}
	for _, o := range owned {
		if owners[o.gvk] == nil {
			owners[o.gvk] = map[string]bool{}
		}
		owners[o.gvk][hierarchies.OwnerKindValue(o.owner.objects.GVK.GroupKind())] = true
		objects[o.gvk] = append(objects[o.gvk], o.newChild())
	}
	opts := cache.Options{HTTPClient: e.mgr.GetHTTPClient(), Scheme: e.mgr.GetScheme(), Mapper: e.mapper,
		DefaultTransform: stripManagedFields, ByObject: map[client.Object]cache.ByObject{}}
	for gvk, objs := range objects {
		values := make([]string, 0, len(owners[gvk]))
		for v := range owners[gvk] {
			values = append(values, v)
		}
		sort.Strings(values)
		req, err := labels.NewRequirement(hierarchies.OwnerKindLabel, selection.In, values)
		if err != nil {
			return nil, fmt.Errorf("select the children %s: %w", gvk, err)
		}
		for _, obj := range objs {
			opts.ByObject[obj] = cache.ByObject{Label: labels.NewSelector().Add(*req)}
		}
	}
	opts.DefaultNamespaces = namespaceConfigs(namespaces)
	return cache.New(e.mgr.GetConfig(), opts)
}

// childController makes the controller of one owner kind's children of
// one kind for a run: children from the children's cache, owners from
// the run's. recall, once the children's cache has synced, tells the
// deletions that the run's listing cannot (children deleted while the
// operator was frozen or paused).
func (e *engine) childController(o ownedChildren, owners, childCache cache.Cache) (ctrl controller.Controller, recall func(context.Context), err error) {
	r := o.owner
	known := r.knownChildren(o.kind)
	name := controllerName(r.objects.GVK) + "-children-" + strings.TrimPrefix(controllerName(o.gvk), "kopf-")
	mapping, err := e.mapper.RESTMapping(r.objects.GVK.GroupKind(), r.objects.GVK.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("find the scope of %s: %w", r.objects.GVK.Kind, err)
	}
	watch := children.New(children.Kind{Owner: r.objects, Owners: owners,
		Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		Child:      o.kind, ChildGVK: o.gvk, Memories: r.memories, Indices: r.settings.Indices, Clock: r.settings.Clock,
		Defaults: r.settings.defaults(), Context: r.handlerContext, Label: r.kindLabel,
		Log: e.mgr.GetLogger().WithValues("controller", name), Known: known})
	if ctrl, err = controller.NewUnmanaged(name, e.controllerOptions(name, watch, r.settings.MaxConcurrentReconciles)); err != nil {
		return nil, nil, fmt.Errorf("create the controller of the children %s of %s: %w", o.gvk.Kind, r.objects.GVK.Kind, err)
	}
	if err := ctrl.Watch(source.Kind[client.Object](childCache, o.newChild(), watch.Events())); err != nil {
		return nil, nil, fmt.Errorf("watch the children %s of %s: %w", o.gvk.Kind, r.objects.GVK.Kind, err)
	}
	recalled := make(chan event.GenericEvent, enqueueBuffer)
	if err := ctrl.Watch(source.Channel(recalled, watch.Events())); err != nil {
		return nil, nil, fmt.Errorf("watch the recalled children %s of %s: %w", o.gvk.Kind, r.objects.GVK.Kind, err)
	}
	recall = func(ctx context.Context) {
		if !childCache.WaitForCacheSync(ctx) {
			return
		}
		watch.RecallGone(ctx, childCache, func(obj client.Object) {
			select {
			case recalled <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
			}
		})
	}
	return ctrl, recall, nil
}

// knownChildren is the kind's memory of its children of that kind, kept
// from run to run.
func (r *kindState) knownChildren(ck *registry.ChildKind) *children.Known {
	r.childrenMu.Lock()
	defer r.childrenMu.Unlock()
	if r.children == nil {
		r.children = map[*registry.ChildKind]*children.Known{}
	}
	if r.children[ck] == nil {
		r.children[ck] = children.NewKnown()
	}
	return r.children[ck]
}
