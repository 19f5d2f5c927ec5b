package progress

import (
	"encoding/json"
	"testing"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
)

// kopfRecords are progress records as Python Kopf writes them (times with
// isoformat(timespec='microseconds')), one of each shape it leaves: done,
// not yet run, delayed by a temporary error, failed permanently, out of
// retries, and a parent waiting for its sub-handlers.
var kopfRecords = map[string]string{
	"create_a":  `{"started":"2026-12-01T10:00:00.123456+00:00","stopped":"2026-12-01T10:00:01.500000+00:00","purpose":"create","retries":1,"success":true,"failure":false}`,
	"create_b":  `{"started":"2026-12-01T10:00:00.123456+00:00","purpose":"create","retries":0,"success":false,"failure":false}`,
	"temp":      `{"started":"2026-12-01T10:00:00.000000+00:00","delayed":"2026-12-01T10:01:00.000000+00:00","purpose":"create","retries":1,"success":false,"failure":false,"message":"not yet"}`,
	"perm":      `{"started":"2026-12-01T10:00:00.000000+00:00","stopped":"2026-12-01T10:00:00.200000+00:00","purpose":"create","retries":1,"success":false,"failure":true,"message":"nope"}`,
	"arb_fn":    `{"started":"2026-12-01T10:00:00.000000+00:00","stopped":"2026-12-01T10:02:00.000000+00:00","purpose":"update","retries":2,"success":false,"failure":true,"message":"Handler 'arb_fn' failed with an exception and will stop now (it would exceed 2 retries on the next attempt): boom 1"}`,
	"create_fn": `{"started":"2026-12-01T10:00:00.000000+00:00","delayed":"2026-12-01T10:00:30.000000+00:00","purpose":"create","retries":2,"success":false,"failure":false,"message":"None","subrefs":["create_fn/item1","create_fn/item2"]}`,
}

// Kopf's records are read from each of its storages, and written back byte
// for byte as Kopf writes them, so that either operator can take over the
// other's handlers in the middle of their retries.
func TestKopfRecordsInEachStorage(t *testing.T) {
	annotations := map[string]any{}
	status := map[string]any{}
	for id, text := range kopfRecords {
		annotations["kopf.zalando.org/"+id] = text
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatal(err)
		}
		status[id] = m
	}
	inAnnotations := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	inStatus := map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": status}}}
	statusStorage := &Status{Field: fields.Path{"status", "kopf", "progress"}}
	for _, tt := range []struct {
		name    string
		storage Storage
		body    map[string]any
	}{
		{"AnnotationsProgressStorage", NewAnnotations(), inAnnotations},
		{"StatusProgressStorage", statusStorage, inStatus},
		{"SmartProgressStorage, annotations", NewSmart(), inAnnotations},
		{"SmartProgressStorage, legacy status", NewSmart(), inStatus},
		{"MultiProgressStorage, status then annotations", Multi{statusStorage, NewAnnotations()}, inAnnotations},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for id, text := range kopfRecords {
				r, err := tt.storage.Fetch(tt.body, id)
				if err != nil || r == nil {
					t.Fatalf("%s: Fetch() = %v, %v; want Kopf's record", id, r, err)
				}
				got, err := r.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != text {
					t.Errorf("%s: read and written again as\n%s\nwant Kopf's\n%s", id, got, text)
				}
			}
		})
	}
	// Written into status, a record is Kopf's map.
	p := patch.New()
	r, _ := NewAnnotations().Fetch(inAnnotations, "create_fn")
	statusStorage.Store(nil, p, "create_fn", *r)
	written, _ := p.Get("status", "kopf", "progress", "create_fn")
	if encoded, _ := json.Marshal(written); string(encoded) != mustCompact(t, kopfRecords["create_fn"]) {
		t.Errorf("written into status as %s, want %s", encoded, kopfRecords["create_fn"])
	}
}

// mustCompact is the JSON text with keys sorted, as json.Marshal of a map
// writes it.
func mustCompact(t *testing.T, text string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(m)
	return string(out)
}
