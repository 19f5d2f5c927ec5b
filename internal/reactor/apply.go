package reactor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/patch"
)

// annotationsSizeLimit is the API server's limit on all annotations of one
// object together (keys and values).
const annotationsSizeLimit = 256 * 1024

// writeTimeout bounds a cycle's write once the operator is stopping or
// freezing: the write outlives that cancellation, because its handlers have
// already run, and a lost write would run them again after the restart.
const writeTimeout = 30 * time.Second

// storeEssence adds the new last handled essence to the cycle's patch.
func (r *reconciler) storeEssence(c *cycle, essence map[string]any) {
	r.settings.DiffBase.Store(c.body, c.patch, essence)
	c.essence = essence
}

// apply writes the cycle's patch and finalizer decision, remembers the
// written resourceVersion for the consistency wait, and tells when to come
// back: a due or sleeping handler is requeued after its delay, unless the
// write itself brings a watch event that starts the next cycle.
func (r *reconciler) apply(ctx context.Context, c *cycle) (reconcile.Result, error) {
	r.guardAnnotationsSize(ctx, c)
	before := c.obj.GetResourceVersion()
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	conflict, err := r.write(writeCtx, c)
	if err != nil {
		if !c.patch.IsEmpty() {
			c.mem.unwritten = c.patch
			c.local.Error(err, "The changes of this cycle could not be written; they are kept and written first in the next cycle.")
		}
		return reconcile.Result{}, err
	}
	written := c.obj.GetResourceVersion() != before
	if written {
		c.mem.expectedVersion = c.obj.GetResourceVersion()
		c.mem.consistencyDeadline = r.settings.Clock.Now().Add(r.settings.ConsistencyTimeout)
	}
	switch {
	case conflict:
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	case len(c.blocking) > 0:
		// Daemons that exit ask for a reconcile themselves; this is the
		// slow re-check of those that do not.
		return reconcile.Result{RequeueAfter: c.polling}, nil
	case c.pending && (c.delay > 0 || !written):
		c.local.V(1).Info(fmt.Sprintf("Sleeping for %s seconds for the delayed handlers.", execution.Seconds(c.delay.Round(logPrecision))))
		return reconcile.Result{RequeueAfter: max(c.delay, time.Millisecond)}, nil
	case c.pending:
		c.local.V(1).Info("Sleeping was skipped because of the patch, 0 seconds left.")
	}
	return reconcile.Result{}, nil
}

// write sends the status patch (where there is a status subresource) and
// then the main patch, which also carries a finalizer change computed
// against the freshest object known, guarded by its resourceVersion. It
// reports a conflict on the finalizer, after writing the rest anyway.
func (r *reconciler) write(ctx context.Context, c *cycle) (conflict bool, err error) {
	main, status, err := r.split(ctx, c.patch)
	if err != nil {
		return false, err
	}
	if status != nil {
		if err := r.send(ctx, c.obj, status, true); err != nil {
			return false, skipGone(c, err)
		}
	}
	if c.finalizer != keepFinalizer {
		main = r.withFinalizer(c, main)
	}
	if main == nil {
		return false, nil
	}
	err = r.send(ctx, c.obj, main, false)
	if apierrors.IsConflict(err) && c.finalizer != keepFinalizer {
		c.local.V(1).Info("The object changed while its finalizer was being updated; retrying in the next cycle.")
		rest := withoutFinalizer(main)
		if rest == nil {
			return true, nil
		}
		return true, skipGone(c, r.send(ctx, c.obj, rest, false))
	}
	return false, skipGone(c, err)
}

// split divides a patch into what goes to /status and what goes to the
// object itself; without a status subresource, everything goes to the
// object.
func (r *reconciler) split(ctx context.Context, p *patch.Patch) (main, status map[string]any, err error) {
	withStatus, err := r.hasStatus(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !withStatus {
		return p.Body(), nil, nil
	}
	main, status = p.Split()
	return main, status, nil
}

// withFinalizer adds the finalizer list and a resourceVersion precondition
// to the main patch: a merge patch replaces lists whole, so the version
// check is what keeps other controllers' finalizers safe.
func (r *reconciler) withFinalizer(c *cycle, main map[string]any) map[string]any {
	finalizers := slices.Clone(c.obj.GetFinalizers())
	switch c.finalizer {
	case addFinalizer:
		if !slices.Contains(finalizers, r.settings.Finalizer) {
			finalizers = append(finalizers, r.settings.Finalizer)
		}
	case removeFinalizer:
		finalizers = slices.DeleteFunc(finalizers, func(f string) bool { return f == r.settings.Finalizer })
	}
	if main == nil {
		main = map[string]any{}
	}
	meta, _ := main["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		main["metadata"] = meta
	}
	if len(finalizers) == 0 {
		meta["finalizers"] = nil
	} else {
		list := make([]any, len(finalizers))
		for i, f := range finalizers {
			list[i] = f
		}
		meta["finalizers"] = list
	}
	meta["resourceVersion"] = c.obj.GetResourceVersion()
	return main
}

// withoutFinalizer is the main patch minus the finalizer change; nil if
// nothing else is left.
func withoutFinalizer(main map[string]any) map[string]any {
	rest := map[string]any{}
	for k, v := range main {
		if k != "metadata" {
			rest[k] = v
			continue
		}
		meta := map[string]any{}
		for mk, mv := range v.(map[string]any) {
			if mk != "finalizers" && mk != "resourceVersion" {
				meta[mk] = mv
			}
		}
		if len(meta) > 0 {
			rest["metadata"] = meta
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return rest
}

// send applies one merge patch. The API server answers with the object's
// metadata only: the cycle needs nothing else of the answer (the next one
// reads the object from the cache), and decoding whole objects was the
// largest share of a cycle's CPU. The answer's metadata (resourceVersion
// above all) is copied into obj; its spec and status stay as they were.
func (r *reconciler) send(ctx context.Context, obj client.Object, body map[string]any, status bool) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode the patch: %w", err)
	}
	p := client.RawPatch(types.MergePatchType, data)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(r.gvk)
	meta.SetNamespace(obj.GetNamespace())
	meta.SetName(obj.GetName())
	if status {
		err = r.client().Status().Patch(ctx, meta, p)
	} else {
		err = r.client().Patch(ctx, meta, p)
	}
	if err == nil {
		copyMetadata(obj, meta)
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("patch %s %s: %w", r.gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return err
}

// copyMetadata brings a patch's answer into the cycle's object: what a
// merge patch can change in metadata, and what the API server changes
// with every write.
func copyMetadata(obj client.Object, from *metav1.PartialObjectMetadata) {
	obj.SetResourceVersion(from.GetResourceVersion())
	obj.SetGeneration(from.GetGeneration())
	obj.SetAnnotations(from.GetAnnotations())
	obj.SetLabels(from.GetLabels())
	obj.SetFinalizers(from.GetFinalizers())
	obj.SetOwnerReferences(from.GetOwnerReferences())
	obj.SetDeletionTimestamp(from.GetDeletionTimestamp())
	obj.SetManagedFields(from.GetManagedFields())
}

// logPrecision is what measured delays are rounded to in log lines: the
// clock's nanosecond noise is not worth printing ("1.5", not "1.499999").
const logPrecision = time.Millisecond

// skipGone turns "the object is gone" into nothing to do.
func skipGone(c *cycle, err error) error {
	if apierrors.IsNotFound(err) {
		c.local.V(1).Info("Patching was skipped: the object does not exist anymore.")
		return nil
	}
	return err
}

// guardAnnotationsSize keeps an oversized last handled essence out of the
// patch (the API server would reject the whole write, and with it the
// handlers' progress): the essence is then kept in this process's memory,
// and the problem is logged and posted as a Warning Event.
func (r *reconciler) guardAnnotationsSize(ctx context.Context, c *cycle) {
	if c.essence == nil {
		return
	}
	size := 0
	current := c.obj.GetAnnotations()
	patched, _ := c.patch.Get("metadata", "annotations")
	changes, _ := patched.(map[string]any)
	for k, v := range current {
		if _, changed := changes[k]; !changed {
			size += len(k) + len(v)
		}
	}
	for k, v := range changes {
		if s, ok := v.(string); ok {
			size += len(k) + len(s)
		}
	}
	if size <= annotationsSizeLimit {
		c.mem.oversizedEssence = nil
		return
	}
	r.settings.DiffBase.Forget(c.body, c.patch)
	c.mem.oversizedEssence = c.essence
	r.report(ctx, c, "oversized", fmt.Sprint(size), ReasonDiffBaseTooLarge,
		fmt.Sprintf("The last handled configuration does not fit into the annotations (%d bytes of annotations, the limit is %d); it is kept in memory only, so after a restart the changes since the last stored one are handled again. A status diffbase storage avoids this.", size, annotationsSizeLimit))
}
