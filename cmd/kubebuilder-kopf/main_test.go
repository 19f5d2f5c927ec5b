package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// call runs the plugin on a request and returns its one response and its
// stderr; it fails the test unless stdout holds exactly one JSON value.
func call(t *testing.T, stdin string) (response, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(strings.NewReader(stdin), &stdout, &stderr, now); code != 0 {
		t.Fatalf("run() = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	var resp response
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("stdout is not a response: %v\n%s", err, stdout.String())
	}
	if rest, _ := dec.Token(); rest != nil || dec.More() {
		t.Fatalf("stdout has more than one response")
	}
	return resp, stderr.String()
}

func requestJSON(t *testing.T, req request) string {
	t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestMetadata(t *testing.T) {
	for _, sub := range []string{"init", "api", "webhook", "edit"} {
		t.Run(sub, func(t *testing.T) {
			resp, _ := call(t, requestJSON(t, request{APIVersion: "v1alpha1", Command: "metadata", Args: []string{"--" + sub}}))
			if resp.Error || resp.Command != "metadata" || resp.APIVersion != "v1alpha1" {
				t.Fatalf("metadata --%s: %+v", sub, resp)
			}
			if !strings.HasSuffix(resp.Metadata.Description, ".\n") || !strings.Contains(resp.Metadata.Examples, "kubebuilder ") {
				t.Errorf("metadata --%s: %+v", sub, resp.Metadata)
			}
		})
	}
}

func TestFlagsOfSubcommands(t *testing.T) {
	tests := map[string][]string{
		"init":    {"kopf-version", "kopf-replace"},
		"edit":    {"kopf-version", "kopf-replace"},
		"api":     {"daemon", "timer", "force"},
		"webhook": {"validating", "mutating", "force"},
	}
	for sub, want := range tests {
		t.Run(sub, func(t *testing.T) {
			resp, _ := call(t, requestJSON(t, request{APIVersion: "v1alpha1", Command: "flags", Args: []string{"--" + sub}}))
			var names []string
			for _, f := range resp.Flags {
				names = append(names, f.Name)
				if f.Usage == "" || (f.Type != "bool" && f.Type != "string") {
					t.Errorf("flag %+v: want a usage and a type", f)
				}
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("flags --%s -want +got:\n%s", sub, diff)
			}
		})
	}
}

// TestWireFormat pins the keys kubebuilder reads: its Flag and
// SubcommandMetadata have no JSON tags.
func TestWireFormat(t *testing.T) {
	var stdout bytes.Buffer
	run(strings.NewReader(`{"apiVersion":"v1alpha1","command":"flags","args":["--api"]}`), &stdout, &bytes.Buffer{}, now)
	for _, key := range []string{`"apiVersion":"v1alpha1"`, `"command":"flags"`, `"universe":{}`, `"metadata":{"Description":"","Examples":""}`,
		`{"Name":"daemon","Type":"bool","Default":"false","Usage":`} {
		if !strings.Contains(stdout.String(), key) {
			t.Errorf("the response lacks %s:\n%s", key, stdout.String())
		}
	}
}

func TestErrorResponses(t *testing.T) {
	tests := []struct{ name, stdin, want string }{
		{"not JSON", "{", "read the plugin request from stdin"},
		{"nothing", "", "read the plugin request from stdin: EOF"},
		{"an unknown API version", `{"apiVersion":"v2","command":"init"}`, `unsupported plugin API version "v2"`},
		{"an unknown command", `{"apiVersion":"v1alpha1","command":"delete api"}`, `unknown command "delete api"`},
		{"metadata of nothing", `{"apiVersion":"v1alpha1","command":"metadata","args":[]}`, "want one of --init, --api, --webhook, --edit"},
		{"flags of an unknown subcommand", `{"apiVersion":"v1alpha1","command":"flags","args":["--alpha"]}`, "want one of --init"},
		{"init without PROJECT", `{"apiVersion":"v1alpha1","command":"init","universe":{}}`, "the request has no PROJECT configuration"},
		{"a bool flag with a bad value", `{"apiVersion":"v1alpha1","command":"create api","args":["--daemon=maybe"],"config":{"repo":"m"}}`, "--daemon=maybe: want true or false"},
		{"create api before init", `{"apiVersion":"v1alpha1","command":"create api","args":["--group","apps","--version","v1","--kind","Widget"],"config":{"repo":"m"},"universe":{}}`, "internal/kopf/setup.go is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := call(t, tt.stdin)
			if !resp.Error || len(resp.ErrorMsgs) != 1 || !strings.Contains(resp.ErrorMsgs[0], tt.want) {
				t.Errorf("response %+v: want an error with %q", resp, tt.want)
			}
			if len(resp.Universe) != 0 {
				t.Errorf("an error response writes files: %v", slices.Collect(maps.Keys(resp.Universe)))
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	known := []flag{{Name: "daemon", Type: "bool", Default: "false"}, {Name: "kind", Type: "string"}, {Name: "mutating", Type: "bool", Default: "true"}}
	tests := []struct {
		name    string
		args    []string
		want    values
		wantErr string
	}{
		{"defaults", nil, values{"daemon": "false", "kind": "", "mutating": "true"}, ""},
		{"the others' flags are skipped, with their values",
			[]string{"--group", "apps", "--resource", "--kind", "Widget", "--daemon", "--plural", "widgets"},
			values{"daemon": "true", "kind": "Widget", "mutating": "true"}, ""},
		{"name=value", []string{"--kind=Widget", "--mutating=false", "--daemon=true"}, values{"daemon": "true", "kind": "Widget", "mutating": "false"}, ""},
		{"a bool takes no separate value", []string{"--daemon", "false"}, values{"daemon": "true", "kind": "", "mutating": "true"}, ""},
		{"a string needs a value", []string{"--kind", "--daemon"}, nil, "--kind needs a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args, known)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseArgs() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseArgs() -want +got:\n%s", diff)
			}
		})
	}
}
