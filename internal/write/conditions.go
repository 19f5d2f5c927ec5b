package write

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/conditions"
)

// WithConditions marks the kind's status.conditions as kept by the
// engine too (handlers.Conditions): a status patch that carries them and
// goes again after a conflict takes the engine's conditions into the list
// as the object has it then, so that other writers' conditions written
// meanwhile stay (a merge patch replaces a list whole).
func (w *Writer) WithConditions(keep bool) *Writer {
	w.conditions = keep
	return w
}

// refreshStatus learns the object's live resourceVersion after a
// conflict (Refresh), and where the status patch carries the engine's
// conditions, the live conditions too, rebasing the patch's onto them;
// the same no-op patch answers both.
func (w *Writer) refreshStatus(ctx context.Context, obj client.Object, status map[string]any) (map[string]any, error) {
	body, _ := status["status"].(map[string]any)
	ours, carries := body[conditions.FieldConditions].([]any)
	if !w.conditions || !carries {
		return status, w.Refresh(ctx, obj)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(w.gvk)
	if err := w.sendInto(ctx, obj, withUID(obj, nil), false, live); err != nil {
		if _, ok := AsGone(err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("read %s %s: %w", w.gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	fresh, _, _ := unstructured.NestedSlice(live.Object, "status", conditions.FieldConditions)
	rebased := make(map[string]any, len(body))
	for k, v := range body {
		rebased[k] = v
	}
	rebased[conditions.FieldConditions] = conditions.Rebase(ours, fresh)
	return map[string]any{"status": rebased}, nil
}
