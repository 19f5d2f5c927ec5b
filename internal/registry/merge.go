package registry

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Merge is one kind with the handlers of several registrations that
// select the same resource (a name, a category and everything, say), in
// their order, at the given GVK. Their objects must be of one Go type.
// Handler ids that two of them use would share one progress record, so
// they are an error, as within one registration.
func Merge(gvk schema.GroupVersionKind, kinds []*Kind) (*Kind, error) {
	if len(kinds) == 0 {
		return nil, errors.New("no kinds to merge")
	}
	out := &Kind{GVK: gvk, NewObject: kinds[0].NewObject}
	for _, k := range kinds {
		out.Changing = append(out.Changing, k.Changing...)
		out.Spawning = append(out.Spawning, k.Spawning...)
		out.Watching = append(out.Watching, k.Watching...)
		out.Indexing = append(out.Indexing, k.Indexing...)
		out.Children = append(out.Children, k.Children...)
		out.Conditions = out.Conditions || k.Conditions
	}
	errs := append(validateChanging(out), validateSpawning(out)...)
	errs = append(errs, validateWatching(out)...)
	errs = append(errs, validateChildren(out)...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s is selected by more than one registration: %w", gvk, err)
	}
	return out, nil
}
