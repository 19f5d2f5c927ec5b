package reactor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/pkg/patch"
)

// guardRig is a writer of the example kind on controller-runtime's fake
// client, recording each request with the answer. The fake checks a main
// patch's resourceVersion, but neither a /status patch's (it applies the
// status whatever the version) nor a patch's uid: preconditions plays the
// API server's part there, as a real one answers (test/integration's
// recreation tests meet the real answers).
type guardRig struct {
	// raw is the store, for others' writes; c is the writer's client.
	raw      client.WithWatch
	c        client.WithWatch
	w        *writer
	requests []string
	// bodies are the patches sent, in order.
	bodies []string
	// beforePatch runs before each patch reaches the store: someone
	// else's write in between, say.
	beforePatch func()
	// noStatus makes /status answer 404 though the object is there, as
	// for a kind whose CRD no longer has the subresource.
	noStatus bool
}

func newGuardRig(t *testing.T, withStatus bool) *guardRig {
	t.Helper()
	rig := &guardRig{}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cycleGVK, meta.RESTScopeNamespace)
	answer := func(what string, err error) error {
		code := ""
		if status, ok := err.(apierrors.APIStatus); ok && err != nil {
			code = fmt.Sprint(" ", status.Status().Code)
		}
		rig.requests = append(rig.requests, what+code)
		return err
	}
	before := func(p client.Patch, o client.Object, sub string) {
		if data, err := p.Data(o); err == nil {
			rig.bodies = append(rig.bodies, strings.TrimSpace(sub+" "+string(data)))
		}
		if rig.beforePatch != nil {
			rig.beforePatch()
		}
	}
	rig.raw = fake.NewClientBuilder().WithRESTMapper(mapper).WithStatusSubresource(cycleObject("a", nil)).
		WithObjects(unfinalized(cycleObject("a", nil))).Build()
	rig.c = interceptor.NewClient(rig.raw, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			return answer("get", c.Get(ctx, key, o, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			before(p, o, "")
			if err := preconditions(ctx, c, o, p, false); err != nil {
				return answer("patch", err)
			}
			return answer("patch", c.Patch(ctx, o, p, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			before(p, o, sub)
			if rig.noStatus {
				return answer("patch "+sub, apierrors.NewNotFound(schema.GroupResource{Group: cycleGVK.Group, Resource: "kopfexamples"}, o.GetName()))
			}
			if err := preconditions(ctx, c, o, p, true); err != nil {
				return answer("patch "+sub, err)
			}
			return answer("patch "+sub, c.SubResource(sub).Patch(ctx, o, p, opts...))
		},
	})
	cs := &clients{direct: rig.c}
	cs.set(rig.c)
	rig.w = &writer{gvk: cycleGVK, finalizer: DefaultFinalizer, clients: cs, status: fixedProbe(withStatus), timeout: writeTimeout}
	return rig
}

// preconditions answers a merge patch's preconditions as the API server
// does (seen in envtest): a resourceVersion other than the stored one is
// a 409 Conflict, on the object and its /status alike; then a uid other
// than the stored one is 422 Invalid on metadata.uid, on the object only
// (a custom resource's /status ignores it).
func preconditions(ctx context.Context, c client.Client, o client.Object, p client.Patch, status bool) error {
	data, err := p.Data(o)
	if err != nil {
		return nil
	}
	var body struct {
		Metadata struct {
			UID             types.UID `json:"uid"`
			ResourceVersion string    `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(cycleGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), stored); err != nil {
		return nil // the fake answers the patch as it is
	}
	gr := schema.GroupResource{Group: cycleGVK.Group, Resource: "kopfexamples"}
	if v := body.Metadata.ResourceVersion; v != "" && v != stored.GetResourceVersion() {
		return apierrors.NewConflict(gr, o.GetName(), errors.New("the object has been modified"))
	}
	if uid := body.Metadata.UID; !status && uid != "" && uid != stored.GetUID() {
		return apierrors.NewInvalid(schema.GroupKind{Group: cycleGVK.Group, Kind: cycleGVK.Kind}, o.GetName(),
			field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), uid, "field is immutable")})
	}
	return nil
}

// read is the object under the example's name as the cycle reads it.
func (rig *guardRig) read(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(cycleGVK)
	if err := rig.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "kex"}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// stored is what the test looks at in the object under the name: whose
// it is, and what of the write it has.
type stored struct {
	UID    types.UID
	Label  string
	Result bool
}

func (rig *guardRig) stored(t *testing.T) *stored {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(cycleGVK)
	err := rig.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "kex"}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	done, _, _ := unstructured.NestedBool(obj.Object, "status", "create_fn", "done")
	return &stored{UID: obj.GetUID(), Label: obj.GetLabels()["handled"], Result: done}
}

// someoneWrites changes the object under the name, as another client.
func (rig *guardRig) someoneWrites(t *testing.T) {
	t.Helper()
	p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"other":"x"}}}`))
	if err := rig.raw.Patch(context.Background(), cycleObject("a", nil), p); err != nil {
		t.Fatal(err)
	}
}

// recreate deletes the object and creates another under its name.
func (rig *guardRig) recreate(t *testing.T) {
	t.Helper()
	if err := rig.raw.Delete(context.Background(), cycleObject("a", nil)); err != nil {
		t.Fatal(err)
	}
	next := unfinalized(cycleObject("a", nil))
	next.SetUID("uid-next")
	if err := rig.raw.Create(context.Background(), next); err != nil {
		t.Fatal(err)
	}
}

func cyclePatch() *patch.Patch {
	p := patch.New()
	p.SetLabel("handled", "yes")
	if err := mergepatch.SetResult(p, "create_fn", map[string]any{"done": true}); err != nil {
		panic(err)
	}
	return p
}

// A write lands on the object it was decided for, or on nothing: the
// status patch carries the resourceVersion the cycle read (and goes again
// with a fresh one after a conflict, if the object is still the same), the
// main patch carries the uid. In between the read and the write, the row
// changes the object as others would.
func TestWriteGuards(t *testing.T) {
	tests := []struct {
		name       string
		withStatus bool
		fin        finalizerChange
		meanwhile  func(t *testing.T, rig *guardRig)
		// during: someone else writes before each patch of the object.
		during bool

		requests []string
		stored   *stored
		gone     string // "deleted", "replaced", or "" (not gone)
		conflict bool   // the write's error is a conflict
		noStatus bool   // /status answers 404, the object is there
		failed   bool   // the write fails, and the object is not gone
	}{
		{name: "unchanged", withStatus: true,
			requests: []string{"patch status", "patch"},
			stored:   &stored{UID: "uid-kex", Label: "yes", Result: true}},
		{name: "changed since the read: the status goes again with the fresh version", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.someoneWrites(t) },
			requests:  []string{"patch status 409", "patch", "patch status", "patch"},
			stored:    &stored{UID: "uid-kex", Label: "yes", Result: true}},
		{name: "replaced under its name: the successor gets nothing", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.recreate(t) },
			requests:  []string{"patch status 409", "patch 422"},
			stored:    &stored{UID: "uid-next"}, gone: "replaced"},
		{name: "deleted", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) {
				if err := rig.raw.Delete(context.Background(), cycleObject("a", nil)); err != nil {
					t.Fatal(err)
				}
			},
			requests: []string{"patch status 404", "patch 404"}, gone: "deleted"},
		{name: "the status subresource is not served: a failed write, the object not gone", withStatus: true, noStatus: true,
			requests: []string{"patch status 404", "patch"},
			stored:   &stored{UID: "uid-kex"}, failed: true},
		{name: "changing at every attempt: the conflict is the write's error", withStatus: true, during: true,
			requests: []string{"patch status 409", "patch", "patch status 409", "patch", "patch status 409"},
			stored:   &stored{UID: "uid-kex"}, conflict: true},
		{name: "without /status, replaced: the uid refuses the main patch",
			meanwhile: func(t *testing.T, rig *guardRig) { rig.recreate(t) },
			requests:  []string{"patch 422"},
			stored:    &stored{UID: "uid-next"}, gone: "replaced"},
		{name: "a finalizer change on a replaced object: its version conflicts, then the uid refuses the rest", fin: addFinalizer,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.recreate(t) },
			requests:  []string{"patch 409", "patch 422"},
			stored:    &stored{UID: "uid-next"}, gone: "replaced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newGuardRig(t, tt.withStatus)
			rig.noStatus = tt.noStatus
			obj := rig.read(t)
			if tt.meanwhile != nil {
				tt.meanwhile(t, rig)
			}
			if tt.during {
				rig.beforePatch = func() { rig.someoneWrites(t) }
			}
			rig.requests, rig.bodies = nil, nil
			p := cyclePatch()
			_, err := rig.w.commit(context.Background(), logr.Discard(), obj, p, tt.fin)
			rig.beforePatch = nil
			if diff := cmp.Diff(tt.requests, rig.requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.bodies)
			}
			gone, isGone := asGone(err)
			switch {
			case tt.gone == "" && isGone:
				t.Errorf("commit() = %v, want the object not gone", err)
			case tt.gone != "" && !isGone:
				t.Errorf("commit() = %v, want the object %s", err, tt.gone)
			case isGone && gone.replaced != (tt.gone == "replaced"):
				t.Errorf("commit() = %v, want the object %s", err, tt.gone)
			case tt.conflict != apierrors.IsConflict(err):
				t.Errorf("commit() = %v, want a conflict: %v", err, tt.conflict)
			case tt.failed != (err != nil && !isGone && !tt.conflict):
				t.Errorf("commit() = %v, want a failed write: %v", err, tt.failed)
			}
			if diff := cmp.Diff(tt.stored, rig.stored(t)); diff != "" {
				t.Errorf("the object under the name -want +got:\n%s", diff)
			}
			for _, body := range rig.bodies {
				if !strings.HasPrefix(body, "status ") && !strings.Contains(body, `"uid":"uid-kex"`) {
					t.Errorf("a main patch without the uid: %s", body)
				}
				if strings.HasPrefix(body, "status ") && !strings.Contains(body, `"resourceVersion":"`) {
					t.Errorf("a status patch without the resourceVersion: %s", body)
				}
			}
			// The patch stays as the cycle made it: kept for the next
			// cycle, it must not carry this write's preconditions.
			if diff := cmp.Diff(mergepatch.Whole(cyclePatch()), mergepatch.Whole(p)); diff != "" {
				t.Errorf("the cycle's patch after the write -want +got:\n%s", diff)
			}
		})
	}
}
