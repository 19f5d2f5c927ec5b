package hierarchies

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kopf-go/kopf/pkg/fields"
)

// Options are checked at compile time per function: each function accepts
// only the options that make sense for it, as Kopf's keyword arguments do.

// LabelOption configures Label.
type LabelOption interface {
	apply(*config)
	label()
}

// NamingOption configures HarmonizeNaming.
type NamingOption interface {
	apply(*config)
	naming()
}

// NamespaceOption configures AdjustNamespace.
type NamespaceOption interface {
	apply(*config)
	namespace()
}

// AdoptOption configures Adopt.
type AdoptOption interface {
	apply(*config)
	adopt()
}

// config is what the options set; its zero value is not Kopf's defaults,
// newConfig is.
type config struct {
	forced             bool
	strict             bool
	nested             []fields.Path
	controller         bool
	blockOwnerDeletion bool
	gvk                schema.GroupVersionKind
	scheme             *runtime.Scheme
}

// newConfig applies the options over Kopf's defaults: a controller
// reference that blocks the owner's deletion, nothing forced, not strict;
// owners' kinds looked up in client-go's scheme of the built-in kinds.
func newConfig[O interface{ apply(*config) }](opts []O) *config {
	c := &config{controller: true, blockOwnerDeletion: true, scheme: clientgoscheme.Scheme}
	for _, o := range opts {
		o.apply(c)
	}
	return c
}

// ForcedOption overwrites what a child already has; see Forced.
type ForcedOption struct{}

// Forced overwrites the child's own labels, name, generateName and
// namespace (Kopf's forced=True); without it they are kept and only
// missing ones are filled in.
func Forced() ForcedOption { return ForcedOption{} }

func (ForcedOption) apply(c *config) { c.forced = true }
func (ForcedOption) label()          {}
func (ForcedOption) naming()         {}
func (ForcedOption) namespace()      {}
func (ForcedOption) adopt()          {}

// StrictOption names children exactly; see Strict.
type StrictOption struct{}

// Strict gives the child the name itself and clears its generateName
// (Kopf's strict=True), for children that others refer to by name; there
// can be only one such child per name and namespace. Without it, the name
// becomes the prefix "<name>-" of a generateName, and the API server adds a
// random suffix.
func Strict() StrictOption { return StrictOption{} }

func (StrictOption) apply(c *config) { c.strict = true }
func (StrictOption) naming()         {}
func (StrictOption) adopt()          {}

// NestedOption labels nested templates too; see Nested.
type NestedOption struct{ paths []fields.Path }

// Nested labels the metadata of nested object templates as well, at the
// dotted paths given (e.g. "spec.template" of a Deployment,
// "spec.jobTemplate" of a CronJob), as Kopf's nested=. A path that is not
// there, or is not an object, is skipped: no template is created.
func Nested(paths ...string) NestedOption {
	var o NestedOption
	for _, p := range paths {
		o.paths = append(o.paths, fields.Parse(p))
	}
	return o
}

func (o NestedOption) apply(c *config) { c.nested = append(c.nested, o.paths...) }
func (NestedOption) label()            {}
func (NestedOption) adopt()            {}

// ReferenceOption configures the owner reference that AppendOwnerReference
// and Adopt add.
type ReferenceOption func(*config)

func (o ReferenceOption) apply(c *config) { o(c) }
func (ReferenceOption) adopt()            {}

// NotController makes the reference a plain owner reference, not the
// child's controller (Kopf's controller=False): "controller: false".
func NotController() ReferenceOption {
	return ReferenceOption(func(c *config) { c.controller = false })
}

// NoBlockOwnerDeletion lets the owner's foreground deletion go on before
// the child is gone (Kopf's block_owner_deletion=False):
// "blockOwnerDeletion: false".
func NoBlockOwnerDeletion() ReferenceOption {
	return ReferenceOption(func(c *config) { c.blockOwnerDeletion = false })
}

// OwnerGVK gives the owner's group, version and kind, for typed owners
// whose TypeMeta is empty (objects read through controller-runtime's
// cache usually are). It wins over the owner's TypeMeta and OwnerScheme.
func OwnerGVK(gvk schema.GroupVersionKind) ReferenceOption {
	return ReferenceOption(func(c *config) { c.gvk = gvk })
}

// OwnerScheme looks the owner's group, version and kind up in a scheme
// (e.g. mgr.GetScheme() for typed kinds of your own) when its TypeMeta is
// empty; the default is client-go's scheme of the built-in kinds, and nil
// looks up nothing (owners must carry their kind).
func OwnerScheme(scheme *runtime.Scheme) ReferenceOption {
	return ReferenceOption(func(c *config) { c.scheme = scheme })
}
