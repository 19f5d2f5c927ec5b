package hierarchies

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OwnerKindLabel is the label that Adopt puts on the children it makes a
// controller reference for: its value names the owner's kind
// (OwnerKindValue). The engine's watch of children (handlers.Children)
// selects children by it, so that its cache holds the children of the
// operator's kinds only, not every object of the child's kind in the
// cluster. Kopf's adopt sets no such label; Kopf ignores it.
const OwnerKindLabel = "kopf.dev/owner-kind"

// maxLabelValue is the API server's limit on a label's value.
const maxLabelValue = 63

// OwnerKindValue is the value of OwnerKindLabel for owners of the kind:
// "<kind>.<group>" in lower case ("kopfexample.kopf.dev"; "pod" for the
// core group's). A longer value than a label can hold is cut and ends in
// a hash of the whole, so that two long kinds still differ.
func OwnerKindValue(gk schema.GroupKind) string {
	value := strings.ToLower(gk.Kind)
	if gk.Group != "" {
		value += "." + strings.ToLower(gk.Group)
	}
	if len(value) <= maxLabelValue {
		return value
	}
	sum := sha256.Sum256([]byte(value))
	hash := hex.EncodeToString(sum[:])[:16]
	// The cut part ends in an alphanumeric character, as a label value
	// must (a kind or group may have a dot or a dash there).
	head := strings.TrimRight(value[:maxLabelValue-len(hash)-1], ".-")
	return head + "-" + hash
}

// labelOwnerKind puts OwnerKindLabel on a child that the owner reference
// makes the owner's controlled child.
func labelOwnerKind(child Object, gvk schema.GroupVersionKind) {
	want := OwnerKindValue(gvk.GroupKind())
	labels := child.GetLabels()
	if labels[OwnerKindLabel] == want {
		return
	}
	own, _ := merged(labels, map[string]string{OwnerKindLabel: want}, true)
	child.SetLabels(own)
}
