// Package kex is the KopfExample kind as a Go type, written as kubebuilder
// would generate it: the benchmark's operators, kopf-go's and the
// hand-written baseline, both handle it typed, as a Go operator would.
package kex

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the kind's API group and version.
var GroupVersion = schema.GroupVersion{Group: "kopf.dev", Version: "v1"}

// Resource is the kind's plural name, as the API paths have it.
const Resource = "kopfexamples"

// AddToScheme registers the kind and its list.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &KopfExample{}, &KopfExampleList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// KopfExample is one object of the kind.
type KopfExample struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec,omitempty"`
	Status            Status `json:"status,omitempty"`
}

// Spec is what the benchmark's objects carry. Counter is what the driver
// changes in updates: a handler that sees a counter it has seen handled
// already runs on a stale body.
type Spec struct {
	Duration string   `json:"duration,omitempty"`
	Field    string   `json:"field,omitempty"`
	Items    []string `json:"items,omitempty"`
	Counter  int      `json:"counter,omitempty"`
}

// Status holds the create handler's result.
type Status struct {
	CreateFn *Result `json:"create_fn,omitempty"`
}

// Result is the small result that the create handler returns.
type Result struct {
	Message string `json:"message,omitempty"`
}

// KopfExampleList is a list of the kind.
type KopfExampleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KopfExample `json:"items"`
}

// DeepCopyInto copies the object into out.
func (in *KopfExample) DeepCopyInto(out *KopfExample) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Spec.Items != nil {
		out.Spec.Items = append([]string(nil), in.Spec.Items...)
	}
	if in.Status.CreateFn != nil {
		r := *in.Status.CreateFn
		out.Status.CreateFn = &r
	}
}

// DeepCopy returns a copy of the object.
func (in *KopfExample) DeepCopy() *KopfExample {
	if in == nil {
		return nil
	}
	out := &KopfExample{}
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject is DeepCopy for runtime.Object.
func (in *KopfExample) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyObject copies the list.
func (in *KopfExampleList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &KopfExampleList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]KopfExample, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// New returns the benchmark's object number i in the namespace: the
// example object of Kopf's examples, with a counter of 0.
func New(namespace string, i int) *KopfExample {
	return &KopfExample{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "KopfExample"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("kex-%05d", i),
			Labels: map[string]string{"somelabel": "somevalue"}, Annotations: map[string]string{"someannotation": "somevalue"}},
		Spec: Spec{Duration: "1m", Field: "value", Items: []string{"item1", "item2"}},
	}
}

// Baseline's and the ceiling's bookkeeping: the finalizer and the
// annotation with the last handled spec, as a hand-written operator would
// name them.
const (
	Finalizer   = "bench.kopf.dev/finalizer"
	LastHandled = "bench.kopf.dev/last-handled"
	// KopfLastHandled is kopf-go's (and Kopf's) diffbase annotation.
	KopfLastHandled = "kopf.zalando.org/last-handled-configuration"
)

// LastHandledOf returns the annotation's value for a spec, as the baseline
// and the ceiling write it: {"spec": ...}, the shape of kopf-go's diffbase.
func LastHandledOf(spec Spec) string {
	b, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		panic(err) // a Spec always marshals
	}
	return string(b)
}

// HandledCounter returns the counter of the last handled spec in the
// annotation key, and whether there is one: the create handler's result
// in status, and the annotation. It is how the benchmark's driver sees
// that an object is handled, whichever operator handles it.
func HandledCounter(obj *KopfExample, key string) (int, bool) {
	if obj.Status.CreateFn == nil {
		return 0, false
	}
	value, ok := obj.Annotations[key]
	if !ok {
		return 0, false
	}
	var last struct {
		Spec Spec `json:"spec"`
	}
	if err := json.Unmarshal([]byte(value), &last); err != nil {
		return 0, false
	}
	return last.Spec.Counter, true
}
