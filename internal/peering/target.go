package peering

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// Target is one peering object: the KopfPeering Name in Namespace, or,
// without a namespace, the ClusterKopfPeering Name.
type Target struct {
	Namespace string
	Name      string
}

// Targets are the peering objects an operator serving the namespaces takes
// part in: the KopfPeering of each namespace, or, for the whole cluster
// (no namespaces), the ClusterKopfPeering.
func Targets(name string, namespaces []string) []Target {
	if len(namespaces) == 0 {
		return []Target{{Name: name}}
	}
	out := make([]Target, 0, len(namespaces))
	for _, ns := range namespaces {
		out = append(out, Target{Namespace: ns, Name: name})
	}
	return out
}

// Kind is the target's kind.
func (t Target) Kind() string {
	if t.Namespace == "" {
		return "ClusterKopfPeering"
	}
	return "KopfPeering"
}

// Resource is the target's resource.
func (t Target) Resource() schema.GroupVersionResource {
	if t.Namespace == "" {
		return kopfv1.GroupVersion.WithResource(kopfv1.ClusterKopfPeeringResource)
	}
	return kopfv1.GroupVersion.WithResource(kopfv1.KopfPeeringResource)
}

// String names the target as Kopf's log lines do.
func (t Target) String() string {
	if t.Namespace == "" {
		return fmt.Sprintf("'%s' cluster-wide", t.Name)
	}
	return fmt.Sprintf("'%s' in '%s'", t.Name, t.Namespace)
}

func (t Target) blocker() string { return "peering " + t.String() }

// WriteRecords merges records into the peering object's status; a nil
// record removes that identity's. The peering CRDs have no status
// subresource (as Kopf's), so the patch goes to the object itself.
func WriteRecords(ctx context.Context, dyn dynamic.Interface, t Target, records map[string]any) error {
	data, err := json.Marshal(map[string]any{"status": records})
	if err != nil {
		return fmt.Errorf("render the peer records: %w", err)
	}
	_, err = dyn.Resource(t.Resource()).Namespace(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}
