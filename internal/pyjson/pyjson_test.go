package pyjson

import (
	"testing"
)

// The expected texts are what Python's json.dumps(value, separators=(',', ':'))
// prints for the same values.
func TestMarshalLikePython(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{"compact, keys sorted", map[string]any{"b": 1, "a": []any{"x", true, nil}}, `{"a":["x",true,null],"b":1}`},
		{"no HTML escaping", "main.<locals>.fn & more", `"main.<locals>.fn & more"`},
		{"non-ASCII escaped", "café", `"caf\u00e9"`},
		{"beyond the basic plane", "😀", `"\ud83d\ude00"`},
		{"DEL escaped", "\x7f", `"\u007f"`},
		{"control characters", "a\nb\tc", `"a\nb\tc"`},
		{"quotes and backslashes", `"\`, `"\"\\"`},
		{"numbers", []any{int64(1), 1.5, float64(2)}, `[1,1.5,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal(%v) = %s, want %s", tt.value, got, tt.want)
			}
		})
	}
}

func TestMarshalRejectsWhatJSONCannotEncode(t *testing.T) {
	if _, err := Marshal(make(chan int)); err == nil {
		t.Error("Marshal(chan) succeeded")
	}
}
