package admission

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kopf-go/kopf/internal/fields"
	"github.com/kopf-go/kopf/internal/patch"
)

// Op is one JSONPatch (RFC 6902) operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// MarshalJSON renders the operation; add and replace always carry a value,
// even a null one.
func (o Op) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// JSONPatch renders merge patches as the JSONPatch that the API server
// applies to a mutated object: the patches are applied to a copy of the
// body one after another (maps merge, null removes, anything else
// replaces), and the result is compared with the body. Like Kopf, it leaves
// out no-op changes (removing what is absent, setting what is there
// already). Lists are replaced whole. Values that do not encode as JSON are
// refused.
func JSONPatch(body map[string]any, patches ...*patch.Patch) ([]Op, error) {
	if body == nil {
		body = map[string]any{}
	}
	target := fields.DeepCopy(body).(map[string]any)
	for _, p := range patches {
		if p == nil || p.IsEmpty() {
			continue
		}
		plain, err := fields.Normalize(p.Body())
		if err != nil {
			return nil, fmt.Errorf("encode the patch: %w", err)
		}
		mergePatch(target, plain.(map[string]any))
	}
	var ops []Op
	diffOps(body, target, "", &ops)
	return ops, nil
}

// mergePatch applies a merge patch to a document as Kopf applies its patch
// before rendering it: null removes the key if it is there, a map applies
// key by key (creating the maps on the way only when it sets something),
// anything else replaces. So removing under an absent key, or an empty map,
// changes nothing.
func mergePatch(doc, p map[string]any) {
	for k, v := range p {
		switch v := v.(type) {
		case nil:
			delete(doc, k)
		case map[string]any:
			child, ok := doc[k].(map[string]any)
			if !ok {
				if !setsValues(v) {
					continue
				}
				child = map[string]any{}
				doc[k] = child
			}
			mergePatch(child, v)
		default:
			doc[k] = fields.DeepCopy(v)
		}
	}
}

// setsValues reports whether a merge patch sets anything (rather than only
// removing).
func setsValues(p map[string]any) bool {
	for _, v := range p {
		switch v := v.(type) {
		case nil:
		case map[string]any:
			if setsValues(v) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// diffOps appends the operations that turn a into b at the path: maps are
// compared key by key (in sorted order, for stable output), everything else
// as a whole value.
func diffOps(a, b any, path string, ops *[]Op) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !fields.Equal(a, b) {
			*ops = append(*ops, Op{Op: "replace", Path: path, Value: b})
		}
		return
	}
	keys := make([]string, 0, len(am)+len(bm))
	for k := range am {
		keys = append(keys, k)
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		av, inA := am[k]
		bv, inB := bm[k]
		sub := path + "/" + escapePointer(k)
		switch {
		case !inB:
			*ops = append(*ops, Op{Op: "remove", Path: sub})
		case !inA:
			*ops = append(*ops, Op{Op: "add", Path: sub, Value: bv})
		default:
			diffOps(av, bv, sub, ops)
		}
	}
}

// escapePointer escapes a key for a JSON pointer (RFC 6901): "~" becomes
// "~0" and "/" becomes "~1" (as in label keys such as "kopf.dev/x").
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
