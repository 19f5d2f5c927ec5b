// Package diffbase builds an object's essence (the part whose changes
// matter to handlers) and stores the last handled essence on the object,
// in Kopf's format, so that the next cycle can tell what has changed.
package diffbase

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/kopf-go/kopf/internal/pyjson"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
)

// BuildEssence extracts what handlers care about from a raw body: every
// top-level field except apiVersion, kind, metadata and status, plus
// metadata.labels and metadata.annotations (without kubectl's last-applied
// configuration, without the annotations of any Kopf-based operator's
// storage, and without sharding's labels and annotations), plus the extra fields some handlers watch (e.g. status.phase),
// minus the ignored fields. The body is not modified; the essence shares
// nothing with it.
func BuildEssence(body map[string]any, extra, ignored []fields.Path) map[string]any {
	essence := make(map[string]any, len(body))
	for k, v := range body {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		essence[k] = fields.DeepCopy(v)
	}
	if labels, ok := fields.Resolve(body, fields.Path{"metadata", "labels"}); ok {
		if m, ok := labels.(map[string]any); ok {
			fields.Set(essence, fields.Path{"metadata", "labels"}, userLabels(m))
		}
	}
	if annotations, ok := fields.Resolve(body, fields.Path{"metadata", "annotations"}); ok {
		if m, ok := annotations.(map[string]any); ok {
			fields.Set(essence, fields.Path{"metadata", "annotations"}, userAnnotations(m))
		}
	}
	for _, p := range extra {
		if v, ok := fields.Resolve(body, p); ok {
			fields.Set(essence, p, fields.DeepCopy(v))
		}
	}
	fields.PruneEmptyStanzas(essence)
	for _, p := range ignored {
		fields.RemovePruning(essence, p)
	}
	return essence
}

// userLabels drops the labels that are a sharded operator's state: an
// object moving between replicas is no change to its handlers.
func userLabels(all map[string]any) map[string]any {
	out := make(map[string]any, len(all))
	for k, v := range all {
		if !isShardKey(k) {
			out[k] = v
		}
	}
	return out
}

// isShardKey tells the labels and annotations of sharding: those of the
// sharding domain itself, and of its subdomains, which name the
// namespaces of rings ("<namespace>.shard.kopf.dev/<ring>").
func isShardKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == keys.ShardPrefix || strings.HasSuffix(prefix, "."+keys.ShardPrefix))
}

// userAnnotations drops the annotations that are some operator's state.
func userAnnotations(all map[string]any) map[string]any {
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	marked := keys.MarkedPrefixes(names)
	out := make(map[string]any, len(all))
	for k, v := range all {
		if k == keys.LastAppliedAnnotation {
			continue
		}
		if prefix, _, ok := strings.Cut(k, "/"); ok && marked[prefix] || isShardKey(k) {
			continue
		}
		out[k] = v
	}
	return out
}

// Encode renders an essence as compact JSON in the order Kopf produces for
// custom resources: the top-level fields sorted, then metadata (labels, then
// annotations, then anything else), then status; nested keys sorted. Python
// Kopf reads it back as the same value whatever the order; the order only
// keeps the stored text identical where it can be. Strings are escaped as
// Python's json.dumps does: no HTML escaping, non-ASCII as \u escapes.
func Encode(essence map[string]any) []byte {
	var b bytes.Buffer
	top := slices.Sorted(maps.Keys(essence))
	top = moveLast(top, "metadata", "status")
	b.WriteByte('{')
	for i, k := range top {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, k)
		b.WriteByte(':')
		if meta, ok := essence[k].(map[string]any); ok && k == "metadata" {
			writeOrdered(&b, meta, "labels", "annotations")
		} else {
			writeValue(&b, essence[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeOrdered(b *bytes.Buffer, m map[string]any, first ...string) {
	order := slices.Sorted(maps.Keys(m))
	for i := len(first) - 1; i >= 0; i-- {
		if idx := slices.Index(order, first[i]); idx >= 0 {
			order = append([]string{first[i]}, slices.Delete(order, idx, idx+1)...)
		}
	}
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		writeValue(b, m[k])
	}
	b.WriteByte('}')
}

// writeValue relies on encoding/json sorting map keys; pyjson escapes as
// Python does.
func writeValue(b *bytes.Buffer, v any) {
	_ = pyjson.Write(b, v) // essences are JSON-decoded values: they always encode
}

func writeString(b *bytes.Buffer, s string) { writeValue(b, s) }

func moveLast(order []string, last ...string) []string {
	for _, name := range last {
		if idx := slices.Index(order, name); idx >= 0 {
			order = append(slices.Delete(order, idx, idx+1), name)
		}
	}
	return order
}
