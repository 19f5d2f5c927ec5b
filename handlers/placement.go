package handlers

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/admission"
)

// ShardPlacementWebhook is the id of the mutating webhook that
// PlaceShardsAtAdmission registers.
const ShardPlacementWebhook = "kopf-shard-placement"

// PlaceShardsAtAdmission has the resource's new objects placed in the
// replica's shard ring as they are created (docs/sharding.md, "Placement
// at admission"): a mutating webhook, ShardPlacementWebhook, called on
// CREATE only and with failurePolicy Ignore, gives each object the owner
// label and the grant of the member that the ring's epoch hashes it to,
// so that the ring's assigner neither writes to it nor receives it. An
// object that the webhook does not place (the webhook failed or was not
// called, the replica has not joined a ring yet or is in none, the object
// has no name yet because it is created with generateName, or it carries
// the ring's owner label already) is placed by the assigner, as without
// the webhook. If the resource has change handlers or daemons, the
// webhook adds the operator's finalizer too, which the owner would add
// before its first handler anyway: a ring keeps an object's name taken
// until its replica is done with it (docs/sharding.md, "One object, one
// name"). Serve it as any webhook of the registry (Options.Webhooks,
// or SetupWebhooksWithManager in the same process as the ring's engine).
func PlaceShardsAtAdmission[T client.Object](res *Resource[T]) {
	placer := &res.reg.placer
	OnMutate(res, ShardPlacementWebhook, func(_ context.Context, obj T, r *admission.Request) error {
		namespace := obj.GetNamespace()
		if namespace == "" {
			namespace = r.Namespace
		}
		if p, ok := placer.Place(namespace, obj.GetName(), obj.GetLabels()); ok {
			r.Patch.SetLabel(p.OwnerLabel, p.Owner)
			r.Patch.SetLabel(p.BucketLabel, p.Bucket)
			r.Patch.SetAnnotation(p.GrantAnnotation, p.Owner)
			kind := res.res.kind
			if works := len(kind.Changing) > 0 || len(kind.Spawning) > 0; works && p.Finalizer != "" && !slices.Contains(obj.GetFinalizers(), p.Finalizer) {
				r.Patch.Set(append(slices.Clone(obj.GetFinalizers()), p.Finalizer), "metadata", "finalizers")
			}
		}
		return nil
	}, Operations(admission.Create), IgnoreFailures())
}
