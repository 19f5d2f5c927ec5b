package registry

import "github.com/kopf-go/kopf/pkg/fields"

// FieldID is the id of a handler registered for a field: "<id>/<field>",
// as in Kopf; without a field, the id as it is. Ids are persisted (they
// name progress annotations and results in status), so every kind of
// handler builds them here, the same way.
func FieldID(id string, field fields.Path) string {
	if len(field) == 0 {
		return id
	}
	return SubID(id, field.String())
}

// SubID is the id of a sub-handler: "<parent id>/<id>".
func SubID(parent, id string) string { return parent + "/" + id }
