package resources

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/kopf-go/kopf/internal/scopes"
)

// discovered is one answer of discovery: the resources of the group
// versions that answered, and the group versions that did not, with why.
type discovered struct {
	resources []scopes.Resource
	failed    map[schema.GroupVersion]error
}

// discoverResources lists what the API server serves. A group version
// that fails (an aggregated API that is down, which aggregated discovery
// marks stale, or one whose own discovery endpoint fails) is told apart
// with its error; the rest is returned. Only a failure of discovery as a
// whole is an error.
func discoverResources(disco discovery.DiscoveryInterface) (discovered, error) {
	groups, lists, err := disco.ServerGroupsAndResources()
	var d discovered
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return discovered{}, fmt.Errorf("discover the resources: %w", err)
		}
		d.failed = partial.Groups
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			d.resources = append(d.resources, scopes.Resource{Group: gv.Group, Version: gv.Version, Kind: r.Kind, Plural: r.Name,
				Singular: r.SingularName, ShortNames: r.ShortNames, Categories: r.Categories, Namespaced: r.Namespaced,
				Preferred: preferred[gv.Group] == gv.Version, Verbs: r.Verbs})
		}
	}
	return d, nil
}

// lastKnown is what keepLastKnown decided: the resources to serve, the
// failing group versions whose last known resources they keep, and those
// that fail with nothing known of them.
type lastKnown struct {
	resources []scopes.Resource
	kept      map[schema.GroupVersion]error
	unknown   map[schema.GroupVersion]error
}

// keepLastKnown is what to serve after discovery's answer d, when last was
// served before. A group version that answered is served as it answered:
// a resource it no longer has is gone, and a group that is not listed at
// all is gone (its CRD deleted). A group version that failed is served as
// it was last known, until it answers again: a moment of an API server's
// trouble must not look like a deleted CRD, whose objects would be
// forgotten and their daemons stopped. One that failed with NotFound is
// gone (its CRD was deleted between discovery's listing of the groups and
// its look at the group version). While a group keeps a failing version,
// its preferred version stays the last known one, if that is the one that
// fails: the answer's preference was made without it.
func keepLastKnown(last []scopes.Resource, d discovered) lastKnown {
	out := lastKnown{resources: d.resources, kept: map[schema.GroupVersion]error{}, unknown: map[schema.GroupVersion]error{}}
	if len(d.failed) == 0 {
		return out
	}
	answered := map[schema.GroupVersion]bool{}
	for _, r := range d.resources {
		answered[schema.GroupVersion{Group: r.Group, Version: r.Version}] = true
	}
	byGV := map[schema.GroupVersion][]scopes.Resource{}
	lastPreferred := map[string]string{}
	for _, r := range last {
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		byGV[gv] = append(byGV[gv], r)
		if r.Preferred {
			lastPreferred[r.Group] = r.Version
		}
	}
	for gv, err := range d.failed {
		switch {
		case apierrors.IsNotFound(err), answered[gv]:
			continue
		case len(byGV[gv]) == 0:
			out.unknown[gv] = err
			continue
		}
		out.kept[gv] = err
	}
	if len(out.kept) == 0 {
		return out
	}
	resources := make([]scopes.Resource, 0, len(d.resources))
	resources = append(resources, d.resources...)
	kept := slices.SortedFunc(maps.Keys(out.kept), func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	for _, gv := range kept {
		resources = append(resources, byGV[gv]...)
	}
	for i, r := range resources {
		version, ok := lastPreferred[r.Group]
		if _, failing := out.kept[schema.GroupVersion{Group: r.Group, Version: version}]; ok && failing {
			resources[i].Preferred = r.Version == version
		}
	}
	out.resources = resources
	return out
}

// sayFailures logs the group versions that begin to fail, those that
// still fail (when their last known resources are served), and those that
// answer again. Only refresh calls it, under its lock.
func (w *Watch) sayFailures(decided lastKnown) {
	for gv, err := range decided.kept {
		if _, before := w.failed[gv]; before {
			w.log.Info("A group's discovery still fails; its last known resources stay served.", "groupVersion", gv.String(),
				"since", w.failed[gv], "error", err.Error())
			continue
		}
		w.failed[gv] = w.clock.Now()
		w.log.Error(err, "A group's discovery fails; its last known resources stay served until it answers again.",
			"groupVersion", gv.String(), "retry", resourcePollInterval)
	}
	for gv, err := range decided.unknown {
		if _, before := w.failed[gv]; before {
			w.log.V(1).Info("A group's discovery still fails; none of its resources is known yet.", "groupVersion", gv.String(), "error", err.Error())
			continue
		}
		w.failed[gv] = w.clock.Now()
		w.log.Error(err, "A group's discovery fails; none of its resources is known yet.", "groupVersion", gv.String(), "retry", resourcePollInterval)
	}
	for gv, since := range w.failed {
		_, kept := decided.kept[gv]
		_, unknown := decided.unknown[gv]
		if !kept && !unknown {
			delete(w.failed, gv)
			w.log.Info("A group's discovery answers again.", "groupVersion", gv.String(), "since", since)
		}
	}
}
