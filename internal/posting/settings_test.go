package posting

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLevelOfAndTypeOf(t *testing.T) {
	levels := map[string]Level{"Debug": LevelDebug, "Normal": LevelInfo, "SomeType": LevelInfo, "": LevelInfo,
		"Warning": LevelWarning, "Error": LevelError, "Fatal": LevelError}
	for eventType, want := range levels {
		if got := LevelOf(eventType); got != want {
			t.Errorf("LevelOf(%q) = %d, want %d", eventType, got, want)
		}
	}
	types := map[Level]string{LevelDebug - 5: "Debug", LevelDebug: "Debug", LevelInfo: "Normal", LevelWarning: "Warning",
		LevelError: "Error", LevelError + 5: "Error"}
	for level, want := range types {
		if got := TypeOf(level); got != want {
			t.Errorf("TypeOf(%d) = %q, want %q", level, got, want)
		}
	}
	if (Settings{}).Level != LevelInfo || (Settings{}).Disabled || (Settings{}).Loggers {
		t.Errorf("the zero Settings are not Kopf's defaults (enabled, level Info, no loggers)")
	}
}

// TestGates: both gates apply to every type, unlike Kopf's kopf.warn
// (ignores enabled) and kopf.event (ignores level).
func TestGates(t *testing.T) {
	types := []string{"Debug", "Normal", "SomeType", "Warning", "Error"}
	tests := []struct {
		name     string
		settings Settings
		want     []string
	}{
		{"defaults", Settings{}, []string{"Normal", "SomeType", "Warning", "Error"}},
		{"debug", Settings{Level: LevelDebug}, types},
		{"warning", Settings{Level: LevelWarning}, []string{"Warning", "Error"}},
		{"error", Settings{Level: LevelError}, []string{"Error"}},
		{"above error", Settings{Level: LevelError + 1}, nil},
		{"disabled", Settings{Disabled: true}, nil},
		{"disabled at debug", Settings{Disabled: true, Level: LevelDebug}, nil},
		{"loggers do not matter", Settings{Loggers: true}, []string{"Normal", "SomeType", "Warning", "Error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Poster{Settings: tt.settings}
			var allowed []string
			for _, eventType := range types {
				if p.Allows(eventType) {
					allowed = append(allowed, eventType)
				}
				if err := p.Event(example(), eventType, "R", "m"); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, allowed); diff != "" {
				t.Errorf("Allows() -want +got:\n%s", diff)
			}
			var queuedTypes []string
			for _, ev := range queuedEvents(p) {
				queuedTypes = append(queuedTypes, ev.eventType)
			}
			if diff := cmp.Diff(tt.want, queuedTypes); diff != "" {
				t.Errorf("Event() queued -want +got:\n%s", diff)
			}
		})
	}
}

// queuedEvents takes everything out of the poster's queue.
func queuedEvents(p *Poster) []queued {
	p.init()
	var out []queued
	for {
		select {
		case ev := <-p.queue:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// example is a KopfExample as read from the API.
func example() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(exampleGVK)
	obj.SetNamespace("ns1")
	obj.SetName("name1")
	obj.SetUID("uid1")
	return obj
}
