// Package writetest gives the tests of the engine's writes an example
// object and a fake client's answers to the writes' preconditions as the
// API server gives them (seen in envtest): the cycle's, the writer's and
// the daemons' host's tests share them.
package writetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// GVK is the examples' kind.
var GVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// Finalizer is the operator's finalizer by default (Kopf's).
const Finalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Object is an example object "ns/kex" with the spec's field, and the
// annotations given. It has the finalizer, as after its first cycle,
// which adds the finalizer that a delete handler needs and runs nothing
// else.
func Object(spec string, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": spec}}}
	obj.SetGroupVersionKind(GVK)
	obj.SetNamespace("ns")
	obj.SetName("kex")
	obj.SetUID("uid-kex")
	obj.SetAnnotations(annotations)
	obj.SetFinalizers([]string{Finalizer})
	return obj
}

// Unfinalized is obj without finalizers.
func Unfinalized(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj.SetFinalizers(nil)
	return obj
}

// Handled is the diff-base annotation of a spec whose field is the value.
func Handled(spec string) map[string]string {
	return map[string]string{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"` + spec + `"}}` + "\n"}
}

// Preconditions answers a merge patch's preconditions as the API server
// does: a resourceVersion other than the stored one is a 409 Conflict, on
// the object and its /status alike; then a uid other than the stored one
// is 422 Invalid on metadata.uid, on the object only (a custom resource's
// /status ignores it). controller-runtime's fake client checks a main
// patch's resourceVersion, but neither a /status patch's nor a uid.
func Preconditions(ctx context.Context, c client.Client, o client.Object, p client.Patch, status bool) error {
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
	stored.SetGroupVersionKind(GVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), stored); err != nil {
		return nil // the fake answers the patch as it is
	}
	gr := schema.GroupResource{Group: GVK.Group, Resource: "kopfexamples"}
	if v := body.Metadata.ResourceVersion; v != "" && v != stored.GetResourceVersion() {
		return apierrors.NewConflict(gr, o.GetName(), errors.New("the object has been modified"))
	}
	if uid := body.Metadata.UID; !status && uid != "" && uid != stored.GetUID() {
		return apierrors.NewInvalid(schema.GroupKind{Group: GVK.Group, Kind: GVK.Kind}, o.GetName(),
			field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), uid, "field is immutable")})
	}
	return nil
}

// Rig is the example object on controller-runtime's fake client, recording each request with the answer. The fake checks a main
// patch's resourceVersion, but neither a /status patch's (it applies the
// status whatever the version) nor a patch's uid: Preconditions plays the
// API server's part there, as a real one answers (test/integration's
// recreation tests meet the real answers).
type Rig struct {
	// Raw is the store, for others' writes; C is the writer's client.
	Raw      client.WithWatch
	C        client.WithWatch
	Requests []string
	// Bodies are the patches sent, in order.
	Bodies []string
	// BeforePatch runs before each patch reaches the store: someone
	// else's write in between, say.
	BeforePatch func()
	// NoStatus makes /status answer 404 though the object is there, as
	// for a kind whose CRD no longer has the subresource.
	NoStatus bool
}

// NewRig has the example object, unfinalized, in a fake client.
func NewRig(t testing.TB) *Rig {
	t.Helper()
	rig := &Rig{}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(GVK, meta.RESTScopeNamespace)
	answer := func(what string, err error) error {
		code := ""
		if status, ok := err.(apierrors.APIStatus); ok && err != nil {
			code = fmt.Sprint(" ", status.Status().Code)
		}
		rig.Requests = append(rig.Requests, what+code)
		return err
	}
	before := func(p client.Patch, o client.Object, sub string) {
		if data, err := p.Data(o); err == nil {
			rig.Bodies = append(rig.Bodies, strings.TrimSpace(sub+" "+string(data)))
		}
		if rig.BeforePatch != nil {
			rig.BeforePatch()
		}
	}
	rig.Raw = fake.NewClientBuilder().WithRESTMapper(mapper).WithStatusSubresource(Object("a", nil)).
		WithObjects(Unfinalized(Object("a", nil))).Build()
	rig.C = interceptor.NewClient(rig.Raw, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			return answer("get", c.Get(ctx, key, o, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			before(p, o, "")
			if err := Preconditions(ctx, c, o, p, false); err != nil {
				return answer("patch", err)
			}
			return answer("patch", c.Patch(ctx, o, p, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			before(p, o, sub)
			if rig.NoStatus {
				return answer("patch "+sub, apierrors.NewNotFound(schema.GroupResource{Group: GVK.Group, Resource: "kopfexamples"}, o.GetName()))
			}
			if err := Preconditions(ctx, c, o, p, true); err != nil {
				return answer("patch "+sub, err)
			}
			return answer("patch "+sub, c.SubResource(sub).Patch(ctx, o, p, opts...))
		},
	})
	return rig
}

// Read is the object under the example's name as the cycle reads it.
func (rig *Rig) Read(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(GVK)
	if err := rig.C.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "kex"}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// Stored is what the test looks at in the object under the name: whose
// it is, and what of the write it has.
type Stored struct {
	UID    types.UID
	Label  string
	Result bool
}

// Stored is the object under the name, nil if there is none.
func (rig *Rig) Stored(t testing.TB) *Stored {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(GVK)
	err := rig.C.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "kex"}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	done, _, _ := unstructured.NestedBool(obj.Object, "status", "create_fn", "done")
	return &Stored{UID: obj.GetUID(), Label: obj.GetLabels()["handled"], Result: done}
}

// SomeoneWrites changes the object under the name, as another client.
func (rig *Rig) SomeoneWrites(t testing.TB) {
	t.Helper()
	p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"other":"x"}}}`))
	if err := rig.Raw.Patch(context.Background(), Object("a", nil), p); err != nil {
		t.Fatal(err)
	}
}

// Recreate deletes the object and creates another under its name.
func (rig *Rig) Recreate(t testing.TB) {
	t.Helper()
	if err := rig.Raw.Delete(context.Background(), Object("a", nil)); err != nil {
		t.Fatal(err)
	}
	next := Unfinalized(Object("a", nil))
	next.SetUID("uid-next")
	if err := rig.Raw.Create(context.Background(), next); err != nil {
		t.Fatal(err)
	}
}
