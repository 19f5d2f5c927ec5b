package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"

	"github.com/kopf-go/kopf/internal/mergepatch"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
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
// applies to a mutated object: the patches are applied to the body one
// after another (maps merge, null removes, anything else replaces), and
// the result is compared with the body. Like Kopf, it leaves out no-op
// changes (removing what is absent, setting what is there already). Lists
// are replaced whole. Values that do not encode as JSON are refused. The
// body is not changed, nor copied: the result shares with it whatever the
// patches leave alone, so its cost is the patches', not the object's.
func JSONPatch(body map[string]any, patches ...*patch.Patch) ([]Op, error) {
	if body == nil {
		body = map[string]any{}
	}
	target := body
	for _, p := range patches {
		if p == nil || p.IsEmpty() {
			continue
		}
		plain, err := fields.Normalize(mergepatch.Whole(p))
		if err != nil {
			return nil, fmt.Errorf("encode the patch: %w", err)
		}
		target, _ = mergePatch(target, plain.(map[string]any))
	}
	var ops []Op
	diffOps(body, target, "", &ops)
	return ops, nil
}

// mergePatch applies a merge patch to a document as Kopf applies its patch
// before rendering it: null removes the key if it is there, a map applies
// key by key (creating the maps on the way only when it sets something),
// anything else replaces. So removing under an absent key, or an empty map,
// changes nothing. The document stays as it is: a map that changes is
// copied first (shallowly), and the result shares the rest with it;
// changed says whether the result differs from doc.
func mergePatch(doc, p map[string]any) (out map[string]any, changed bool) {
	out = doc
	set := func(k string, v any, remove bool) {
		if !changed {
			out, changed = maps.Clone(doc), true
		}
		if remove {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	for k, v := range p {
		switch v := v.(type) {
		case nil:
			if _, ok := doc[k]; ok {
				set(k, nil, true)
			}
		case map[string]any:
			child, ok := doc[k].(map[string]any)
			if !ok {
				if !setsValues(v) {
					continue
				}
				child = map[string]any{}
			}
			if merged, childChanged := mergePatch(child, v); childChanged || !ok {
				set(k, merged, false)
			}
		default:
			set(k, fields.DeepCopy(v), false)
		}
	}
	return out, changed
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
	if aok && bok && sameMap(am, bm) {
		return // a part that no patch touched
	}
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

// sameMap reports whether a and b are one map, not two equal ones.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// escapePointer escapes a key for a JSON pointer (RFC 6901): "~" becomes
// "~0" and "/" becomes "~1" (as in label keys such as "kopf.dev/x").
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
