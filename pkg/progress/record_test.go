package progress

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func str(s string) *string { return &s }

func TestRecordMarshalJSON(t *testing.T) {
	started := ts("2026-11-29T13:40:27.369462Z")
	stopped := ts("2026-11-29T13:40:28.000001Z")
	delayed := ts("2026-11-29T13:41:27.369462Z")
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{"succeeded",
			Record{Started: started, Stopped: stopped, Purpose: "create", Retries: 1, Success: true},
			`{"started":"2026-11-29T13:40:27.369462+00:00","stopped":"2026-11-29T13:40:28.000001+00:00","purpose":"create","retries":1,"success":true,"failure":false}`},
		{"not yet run",
			Record{Started: started, Purpose: "create"},
			`{"started":"2026-11-29T13:40:27.369462+00:00","purpose":"create","retries":0,"success":false,"failure":false}`},
		{"delayed",
			Record{Started: started, Delayed: delayed, Purpose: "update", Retries: 1, Message: str("not yet")},
			`{"started":"2026-11-29T13:40:27.369462+00:00","delayed":"2026-11-29T13:41:27.369462+00:00","purpose":"update","retries":1,"success":false,"failure":false,"message":"not yet"}`},
		{"failed",
			Record{Started: started, Stopped: stopped, Purpose: "delete", Retries: 1, Failure: true, Message: str("nope")},
			`{"started":"2026-11-29T13:40:27.369462+00:00","stopped":"2026-11-29T13:40:28.000001+00:00","purpose":"delete","retries":1,"success":false,"failure":true,"message":"nope"}`},
		{"all fields, subrefs sorted",
			Record{Started: started, Stopped: stopped, Delayed: delayed, Purpose: "create", Retries: 2, Message: str("None"), Subrefs: []string{"create_fn/item2", "create_fn/item1"}},
			`{"started":"2026-11-29T13:40:27.369462+00:00","stopped":"2026-11-29T13:40:28.000001+00:00","delayed":"2026-11-29T13:41:27.369462+00:00","purpose":"create","retries":2,"success":false,"failure":false,"message":"None","subrefs":["create_fn/item1","create_fn/item2"]}`},
		{"empty", Record{}, `{"retries":0,"success":false,"failure":false}`},
		{"an empty message is still a message", Record{Message: str("")}, `{"retries":0,"success":false,"failure":false,"message":""}`},
		{"no HTML escaping, as Python's json.dumps",
			Record{Message: str("Handler 'main.<locals>.fn' failed & stopped")},
			`{"retries":0,"success":false,"failure":false,"message":"Handler 'main.<locals>.fn' failed & stopped"}`},
		{"non-ASCII escaped, as Python's json.dumps",
			Record{Message: str("caf\u00e9 \U0001F600 \x7f\n\"")},
			`{"retries":0,"success":false,"failure":false,"message":"caf\u00e9 \ud83d\ude00 \u007f\n\""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.MarshalJSON()
			if err != nil {
				t.Fatalf("Marshal() error: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestRecordMarshalDoesNotSortTheCallersSubrefs(t *testing.T) {
	subrefs := []string{"b", "a"}
	if _, err := (Record{Subrefs: subrefs}).MarshalJSON(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "a"}, subrefs); diff != "" {
		t.Errorf("subrefs changed -want +got:\n%s", diff)
	}
}

func TestRecordUnmarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Record
	}{
		{"Kopf's own record",
			`{"started":"2026-11-29T13:40:27.369462+00:00","stopped":"2026-11-29T13:40:28.000001+00:00","purpose":"create","retries":1,"success":true,"failure":false}`,
			Record{Started: ts("2026-11-29T13:40:27.369462Z"), Stopped: ts("2026-11-29T13:40:28.000001Z"), Purpose: "create", Retries: 1, Success: true}},
		{"Z suffix",
			`{"started":"2026-11-29T13:40:27.369462Z","delayed":"2026-11-29T13:41:00Z"}`,
			Record{Started: ts("2026-11-29T13:40:27.369462Z"), Delayed: ts("2026-11-29T13:41:00Z")}},
		{"naive times are UTC",
			`{"started":"2020-01-01T00:00:00","stopped":"2020-12-31T23:59:59","delayed":"3000-01-01T00:00:00","retries":0,"success":false,"failure":false,"message":null}`,
			Record{Started: ts("2020-01-01T00:00:00Z"), Stopped: ts("2020-12-31T23:59:59Z"), Delayed: ts("3000-01-01T00:00:00Z")}},
		{"nulls everywhere (Kopf's verbose mode)",
			`{"started":null,"stopped":null,"delayed":null,"purpose":null,"retries":null,"success":null,"failure":null,"message":null,"subrefs":null}`,
			Record{}},
		{"unknown fields are ignored",
			`{"purpose":"update","retries":3,"future-field":{"x":1},"another":[1,2]}`,
			Record{Purpose: "update", Retries: 3}},
		{"message and subrefs",
			`{"failure":true,"message":"Handler 'x' failed","subrefs":["p/a","p/b"]}`,
			Record{Failure: true, Message: str("Handler 'x' failed"), Subrefs: []string{"p/a", "p/b"}}},
		{"empty object", `{}`, Record{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Record
			if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
				t.Fatalf("Unmarshal() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Unmarshal() -want +got:\n%s", diff)
			}
		})
	}
}

func TestRecordUnmarshalJSONRejects(t *testing.T) {
	for name, in := range map[string]string{
		"retries as a string":     `{"retries":"1"}`,
		"retries as a float":      `{"retries":1.5}`,
		"success as a string":     `{"success":"yes"}`,
		"failure as a number":     `{"failure":1}`,
		"started as a number":     `{"started":123}`,
		"unparseable timestamp":   `{"started":"yesterday"}`,
		"unparseable delayed":     `{"delayed":"2020-01-01"}`,
		"purpose as an object":    `{"purpose":{}}`,
		"message as a number":     `{"message":1}`,
		"subrefs as a string":     `{"subrefs":"a"}`,
		"subrefs of numbers":      `{"subrefs":[1]}`,
		"a list, not an object":   `[]`,
		"a string, not an object": `"x"`,
		"not JSON":                `{started:`,
	} {
		t.Run(name, func(t *testing.T) {
			r := Record{Purpose: "untouched"}
			if err := json.Unmarshal([]byte(in), &r); err == nil {
				t.Errorf("Unmarshal(%s) = %+v, want an error", in, r)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := Record{
		Started: ts("2026-11-29T13:40:27.369462Z"), Stopped: ts("2026-11-29T13:40:28Z"), Delayed: ts("2026-11-29T13:41:00.5Z"),
		Purpose: "resume", Retries: 7, Failure: true, Message: str("boom"), Subrefs: []string{"a/1", "a/2"},
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip -want +got:\n%s", diff)
	}
}

func TestRecordEqual(t *testing.T) {
	base := Record{Started: ts("2026-11-29T13:40:27.369462Z"), Purpose: "create", Retries: 1, Subrefs: []string{"a", "b"}}
	tests := []struct {
		name  string
		other Record
		want  bool
	}{
		{"same", Record{Started: ts("2026-11-29T13:40:27.369462Z"), Purpose: "create", Retries: 1, Subrefs: []string{"a", "b"}}, true},
		{"same time in another zone", Record{Started: ts("2026-11-29T14:40:27.369462+01:00"), Purpose: "create", Retries: 1, Subrefs: []string{"a", "b"}}, true},
		{"subrefs in another order", Record{Started: ts("2026-11-29T13:40:27.369462Z"), Purpose: "create", Retries: 1, Subrefs: []string{"b", "a"}}, true},
		{"nanoseconds below the stored precision", Record{Started: ts("2026-11-29T13:40:27.369462999Z"), Purpose: "create", Retries: 1, Subrefs: []string{"a", "b"}}, true},
		{"other retries", Record{Started: ts("2026-11-29T13:40:27.369462Z"), Purpose: "create", Retries: 2, Subrefs: []string{"a", "b"}}, false},
		{"other purpose", Record{Started: ts("2026-11-29T13:40:27.369462Z"), Purpose: "update", Retries: 1, Subrefs: []string{"a", "b"}}, false},
		{"a message", Record{Started: ts("2026-11-29T13:40:27.369462Z"), Purpose: "create", Retries: 1, Subrefs: []string{"a", "b"}, Message: str("")}, false},
		{"no start", Record{Purpose: "create", Retries: 1, Subrefs: []string{"a", "b"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := base.Equal(tt.other); got != tt.want {
				t.Errorf("Equal() = %v, want %v", got, tt.want)
			}
		})
	}
}
