package handlers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlagsPeeringFromEnvironment(t *testing.T) {
	t.Setenv("KOPF_RUN_PEERING", "from-env")
	got, err := ParseFlags(nil)
	if err != nil || got.Peering != "from-env" {
		t.Errorf("ParseFlags() = %+v, %v; want the peering from KOPF_RUN_PEERING", got, err)
	}
	got, err = ParseFlags([]string{"--peering", "from-flag"})
	if err != nil || got.Peering != "from-flag" {
		t.Errorf("ParseFlags(--peering) = %+v, %v; the flag wins", got, err)
	}
}

func TestParseFlags(t *testing.T) {
	t.Setenv("KOPF_RUN_PEERING", "")
	tests := []struct {
		name    string
		args    []string
		want    Flags
		wantErr bool
	}{
		{"nothing", nil, Flags{}, false},
		{"kopf's long flags", []string{"--standalone", "--peering", "p", "--priority", "10", "--namespace", "a", "--namespace", "b", "--verbose", "--kubeconfig", "/k"},
			Flags{Standalone: true, Peering: "p", Priority: 10, Namespaces: []string{"a", "b"}, Verbose: true, Kubeconfig: "/k"}, false},
		{"short flags and commas", []string{"-n", "a,b", "-p", "5", "-P", "q", "-v"},
			Flags{Namespaces: []string{"a", "b"}, Priority: 5, Peering: "q", Verbose: true}, false},
		{"dev is priority 666", []string{"--dev", "--priority", "1"}, Flags{Dev: true, Priority: 666}, false},
		{"all namespaces", []string{"-A"}, Flags{AllNamespaces: true}, false},
		{"all namespaces and a namespace", []string{"-A", "-n", "x"}, Flags{}, true},
		{"unknown flag", []string{"--nope"}, Flags{}, true},
		{"positional argument", []string{"main.go"}, Flags{}, true},
		{"debug is verbose", []string{"--debug"}, Flags{Verbose: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFlags(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseFlags(%q) error = %v, want error: %v", tt.args, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFlags(%q) -want +got:\n%s", tt.args, diff)
			}
		})
	}
}
