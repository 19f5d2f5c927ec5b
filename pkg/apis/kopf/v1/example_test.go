package v1_test

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// A peering object as Kopf and kopf-go write it: one record per operator,
// keyed by its identity. Python Kopf reads the same JSON.
func Example() {
	lifetime := 60
	peering := kopfv1.KopfPeering{
		TypeMeta:   metav1.TypeMeta{APIVersion: kopfv1.GroupVersion.String(), Kind: "KopfPeering"},
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "operators"},
		Status: map[string]*kopfv1.Peer{
			"go-operator@pod-1": {Priority: 100, Lifetime: &lifetime, LastSeen: "2026-12-02T10:00:00.000000+00:00"},
		},
	}
	data, err := json.Marshal(peering.Status)
	if err != nil {
		panic(err)
	}
	fmt.Println(peering.APIVersion, peering.Kind)
	fmt.Println(string(data))
	// Output:
	// kopf.dev/v1 KopfPeering
	// {"go-operator@pod-1":{"priority":100,"lifetime":60,"lastseen":"2026-12-02T10:00:00.000000+00:00"}}
}
