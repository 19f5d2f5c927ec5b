package ring

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var configMaps = []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}

func TestAssignerSettings(t *testing.T) {
	valid := AssignerSettings{Ring: "main", Namespace: "operators", Identity: identity, Kinds: configMaps}
	tests := []struct {
		name   string
		change func(*AssignerSettings)
		err    string // a part of the error; "" for none
	}{
		{"the defaults", func(*AssignerSettings) {}, ""},
		{"no ring", func(s *AssignerSettings) { s.Ring = "" }, "needs a ring"},
		{"an invalid ring", func(s *AssignerSettings) { s.Ring = "Main" }, "not valid"},
		{"no identity", func(s *AssignerSettings) { s.Identity = "" }, "needs a ring, a namespace and an identity"},
		{"no kinds", func(s *AssignerSettings) { s.Kinds = nil }, "needs the kinds"},
		{"durations that do not nest", func(s *AssignerSettings) { s.RenewDeadline = 20 * time.Second }, "must nest"},
		{"negative workers", func(s *AssignerSettings) { s.Workers = -1 }, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid
			tt.change(&s)
			got, err := s.withDefaults()
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("withDefaults() = %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("withDefaults() = %v, want an error saying %q", err, tt.err)
			case tt.err == "" && (got.LeaseDuration != DefaultLeaseDuration || got.Clock == nil || got.Workers != DefaultAssignerWorkers):
				t.Errorf("withDefaults() = %+v, without the defaults", got)
			}
		})
	}
}
