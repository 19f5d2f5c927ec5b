package diffbase

import (
	"github.com/kopf-go/kopf/internal/mergepatch"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
	"github.com/kopf-go/kopf/pkg/patch"
)

const (
	example    = "my-operator.example.com"
	lastKey    = "kopf.zalando.org/last-handled-configuration"
	exampleKey = example + "/diff-base"
)

// essence1 and essence1JSON are the essence of Kopf's diffbase storage tests
// and the text Python's json.dumps(..., separators=(',', ':')) makes of it.
var essence1 = m{"spec": m{"string-field": "value1", "integer-field": 123.0, "float-field": 123.456, "false-field": false, "true-field": true}}

const essence1JSON = `{"spec":{"false-field":false,"float-field":123.456,"integer-field":123,"string-field":"value1","true-field":true}}`

func TestNewAnnotationsDefaults(t *testing.T) {
	s := NewAnnotations()
	if s.Key != "last-handled-configuration" || s.Keys != (keys.Convention{Prefix: "kopf.zalando.org", V1: true}) || s.Ignored != nil {
		t.Errorf("NewAnnotations() = %+v", s)
	}
	if got := NewStatus().Field.String(); got != "status.kopf.last-handled-configuration" {
		t.Errorf("NewStatus().Field = %q", got)
	}
}

func TestStoreExampleEssence(t *testing.T) {
	p := patch.New()
	body := exampleBody()
	s := NewAnnotations()
	got := s.Store(body, p, s.Build(body, nil))
	want := `{"spec":{"duration":"1m","field":"value","items":["item1","item2"]},"metadata":{"labels":{"somelabel":"somevalue"},"annotations":{"someannotation":"somevalue"}}}` + "\n"
	if got != want {
		t.Errorf("Store() returned\n%q\nwant\n%q", got, want)
	}
	if diff := cmp.Diff(m{"metadata": m{"annotations": m{lastKey: want}}}, mergepatch.Whole(p)); diff != "" {
		t.Errorf("Store() patch -want +got:\n%s", diff)
	}
}

func TestAnnotationsStore(t *testing.T) {
	tests := []struct {
		name string
		s    *Annotations
		body m
		want m
	}{
		{"default prefix, no marker", NewAnnotations(), m{},
			m{lastKey: essence1JSON + "\n"}},
		{"custom prefix and key, with a marker", &Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: "diff-base"}, m{},
			m{exampleKey: essence1JSON + "\n", example + "/kopf-managed": "yes"}},
		{"marker already on the object", &Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: "diff-base"},
			m{"metadata": m{"annotations": m{example + "/kopf-managed": "yes"}}},
			m{exampleKey: essence1JSON + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := patch.New()
			tt.s.Store(tt.body, p, essence1)
			if diff := cmp.Diff(m{"metadata": m{"annotations": tt.want}}, mergepatch.Whole(p)); diff != "" {
				t.Errorf("Store() patch -want +got:\n%s", diff)
			}
		})
	}
}

func TestAnnotationsStoreOverwrites(t *testing.T) {
	p := patch.New()
	s := NewAnnotations()
	s.Store(m{}, p, essence1)
	s.Store(m{}, p, m{"spec": m{"hello": "world", "the-cake": false}})
	got, _ := p.Get("metadata", "annotations", lastKey)
	if want := `{"spec":{"hello":"world","the-cake":false}}` + "\n"; got != want {
		t.Errorf("stored %q, want %q", got, want)
	}
}

func TestAnnotationsFetch(t *testing.T) {
	s := &Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: "diff-base"}
	tests := []struct {
		name    string
		body    m
		want    m
		wantErr string
	}{
		{"empty body", m{}, nil, ""},
		{"no annotation", m{"metadata": m{"annotations": m{"other": "x"}}}, nil, ""},
		{"compact", m{"metadata": m{"annotations": m{exampleKey: essence1JSON}}}, essence1, ""},
		{"with a newline", m{"metadata": m{"annotations": m{exampleKey: essence1JSON + "\n"}}}, essence1, ""},
		{"with newlines around", m{"metadata": m{"annotations": m{exampleKey: "\n" + essence1JSON + "\n"}}}, essence1, ""},
		{"null means none", m{"metadata": m{"annotations": m{exampleKey: "null"}}}, nil, ""},
		{"null with a newline means none", m{"metadata": m{"annotations": m{exampleKey: "null\n"}}}, nil, ""},
		{"not JSON", m{"metadata": m{"annotations": m{exampleKey: "{oops"}}}, nil, "annotation " + exampleKey},
		{"empty text", m{"metadata": m{"annotations": m{exampleKey: ""}}}, nil, "annotation " + exampleKey},
		{"a list", m{"metadata": m{"annotations": m{exampleKey: `["a"]`}}}, nil, "not a JSON object"},
		{"a string", m{"metadata": m{"annotations": m{exampleKey: `"spec"`}}}, nil, "not a JSON object"},
		{"a number", m{"metadata": m{"annotations": m{exampleKey: `42`}}}, nil, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Fetch(tt.body)
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

func TestAnnotationsFetchV1Key(t *testing.T) {
	// A key long enough for V1 and V2 to differ; V2 is read first.
	long := strings.Repeat("k", 60)
	s := &Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: long}
	v2, v1 := s.Keys.V2Key(long), s.Keys.V1Key(long)
	if v1 == v2 {
		t.Fatalf("test setup: V1 and V2 keys are the same: %s", v1)
	}
	tests := []struct {
		name        string
		annotations m
		want        m
	}{
		{"V1 only", m{v1: `{"v":1}`}, m{"v": 1.0}},
		{"V2 wins", m{v1: `{"v":1}`, v2: `{"v":2}`}, m{"v": 2.0}},
		{"V2 null, V1 used", m{v1: `{"v":1}`, v2: "null"}, m{"v": 1.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Fetch(m{"metadata": m{"annotations": tt.annotations}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fetch() -want +got:\n%s", diff)
			}
		})
	}
	p := patch.New()
	s.Store(m{}, p, m{"v": 3.0})
	for _, k := range []string{v1, v2} {
		if got, _ := p.Get("metadata", "annotations", k); got != `{"v":3}`+"\n" {
			t.Errorf("Store() wrote %q under %s", got, k)
		}
	}
}

func TestAnnotationsBuild(t *testing.T) {
	tests := []struct {
		name  string
		s     *Annotations
		body  m
		extra []fields.Path
		want  m
	}{
		{"own key under a custom prefix without a marker yet",
			&Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: "diff-base"},
			m{"spec": 1, "metadata": m{"annotations": m{exampleKey: "{}", example + "/user-data": "kept"}}}, nil,
			m{"spec": 1, "metadata": m{"annotations": m{example + "/user-data": "kept"}}}},
		{"own key alone leaves no empty stanza",
			&Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: "diff-base"},
			m{"spec": 1, "metadata": m{"annotations": m{exampleKey: "{}"}}}, nil,
			m{"spec": 1}},
		{"ignored fields", &Annotations{Keys: keys.Convention{Prefix: "kopf.zalando.org"}, Key: DefaultKey, Ignored: []fields.Path{{"spec", "noise"}}},
			m{"spec": m{"noise": 1, "signal": 2}}, nil,
			m{"spec": m{"signal": 2}}},
		{"extra fields", NewAnnotations(), exampleBody(), []fields.Path{{"status", "phase"}},
			m{"spec": exampleEssence()["spec"], "metadata": exampleEssence()["metadata"], "status": m{"phase": "Running"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.Build(tt.body, tt.extra)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Build() -want +got:\n%s", diff)
			}
		})
	}
}

func TestAnnotationsForget(t *testing.T) {
	p := patch.New()
	s := &Annotations{Keys: keys.Convention{Prefix: example, V1: true}, Key: "diff-base"}
	p.SetAnnotation("other", "kept")
	s.Store(m{}, p, essence1)
	s.Forget(m{}, p)
	// The marker stays: it is harmless and other Kopf operators rely on it.
	want := m{"metadata": m{"annotations": m{"other": "kept", example + "/kopf-managed": "yes"}}}
	if diff := cmp.Diff(want, mergepatch.Whole(p)); diff != "" {
		t.Errorf("Forget() patch -want +got:\n%s", diff)
	}
}

func TestStatusStorage(t *testing.T) {
	s := &Status{Field: fields.Path{"status", "my-operator", "diff-base"}}

	p := patch.New()
	got := s.Store(m{}, p, essence1)
	if got != essence1JSON {
		t.Errorf("Store() returned %q, want %q (no newline)", got, essence1JSON)
	}
	if diff := cmp.Diff(m{"status": m{"my-operator": m{"diff-base": essence1JSON}}}, mergepatch.Whole(p)); diff != "" {
		t.Errorf("Store() patch -want +got:\n%s", diff)
	}
	s.Forget(m{}, p)
	// Nothing is left to send: the maps the essence was in go with it.
	if diff := cmp.Diff(map[string]any(nil), mergepatch.Whole(p)); diff != "" {
		t.Errorf("Forget() patch -want +got:\n%s", diff)
	}

	fetchTests := []struct {
		name    string
		body    m
		want    m
		wantErr bool
	}{
		{"absent", m{}, nil, false},
		{"null value", m{"status": m{"my-operator": m{"diff-base": nil}}}, nil, false},
		{"compact", m{"status": m{"my-operator": m{"diff-base": essence1JSON}}}, essence1, false},
		{"with newlines", m{"status": m{"my-operator": m{"diff-base": "\n" + essence1JSON + "\n"}}}, essence1, false},
		{"the text null", m{"status": m{"my-operator": m{"diff-base": "null"}}}, nil, false},
		{"not JSON", m{"status": m{"my-operator": m{"diff-base": "{"}}}, nil, true},
		{"not an object", m{"status": m{"my-operator": m{"diff-base": "[]"}}}, nil, true},
		{"not a string", m{"status": m{"my-operator": m{"diff-base": m{"spec": m{}}}}}, nil, true},
	}
	for _, tt := range fetchTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Fetch(tt.body)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Fetch() error = %v, want an error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fetch() -want +got:\n%s", diff)
			}
		})
	}
}

func TestStatusBuild(t *testing.T) {
	s := NewStatus()
	body := m{"spec": 1, "status": m{"kopf": m{DefaultKey: "{}", "progress": m{}}, "phase": "x"}}
	tests := []struct {
		name  string
		extra []fields.Path
		want  m
	}{
		{"status is not in the essence", nil, m{"spec": 1}},
		{"an extra field keeps its part of status", []fields.Path{{"status", "phase"}}, m{"spec": 1, "status": m{"phase": "x"}}},
		{"the storage's own field never is", []fields.Path{{"status", "kopf", DefaultKey}}, m{"spec": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, s.Build(body, tt.extra)); diff != "" {
				t.Errorf("Build() -want +got:\n%s", diff)
			}
		})
	}
}
