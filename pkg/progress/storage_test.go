package progress

import (
	"fmt"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
	"github.com/kopf-go/kopf/pkg/patch"
)

type m = map[string]any

const example = "my-operator.example.com"

// contentJSON is the record that Kopf's key-hashing tests store, as Python
// serialises it (including the null message).
const contentJSON = `{"started":"2020-01-01T00:00:00","stopped":"2020-12-31T23:59:59","delayed":"3000-01-01T00:00:00","retries":0,"success":false,"failure":false,"message":null}`

var contentData = Record{Started: ts("2020-01-01T00:00:00Z"), Stopped: ts("2020-12-31T23:59:59Z"), Delayed: ts("3000-01-01T00:00:00Z")}

// goldenKeys are the handler ids and annotation keys of Kopf's
// tests/persistence/test_annotations_hashing.py (COMMON, V1 and V2 keys).
var goldenKeys = []struct{ id, key string }{
	{"a_b.c-d/e", example + "/a_b.c-d.e"},
	{"x", example + "/x"},
	{strings.Repeat("x", 39), example + "/" + strings.Repeat("x", 39)},
	{strings.Repeat("x", 40), example + "/" + strings.Repeat("x", 30) + "xx-tEokcg"},
	{strings.Repeat("y", 40), example + "/" + strings.Repeat("y", 30) + "yy-VZlvhw"},
	{strings.Repeat("z", 40), example + "/" + strings.Repeat("z", 30) + "zz-LlPQyA"},
	{strings.Repeat("fn", 323), example + "/" + strings.Repeat("fn", 15) + "fn-Az-r.g"},
	{strings.Repeat("x", 63), example + "/" + strings.Repeat("x", 63)},
	{strings.Repeat("x", 64), example + "/" + strings.Repeat("x", 54) + "xx-SItAqA"},
	{strings.Repeat("y", 64), example + "/" + strings.Repeat("y", 54) + "yy-0d251g"},
	{strings.Repeat("z", 64), example + "/" + strings.Repeat("z", 54) + "zz-E7wvIA"},
	{strings.Repeat("fn", 323), example + "/" + strings.Repeat("fn", 27) + "fn-Az-r.g"},
}

func exampleStorages() map[string]Storage {
	annotations := &Annotations{Keys: keys.Convention{Prefix: example, V1: true}}
	return map[string]Storage{
		"annotations": annotations,
		"smart":       Multi{annotations, &Status{Field: fields.Path{"status", "kopf", "progress"}, ReadOnly: true}},
	}
}

func withAnnotations(annotations m) m { return m{"metadata": m{"annotations": annotations}} }

func patchAnnotations(p *patch.Patch) m {
	v, _ := p.Get("metadata", "annotations")
	a, _ := v.(m)
	return a
}

func TestAnnotationsFetchGoldenKeys(t *testing.T) {
	for name, s := range exampleStorages() {
		for _, k := range goldenKeys {
			t.Run(fmt.Sprintf("%s/%.40s", name, k.key), func(t *testing.T) {
				body := withAnnotations(m{k.key: contentJSON})
				got, err := s.Fetch(body, k.id)
				if err != nil {
					t.Fatalf("Fetch() error: %v", err)
				}
				if got == nil {
					t.Fatalf("Fetch() found nothing under %s", k.key)
				}
				if diff := cmp.Diff(contentData, *got); diff != "" {
					t.Errorf("Fetch() -want +got:\n%s", diff)
				}
			})
		}
	}
}

func TestAnnotationsStoreGoldenKeys(t *testing.T) {
	for name, s := range exampleStorages() {
		for _, k := range goldenKeys {
			t.Run(fmt.Sprintf("%s/%.40s", name, k.key), func(t *testing.T) {
				p := patch.New()
				s.Store(withAnnotations(m{k.key: "null"}), p, k.id, contentData)
				got, ok := patchAnnotations(p)[k.key]
				if !ok {
					t.Fatalf("Store() did not write %s; patch: %v", k.key, patchAnnotations(p))
				}
				want := `{"started":"2020-01-01T00:00:00.000000+00:00","stopped":"2020-12-31T23:59:59.000000+00:00","delayed":"3000-01-01T00:00:00.000000+00:00","retries":0,"success":false,"failure":false}`
				if got != want {
					t.Errorf("stored %s =\n%v\nwant\n%s", k.key, got, want)
				}
			})
		}
	}
}

func TestAnnotationsPurgeGoldenKeys(t *testing.T) {
	for name, s := range exampleStorages() {
		for _, k := range goldenKeys {
			t.Run(fmt.Sprintf("%s/%.40s", name, k.key), func(t *testing.T) {
				p := patch.New()
				s.Purge(withAnnotations(m{k.key: "null"}), p, k.id)
				got := patchAnnotations(p)
				// Only the key on the body is nulled; the other form of the
				// key (V1 or V2), absent from the body, is not mentioned.
				if diff := cmp.Diff(m{k.key: nil}, got); diff != "" {
					t.Errorf("Purge() patch annotations -want +got:\n%s", diff)
				}
			})
		}
	}
}

func TestAnnotationsStoreWritesV1AndV2Keys(t *testing.T) {
	long := strings.Repeat("x", 64)
	p := patch.New()
	NewAnnotations().Store(m{}, p, long, Record{Purpose: "create"})
	want := m{
		"kopf.zalando.org/" + strings.Repeat("x", 54) + "xx-SItAqA": `{"purpose":"create","retries":0,"success":false,"failure":false}`,
		"kopf.zalando.org/" + strings.Repeat("x", 39) + "-SItAqA":   `{"purpose":"create","retries":0,"success":false,"failure":false}`,
	}
	if diff := cmp.Diff(want, patchAnnotations(p)); diff != "" {
		t.Errorf("Store() -want +got:\n%s", diff)
	}
}

func TestAnnotationsFetch(t *testing.T) {
	v2 := "kopf.zalando.org/" + strings.Repeat("x", 54) + "xx-SItAqA"
	v1 := "kopf.zalando.org/" + strings.Repeat("x", 39) + "-SItAqA"
	long := strings.Repeat("x", 64)
	tests := []struct {
		name    string
		body    m
		id      string
		want    *Record
		wantErr string
	}{
		{"no metadata", m{}, "fn", nil, ""},
		{"no annotation", withAnnotations(m{"other": "x"}), "fn", nil, ""},
		{"the default prefix", withAnnotations(m{"kopf.zalando.org/fn": `{"purpose":"update","retries":2}`}), "fn",
			&Record{Purpose: "update", Retries: 2}, ""},
		{"a field handler's id", withAnnotations(m{"kopf.zalando.org/fn.spec.field": `{"retries":1}`}), "fn/spec.field",
			&Record{Retries: 1}, ""},
		{"V2 first", withAnnotations(m{v2: `{"retries":2}`, v1: `{"retries":1}`}), long, &Record{Retries: 2}, ""},
		{"V1 when V2 is absent", withAnnotations(m{v1: `{"retries":1}`}), long, &Record{Retries: 1}, ""},
		{"V1 when V2 is null", withAnnotations(m{v2: "null", v1: `{"retries":1}`}), long, &Record{Retries: 1}, ""},
		{"the text null is none", withAnnotations(m{"kopf.zalando.org/fn": "null"}), "fn", nil, ""},
		{"malformed", withAnnotations(m{"kopf.zalando.org/fn": "{not json"}), "fn", nil, `read progress of "fn" from annotation kopf.zalando.org/fn`},
		{"wrong type", withAnnotations(m{"kopf.zalando.org/fn": `{"retries":"many"}`}), "fn", nil, `read progress of "fn"`},
		{"replicaset of a deployment", m{
			"kind": "ReplicaSet",
			"metadata": m{
				"ownerReferences": []any{m{"kind": "Deployment"}},
				"annotations":     m{"kopf.zalando.org/fn": `{"retries":1}`, "kopf.zalando.org/fn-ofDRS": `{"retries":5}`},
			},
		}, "fn", &Record{Retries: 5}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewAnnotations().Fetch(tt.body, tt.id)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Fetch() error = %v, want one containing %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Fetch() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fetch() -want +got:\n%s", diff)
			}
		})
	}
}

func TestAnnotationsStoreMarker(t *testing.T) {
	record := `{"retries":0,"success":false,"failure":false}`
	tests := []struct {
		name   string
		prefix string
		body   m
		want   m
	}{
		{"no marker for kopf.zalando.org", "kopf.zalando.org", m{},
			m{"kopf.zalando.org/fn": record}},
		{"no marker for other kopf. prefixes", "kopf.example.com", m{},
			m{"kopf.example.com/fn": record}},
		{"a marker for a custom prefix", example, m{},
			m{example + "/fn": record, example + "/kopf-managed": "yes"}},
		{"no marker when the object has it", example, withAnnotations(m{example + "/kopf-managed": "yes"}),
			m{example + "/fn": record}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := patch.New()
			s := &Annotations{Keys: keys.Convention{Prefix: tt.prefix, V1: true}}
			s.Store(tt.body, p, "fn", Record{})
			if diff := cmp.Diff(tt.want, patchAnnotations(p)); diff != "" {
				t.Errorf("Store() -want +got:\n%s", diff)
			}
		})
	}
}

func TestPurge(t *testing.T) {
	tests := []struct {
		name    string
		storage Storage
		body    m
		before  func(p *patch.Patch)
		want    m
	}{
		{"annotation on the body is nulled", NewAnnotations(),
			withAnnotations(m{"kopf.zalando.org/fn": "{}"}), nil,
			m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": nil}}}},
		{"annotation only in the patch is dropped from it", NewAnnotations(),
			m{}, func(p *patch.Patch) {
				p.SetAnnotation("kopf.zalando.org/fn", "{}")
				p.SetAnnotation("other", "kept")
			},
			m{"metadata": m{"annotations": m{"other": "kept"}}}},
		{"annotation on both is nulled", NewAnnotations(),
			withAnnotations(m{"kopf.zalando.org/fn": "{}"}), func(p *patch.Patch) { p.SetAnnotation("kopf.zalando.org/fn", "{}") },
			m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": nil}}}},
		{"absent everywhere is left alone", NewAnnotations(), m{}, nil, m{}},
		{"legacy status record is nulled, even read-only", &Status{Field: fields.Path{"status", "kopf", "progress"}, ReadOnly: true},
			m{"status": m{"kopf": m{"progress": m{"fn": m{"retries": 1}}}}}, nil,
			m{"status": m{"kopf": m{"progress": m{"fn": nil}}}}},
		{"status record only in the patch is dropped", &Status{Field: fields.Path{"status", "kopf", "progress"}},
			m{}, func(p *patch.Patch) { p.Set(m{"retries": 1}, "status", "kopf", "progress", "fn") },
			m{}},
		{"smart purges both", NewSmart(),
			m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": "{}"}}, "status": m{"kopf": m{"progress": m{"fn": m{}}}}}, nil,
			m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": nil}}, "status": m{"kopf": m{"progress": m{"fn": nil}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := patch.New()
			if tt.before != nil {
				tt.before(p)
			}
			tt.storage.Purge(tt.body, p, "fn")
			got := mergepatch.Whole(p)
			if got == nil {
				got = m{}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Purge() patch -want +got:\n%s", diff)
			}
		})
	}
}

func TestStatusFetch(t *testing.T) {
	s := &Status{Field: fields.Path{"status", "kopf", "progress"}, ReadOnly: true}
	tests := []struct {
		name    string
		body    m
		want    *Record
		wantErr bool
	}{
		{"absent", m{}, nil, false},
		{"null", m{"status": m{"kopf": m{"progress": m{"fn": nil}}}}, nil, false},
		{"a record", m{"status": m{"kopf": m{"progress": m{"fn": m{
			"started": "2020-01-01T00:00:00", "retries": int64(3), "success": true, "message": "ok",
		}}}}}, &Record{Started: ts("2020-01-01T00:00:00Z"), Retries: 3, Success: true, Message: str("ok")}, false},
		{"another handler's record only", m{"status": m{"kopf": m{"progress": m{"other": m{"retries": 1}}}}}, nil, false},
		{"not a map", m{"status": m{"kopf": m{"progress": m{"fn": "garbage"}}}}, nil, true},
		{"the field is not a map", m{"status": m{"kopf": m{"progress": "garbage"}}}, nil, false},
		{"the field is null", m{"status": m{"kopf": m{"progress": nil}}}, nil, false},
		{"a parent is not a map", m{"status": m{"kopf": "garbage"}}, nil, false},
		{"wrong type inside", m{"status": m{"kopf": m{"progress": m{"fn": m{"retries": "x"}}}}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Fetch(tt.body, "fn")
			if (err != nil) != tt.wantErr {
				t.Fatalf("Fetch() error = %v, want an error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fetch() -want +got:\n%s", diff)
			}
		})
	}
}

func TestStatusStore(t *testing.T) {
	r := Record{Started: ts("2020-01-01T00:00:00Z"), Purpose: "create", Retries: 1, Success: true}
	t.Run("read-only writes nothing", func(t *testing.T) {
		p := patch.New()
		(&Status{Field: fields.Path{"status", "kopf", "progress"}, ReadOnly: true}).Store(m{}, p, "fn", r)
		if !p.IsEmpty() {
			t.Errorf("Store() patched %v", mergepatch.Whole(p))
		}
	})
	t.Run("writable writes a map", func(t *testing.T) {
		p := patch.New()
		(&Status{Field: fields.Path{"status", "kopf", "progress"}}).Store(m{}, p, "parent/child", r)
		want := m{"status": m{"kopf": m{"progress": m{"parent/child": m{
			"started": "2020-01-01T00:00:00.000000+00:00", "purpose": "create", "retries": 1.0, "success": true, "failure": false,
		}}}}}
		if diff := cmp.Diff(want, mergepatch.Whole(p)); diff != "" {
			t.Errorf("Store() -want +got:\n%s", diff)
		}
	})
	t.Run("smart writes annotations only", func(t *testing.T) {
		p := patch.New()
		NewSmart().Store(m{}, p, "fn", r)
		want := m{"metadata": m{"annotations": m{
			"kopf.zalando.org/fn": `{"started":"2020-01-01T00:00:00.000000+00:00","purpose":"create","retries":1,"success":true,"failure":false}`,
		}}}
		if diff := cmp.Diff(want, mergepatch.Whole(p)); diff != "" {
			t.Errorf("Store() -want +got:\n%s", diff)
		}
	})
}

func TestMultiFetch(t *testing.T) {
	good := `{"retries":1}`
	legacy := m{"retries": int64(2)}
	tests := []struct {
		name    string
		body    m
		want    *Record
		wantErr bool
	}{
		{"nothing anywhere", m{}, nil, false},
		{"annotations win", m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": good}}, "status": m{"kopf": m{"progress": m{"fn": legacy}}}},
			&Record{Retries: 1}, false},
		{"falls back to the legacy status", m{"status": m{"kopf": m{"progress": m{"fn": legacy}}}},
			&Record{Retries: 2}, false},
		{"a malformed annotation falls back to status", m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": "{bad"}}, "status": m{"kopf": m{"progress": m{"fn": legacy}}}},
			&Record{Retries: 2}, false},
		{"a malformed annotation alone is an error", m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": "{bad"}}},
			nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewSmart().Fetch(tt.body, "fn")
			if (err != nil) != tt.wantErr {
				t.Fatalf("Fetch() error = %v, want an error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fetch() -want +got:\n%s", diff)
			}
		})
	}
}

func TestClear(t *testing.T) {
	tests := []struct {
		name    string
		storage Storage
		essence m
		want    m
	}{
		{"annotations under the prefix go", NewAnnotations(),
			m{"spec": m{"a": 1}, "metadata": m{"annotations": m{"kopf.zalando.org/fn": "{}", "kopf.zalando.org/touch-dummy": "x", "other": "y", "sub.kopf.zalando.org/z": "kept"}}},
			m{"spec": m{"a": 1}, "metadata": m{"annotations": m{"other": "y", "sub.kopf.zalando.org/z": "kept"}}}},
		{"empty stanzas go", NewAnnotations(),
			m{"spec": m{}, "metadata": m{"annotations": m{"kopf.zalando.org/fn": "{}"}, "labels": m{}}, "status": m{}},
			m{"spec": m{}}},
		{"a custom prefix only", &Annotations{Keys: keys.Convention{Prefix: example}},
			m{"metadata": m{"annotations": m{example + "/fn": "{}", "kopf.zalando.org/fn": "{}", example + "x/fn": "kept"}}},
			m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": "{}", example + "x/fn": "kept"}}}},
		{"status field goes", &Status{Field: fields.Path{"status", "kopf", "progress"}},
			m{"status": m{"kopf": m{"progress": m{"fn": m{}}}, "phase": "x"}},
			m{"status": m{"kopf": m{}, "phase": "x"}}},
		{"empty status goes", &Status{Field: fields.Path{"status", "progress"}},
			m{"spec": 1, "status": m{"progress": m{"fn": m{}}}},
			m{"spec": 1}},
		{"smart clears both", NewSmart(),
			m{"metadata": m{"annotations": m{"kopf.zalando.org/fn": "{}"}}, "status": m{"kopf": m{"progress": m{}}, "phase": "x"}},
			m{"status": m{"kopf": m{}, "phase": "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.storage.Clear(tt.essence)
			if diff := cmp.Diff(tt.want, tt.essence); diff != "" {
				t.Errorf("Clear() -want +got:\n%s", diff)
			}
		})
	}
}

func TestNewSmart(t *testing.T) {
	s := NewSmart()
	if len(s) != 2 {
		t.Fatalf("NewSmart() has %d storages, want 2", len(s))
	}
	a, ok := s[0].(*Annotations)
	if !ok || a.Keys != (keys.Convention{Prefix: "kopf.zalando.org", V1: true}) {
		t.Errorf("NewSmart()[0] = %#v, want annotations under kopf.zalando.org with V1 keys", s[0])
	}
	st, ok := s[1].(*Status)
	if !ok || !st.ReadOnly || st.Field.String() != "status.kopf.progress" {
		t.Errorf("NewSmart()[1] = %#v, want read-only status.kopf.progress", s[1])
	}
}
