package diffbase

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/fields"
)

type m = map[string]any

// exampleBody is Kopf's examples/obj.yaml as the API server returns it after
// Kopf has handled it once, with system fields and framework annotations.
func exampleBody() m {
	return m{
		"apiVersion": "kopf.dev/v1",
		"kind":       "KopfExample",
		"metadata": m{
			"name":              "kopf-example-1",
			"namespace":         "default",
			"uid":               "6f1c9f2e-1111-2222-3333-444455556666",
			"resourceVersion":   "12345",
			"generation":        int64(1),
			"creationTimestamp": "2026-11-29T13:40:27Z",
			"finalizers":        []any{"kopf.zalando.org/KopfFinalizerMarker"},
			"labels":            m{"somelabel": "somevalue"},
			"annotations": m{
				"someannotation": "somevalue",
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"kopf.dev/v1"}`,
				"kopf.zalando.org/last-handled-configuration":      `{"spec":{}}` + "\n",
				"kopf.zalando.org/create_fn":                       `{"retries":1}`,
				"kopf.zalando.org/touch-dummy":                     "2026-11-29T13:40:27.369462+00:00",
			},
			"managedFields": []any{m{"manager": "kubectl"}},
		},
		"spec": m{
			"duration": "1m",
			"field":    "value",
			"items":    []any{"item1", "item2"},
		},
		"status": m{
			"create_fn": m{"message": "hello world"},
			"phase":     "Running",
		},
	}
}

func exampleEssence() m {
	return m{
		"spec": m{"duration": "1m", "field": "value", "items": []any{"item1", "item2"}},
		"metadata": m{
			"labels":      m{"somelabel": "somevalue"},
			"annotations": m{"someannotation": "somevalue"},
		},
	}
}

func TestBuildEssence(t *testing.T) {
	tests := []struct {
		name    string
		body    m
		extra   []fields.Path
		ignored []fields.Path
		want    m
	}{
		{"the example object", exampleBody(), nil, nil, exampleEssence()},
		{"resource references only", m{"apiVersion": "group/version", "kind": "Kind"}, nil, nil, m{}},
		{"system metadata only", m{"metadata": m{"uid": "x", "name": "n", "finalizers": []any{"f"}, "deletionTimestamp": "t"}}, nil, nil, m{}},
		{"status only", m{"status": m{"kopf": m{"progress": "x"}, "other": "z"}}, nil, nil, m{}},
		{"other top-level fields are kept", m{"data": m{"k": "v"}, "spec": "s", "kind": "ConfigMap"}, nil, nil,
			m{"data": m{"k": "v"}, "spec": "s"}},
		{"empty labels and annotations are dropped", m{"metadata": m{"labels": m{}, "annotations": m{}}}, nil, nil, m{}},
		{"kubectl's last-applied only", m{"metadata": m{"annotations": m{"kubectl.kubernetes.io/last-applied-configuration": "x"}}}, nil, nil, m{}},
		{"kubectl's last-applied among others",
			m{"metadata": m{"annotations": m{"kubectl.kubernetes.io/last-applied-configuration": "x", "other": "y"}}}, nil, nil,
			m{"metadata": m{"annotations": m{"other": "y"}}}},
		{"Kopf's prefix and its subdomains",
			m{"metadata": m{"annotations": m{
				"kopf.zalando.org/a": "x", "sub.kopf.zalando.org/b": "x", "sub.sub.kopf.zalando.org/c": "x", "other": "y",
			}}}, nil, nil,
			m{"metadata": m{"annotations": m{"other": "y"}}}},
		{"a prefix marked as Kopf-managed",
			m{"metadata": m{"annotations": m{"domain.tld/kopf-managed": "yes", "domain.tld/state": "x", "other.tld/state": "y"}}}, nil, nil,
			m{"metadata": m{"annotations": m{"other.tld/state": "y"}}}},
		{"annotations that only mention kopf are kept",
			m{"metadata": m{"annotations": m{
				"kopf-domain.tld/a": "x", "kopf.domain.tld/b": "x", "domain.tld.kopf/c": "x", "domain.tld-kopf/d": "x",
				"domain.kopf.tld/e": "x", "domain.kopf-tld/f": "x", "domain-kopf.tld/g": "x", "domain-kopf-tld/h": "x",
				"notkopf.zalando.org/i": "x",
			}}}, nil, nil,
			m{"metadata": m{"annotations": m{
				"kopf-domain.tld/a": "x", "kopf.domain.tld/b": "x", "domain.tld.kopf/c": "x", "domain.tld-kopf/d": "x",
				"domain.kopf.tld/e": "x", "domain.kopf-tld/f": "x", "domain-kopf.tld/g": "x", "domain-kopf-tld/h": "x",
				"notkopf.zalando.org/i": "x",
			}}}},
		{"sharding's labels and annotations are not part of the essence",
			m{"metadata": m{
				"labels": m{"ops.shard.kopf.dev/main": "m0123456789ab", "shard.kopf.dev/main": "m0123456789ab", "app": "x",
					"notshard.kopf.dev/y": "z", "shard.kopf.dev.example.com/z": "z"},
				"annotations": m{"ops.shard.kopf.dev/main-next": "mba9876543210", "ops.shard.kopf.dev/main-granted": "m0123456789ab",
					"other": "y"},
			}}, nil, nil,
			m{"metadata": m{"labels": m{"app": "x", "notshard.kopf.dev/y": "z", "shard.kopf.dev.example.com/z": "z"},
				"annotations": m{"other": "y"}}}},
		{"labels are kept whatever their prefix",
			m{"metadata": m{"labels": m{"kopf.zalando.org/x": "y"}}}, nil, nil,
			m{"metadata": m{"labels": m{"kopf.zalando.org/x": "y"}}}},
		{"extra status field", exampleBody(), []fields.Path{{"status", "phase"}}, nil,
			m{
				"spec":     exampleEssence()["spec"],
				"metadata": exampleEssence()["metadata"],
				"status":   m{"phase": "Running"},
			}},
		{"extra metadata field", m{"metadata": m{"uid": "x", "other": "y"}}, []fields.Path{{"metadata", "other"}}, nil,
			m{"metadata": m{"other": "y"}}},
		{"absent extra field", m{"spec": m{"a": 1}}, []fields.Path{{"status", "phase"}}, nil, m{"spec": m{"a": 1}}},
		{"extra field present as null", m{"status": m{"phase": nil}}, []fields.Path{{"status", "phase"}}, nil, m{"status": m{"phase": nil}}},
		{"ignored fields", exampleBody(), nil, []fields.Path{{"spec", "duration"}, {"metadata", "annotations"}},
			m{
				"spec":     m{"field": "value", "items": []any{"item1", "item2"}},
				"metadata": m{"labels": m{"somelabel": "somevalue"}},
			}},
		{"ignored fields are removed after the extra fields", exampleBody(), []fields.Path{{"status", "phase"}}, []fields.Path{{"status", "phase"}},
			exampleEssence()},
		// Kopf's test_status_storage_removes_ignored_fields, plus its empty-parent cleanup.
		{"ignored fields as Kopf's tests",
			m{"a": m{"b": m{"c": "d"}, "e": m{"f": "g"}}, "h": m{"i": "j"}}, nil,
			[]fields.Path{{"a", "b"}, {"a", "e", "f", "g"}, {"h"}, {"k", "l", "m"}},
			m{"a": m{"e": m{"f": "g"}}}},
		{"ignoring the last field drops its emptied parents",
			m{"spec": m{"only": m{"x": 1}}, "metadata": m{"labels": m{"a": "b"}}}, nil,
			[]fields.Path{{"spec", "only", "x"}, {"metadata", "labels", "a"}},
			m{}},
		{"ignoring a field keeps parents that were empty before",
			m{"spec": m{"empty": m{}, "x": 1}}, nil,
			[]fields.Path{{"spec", "x"}},
			m{"spec": m{"empty": m{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildEssence(tt.body, tt.extra, tt.ignored)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BuildEssence() -want +got:\n%s", diff)
			}
		})
	}
}

func TestBuildEssenceLeavesTheBodyAlone(t *testing.T) {
	body := exampleBody()
	essence := BuildEssence(body, []fields.Path{{"status", "create_fn"}}, nil)

	// Mutate everything reachable from the essence.
	spec := essence["spec"].(m)
	spec["field"] = "changed"
	spec["items"].([]any)[0] = "changed"
	essence["metadata"].(m)["labels"].(m)["somelabel"] = "changed"
	essence["metadata"].(m)["annotations"].(m)["someannotation"] = "changed"
	essence["status"].(m)["create_fn"].(m)["message"] = "changed"

	if diff := cmp.Diff(exampleBody(), body); diff != "" {
		t.Errorf("the body changed with its essence -want +got:\n%s", diff)
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name    string
		essence m
		want    string
	}{
		{"the example object", exampleEssence(),
			`{"spec":{"duration":"1m","field":"value","items":["item1","item2"]},"metadata":{"labels":{"somelabel":"somevalue"},"annotations":{"someannotation":"somevalue"}}}`},
		{"empty", m{}, `{}`},
		{"top-level fields sorted, metadata then status last",
			m{"status": m{"phase": "x"}, "metadata": m{"annotations": m{"a": "1"}, "other": "o", "labels": m{"l": "2"}}, "zeta": 1, "data": m{"b": 2, "a": 1}},
			`{"data":{"a":1,"b":2},"zeta":1,"metadata":{"labels":{"l":"2"},"annotations":{"a":"1"},"other":"o"},"status":{"phase":"x"}}`},
		{"scalars as Python writes them",
			m{"spec": m{"s": "value1", "i": int64(123), "f": 123.456, "t": true, "n": nil, "whole": 2.0}},
			`{"spec":{"f":123.456,"i":123,"n":null,"s":"value1","t":true,"whole":2}}`},
		{"no HTML escaping",
			m{"spec": m{"html": "<b>a & b</b>"}},
			`{"spec":{"html":"<b>a & b</b>"}}`},
		{"non-ASCII escaped as Python's json.dumps does",
			m{"metadata": m{"labels": m{"k": "caf\u00e9"}}, "spec": m{"emoji": "\U0001F600", "ctl": "a\nb\x7f"}},
			`{"spec":{"ctl":"a\nb\u007f","emoji":"\ud83d\ude00"},"metadata":{"labels":{"k":"caf\u00e9"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Encode(tt.essence)); got != tt.want {
				t.Errorf("Encode() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
