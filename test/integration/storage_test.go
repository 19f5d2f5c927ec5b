package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// ownProgress is a progress storage of an operator's own, written against
// the public types only: one annotation per handler under its own prefix.
type ownProgress struct{}

const ownPrefix = "progress.example.com/"

func (ownProgress) Fetch(body map[string]any, id string) (*progress.Record, error) {
	text, ok, _ := unstructured.NestedString(body, "metadata", "annotations", ownPrefix+id)
	if !ok {
		return nil, nil
	}
	var r progress.Record
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (ownProgress) Store(_ map[string]any, p *patch.Patch, id string, r progress.Record) {
	encoded, _ := r.MarshalJSON()
	p.SetAnnotation(ownPrefix+id, string(encoded))
}

func (ownProgress) Purge(body map[string]any, p *patch.Patch, id string) {
	if _, ok, _ := unstructured.NestedString(body, "metadata", "annotations", ownPrefix+id); ok {
		p.RemoveAnnotation(ownPrefix + id)
	} else {
		p.Forget("metadata", "annotations", ownPrefix+id)
	}
}

func (ownProgress) Clear(essence map[string]any) {
	annotations, _, _ := unstructured.NestedMap(essence, "metadata", "annotations")
	for key := range annotations {
		if strings.HasPrefix(key, ownPrefix) {
			unstructured.RemoveNestedField(essence, "metadata", "annotations", key)
		}
	}
}

// The engine keeps a handler's progress where the operator's storage says,
// between its retries, and purges it when the handler is done: in a
// storage of the operator's own, and in status as Kopf's
// StatusProgressStorage keeps it.
func TestProgressStorages(t *testing.T) {
	for _, tt := range []struct {
		name    string
		storage progress.Storage
		record  func(obj *unstructured.Unstructured) (string, bool)
	}{
		{"an operator's own", ownProgress{}, func(obj *unstructured.Unstructured) (string, bool) {
			text, ok := obj.GetAnnotations()[ownPrefix+"create_fn"]
			return text, ok
		}},
		{"status", progress.NewStatus(), func(obj *unstructured.Unstructured) (string, bool) {
			r, ok, _ := unstructured.NestedMap(obj.Object, "status", "kopf", "progress", "create_fn")
			encoded, _ := json.Marshal(r)
			return string(encoded), ok && r != nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			reg, kind := kex()
			var attempts atomic.Int32
			handlers.OnCreate(kind, "create_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
				if attempts.Add(1) == 1 {
					return nil, handlers.Temporary(errors.New("not yet"), 2*time.Second)
				}
				return nil, nil
			})
			env.StartOperator(t, ns, reg, handlers.Options{Standalone: true, ProgressStorage: tt.storage})
			create(t, exampleObject(t, ns))
			eventually(t, "the record of the first attempt is kept in the storage", func() bool {
				text, ok := tt.record(get(t, ns, "kopf-example-1"))
				return ok && strings.Contains(text, `"retries":1`) && strings.Contains(text, `"message":"not yet"`)
			})
			if _, ok := get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/create_fn"]; ok {
				t.Error("the record is in the default annotation too")
			}
			eventually(t, "the record is purged once the handler is done", func() bool {
				obj := get(t, ns, "kopf-example-1")
				_, ok := tt.record(obj)
				return attempts.Load() == 2 && !ok && obj.GetAnnotations()[diffbaseAnnotation] != ""
			})
		})
	}
}
