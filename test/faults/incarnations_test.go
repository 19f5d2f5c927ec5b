package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/test/faults/activity"
)

// The name-reused nemesis works on Incarnation objects
// (probe/incarnations.yaml), whose only handler is a create handler that
// works for the probe's --incarnation (20 s): a kind that needs no
// finalizer for its handlers. Deleted, such an object would vanish at
// once, and one created anew under its name would be placed by the
// ring's present epoch, on another member than its predecessor's, while
// the old owner still works on the predecessor (a handover waits for its
// handler). The checker keys activity by namespace/name, so two
// incarnations of one name at once are an overlap.
const (
	incarnationAPIVersion = "faults.kopf.dev/v1"
	incarnationKind       = "Incarnation"
)

// newIncarnation is an Incarnation to name in requests.
func newIncarnation(ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(incarnationAPIVersion)
	obj.SetKind(incarnationKind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// isIncarnation tells an incarnation's name (incarnationNames) from a
// KopfExample's.
func isIncarnation(name string) bool { return strings.HasPrefix(name, "inc-") }

// incarnationNames are n names of the nth fault's incarnations, each in a
// bucket of its own, so that every name is a chance of its own to move.
func incarnationNames(ns string, nth, n int) []string {
	var out []string
	buckets := map[string]bool{}
	for i := 0; len(out) < n && i < 100*n; i++ {
		name := fmt.Sprintf("inc-%d-%03d", nth, i)
		if b := sharding.ObjectKey(ns, name); !buckets[b] {
			buckets[b] = true
			out = append(out, name)
		}
	}
	return out
}

// createIncarnations creates the objects, directly, and returns the UIDs
// of those created; an error only if none was.
func (r *ring) createIncarnations(ctx context.Context, names []string) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	var errs []error
	for _, name := range names {
		obj := newIncarnation(r.ns, name)
		obj.Object["spec"] = map[string]any{"incarnation": int64(1)}
		if err := fixtures.env.Client.Create(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("create the incarnation %s: %w", name, err))
			continue
		}
		out[name] = obj.GetUID()
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// incarnationRun is one create run of an incarnation, as the records of
// the ring's members show it.
type incarnationRun struct {
	actor, object, uid string
	from, to           int64 // its start, and its end or last record
	ended              bool
}

// incarnationRuns are the runs on the objects whose namespace/name
// starts with prefix, from every member's whole records file (only the
// lines that name such an object are decoded).
func (r *ring) incarnationRuns(prefix string) []incarnationRun {
	type key struct {
		actor string
		run   int64
	}
	byKey := map[key]*incarnationRun{}
	var order []key
	needle := []byte(`"object":"` + prefix)
	for _, m := range r.all() {
		data, err := os.ReadFile(m.records)
		if err != nil {
			continue
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			var rec activity.Record
			if !bytes.Contains(line, needle) || json.Unmarshal(line, &rec) != nil {
				continue
			}
			k := key{rec.Actor, rec.Run}
			x := byKey[k]
			if x == nil {
				x = &incarnationRun{actor: rec.Actor, object: rec.Object, uid: rec.UID, from: rec.At, to: rec.At}
				byKey[k] = x
				order = append(order, k)
			}
			x.from, x.to = min(x.from, rec.At), max(x.to, rec.At)
			x.ended = x.ended || rec.Event == activity.End
		}
	}
	out := make([]incarnationRun, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// working maps each object to the actors whose runs on it have not
// ended and beat within workingWindow of now, leaving out the processes
// of the replica exclude.
func working(runs []incarnationRun, now time.Time, exclude string) map[string][]string {
	out := map[string][]string{}
	for _, x := range runs {
		if x.ended || now.UnixNano()-x.to > int64(workingWindow) || (exclude != "" && strings.HasPrefix(x.actor, exclude+"/")) {
			continue
		}
		if !slices.Contains(out[x.object], x.actor) {
			out[x.object] = append(out[x.object], x.actor)
		}
	}
	return out
}

// startedRun reports whether a run on the object of the UID began.
func startedRun(runs []incarnationRun, uid types.UID) bool {
	return slices.ContainsFunc(runs, func(x incarnationRun) bool { return x.uid == string(uid) })
}

// The Incarnation CRD that TestMain installs serves the kind the suite
// names, with the status subresource the probe's results are written to.
func TestIncarnationCRD(t *testing.T) {
	data, err := os.ReadFile(incarnationCRD())
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	type served struct{ APIVersion, Kind, Plural, Scope string }
	want := served{incarnationAPIVersion, incarnationKind, "incarnations", "Namespaced"}
	got := served{Kind: crd.Spec.Names.Kind, Plural: crd.Spec.Names.Plural, Scope: string(crd.Spec.Scope)}
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Storage && v.Subresources != nil && v.Subresources.Status != nil {
			got.APIVersion = crd.Spec.Group + "/" + v.Name
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the CRD -want +got:\n%s", diff)
	}
}
