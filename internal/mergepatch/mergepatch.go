// Package mergepatch is what the engine alone does with a cycle's patch
// (patch.Patch): it stores handlers' results in it, and reads it whole, or
// split for the /status subresource, to write it. Causes hand handlers the
// same patch without these, so that no handler can drop or reshape what
// the engine has put there.
package mergepatch

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Split returns the merge patch for the main resource (without status) and
// the one for the status subresource (a {"status": ...} map), either of
// them nil when empty. Without a status subresource, use Whole.
func Split(p *patch.Patch) (main, status map[string]any) {
	for k, v := range body(p) {
		if k == "status" {
			status = map[string]any{"status": v}
			continue
		}
		if main == nil {
			main = map[string]any{}
		}
		main[k] = v
	}
	return main, status
}

// Whole returns the whole merge patch, status included; nil when empty.
func Whole(p *patch.Patch) map[string]any {
	if p.IsEmpty() {
		return nil
	}
	return body(p)
}

// SetResult puts a handler's result into status.<id>: a map is merged into
// what is there, anything else replaces it. Results that do not encode as
// JSON are refused.
func SetResult(p *patch.Patch, id string, result any) error {
	value, err := fields.Normalize(result)
	if err != nil {
		return fmt.Errorf("store the result of %s: %w", id, err)
	}
	if m, ok := value.(map[string]any); ok {
		p.MergeStatus(id, m)
		return nil
	}
	p.SetStatus(id, value)
	return nil
}

// body is the patch's own map (Get with no path).
func body(p *patch.Patch) map[string]any {
	whole, _ := p.Get()
	m, _ := whole.(map[string]any)
	return m
}
