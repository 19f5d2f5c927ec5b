package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		command string
		args    []string
		env     map[string]string
		want    options
		// wantErr is a substring of the usage error, if one is expected.
		wantErr string
	}{{
		name:    "freeze: Kopf's defaults",
		command: "freeze",
		args:    []string{"--peering", "p", "--lifetime", "60"},
		want:    options{command: "freeze", peering: "p", priority: 100, lifetime: 60},
	}, {
		name:    "freeze: long options",
		command: "freeze",
		args: []string{"--peering=p", "--lifetime=30", "--priority=7", "--message", "maintenance",
			"--id", "me", "--namespace", "ns1", "--namespace=ns2", "--kubeconfig", "/k", "--verbose", "--quiet"},
		want: options{command: "freeze", peering: "p", lifetime: 30, priority: 7, message: "maintenance",
			id: "me", namespaces: []string{"ns1", "ns2"}, kubeconfig: "/k", verbose: true, quiet: true},
	}, {
		name:    "freeze: Kopf's short options",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "30", "-p", "7", "-m", "why", "-i", "me", "-n", "ns1", "-v", "-q"},
		want: options{command: "freeze", peering: "p", lifetime: 30, priority: 7, message: "why",
			id: "me", namespaces: []string{"ns1"}, verbose: true, quiet: true},
	}, {
		name:    "freeze: namespaces repeat, separated by commas too, without duplicates",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "1", "-n", "a,b", "-n", "c", "-n", "a", "-n", ""},
		want:    options{command: "freeze", peering: "p", lifetime: 1, priority: 100, namespaces: []string{"a", "b", "c"}},
	}, {
		name:    "freeze: --dev means priority 666",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "60", "--dev"},
		want:    options{command: "freeze", peering: "p", lifetime: 60, priority: 666},
	}, {
		name:    "freeze: --dev wins over --priority, as in Kopf",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "60", "--priority", "5", "--dev"},
		want:    options{command: "freeze", peering: "p", lifetime: 60, priority: 666},
	}, {
		name:    "freeze: -A",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "60", "-A"},
		want:    options{command: "freeze", peering: "p", lifetime: 60, priority: 100, clusterwide: true},
	}, {
		name:    "freeze: a zero lifetime (removes the record, as in Kopf)",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "0"},
		want:    options{command: "freeze", peering: "p", lifetime: 0, priority: 100},
	}, {
		name:    "freeze: --debug is --verbose",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "60", "-d"},
		want:    options{command: "freeze", peering: "p", lifetime: 60, priority: 100, verbose: true},
	}, {
		name:    "freeze: the peering from the environment",
		command: "freeze",
		args:    []string{"--lifetime", "60"},
		env:     map[string]string{"KOPF_FREEZE_PEERING": "from-env", "KOPF_RESUME_PEERING": "other"},
		want:    options{command: "freeze", peering: "from-env", lifetime: 60, priority: 100},
	}, {
		name:    "freeze: the command line wins over the environment",
		command: "freeze",
		args:    []string{"--peering", "p", "--lifetime", "60", "-n", "ns"},
		env: map[string]string{"KOPF_FREEZE_PEERING": "from-env", "KOPF_FREEZE_LIFETIME": "5",
			"KOPF_FREEZE_NAMESPACES": "x y"},
		want: options{command: "freeze", peering: "p", lifetime: 60, priority: 100, namespaces: []string{"ns"}},
	}, {
		name:    "freeze: every option from the environment, as click's auto_envvar_prefix gives",
		command: "freeze",
		env: map[string]string{"KOPF_FREEZE_PEERING": "p", "KOPF_FREEZE_LIFETIME": "5", "KOPF_FREEZE_PRIORITY": "9",
			"KOPF_FREEZE_MESSAGE": "why", "KOPF_FREEZE_ID": "me", "KOPF_FREEZE_NAMESPACES": " x  y ", "KOPF_FREEZE_VERBOSE": "yes"},
		want: options{command: "freeze", peering: "p", lifetime: 5, priority: 9, message: "why", id: "me",
			namespaces: []string{"x", "y"}, verbose: true},
	}, {
		name:    "freeze: --dev and -A from the environment",
		command: "freeze",
		args:    []string{"-P", "p", "-t", "1"},
		env:     map[string]string{"KOPF_FREEZE_DEV": "on", "KOPF_FREEZE_CLUSTERWIDE": "1", "KOPF_FREEZE_QUIET": "false"},
		want:    options{command: "freeze", peering: "p", lifetime: 1, priority: 666, clusterwide: true},
	}, {
		name:    "resume: the record's removal",
		command: "resume",
		args:    []string{"--peering", "p", "-i", "me", "-n", "ns"},
		want:    options{command: "resume", peering: "p", id: "me", namespaces: []string{"ns"}},
	}, {
		name:    "resume: the peering from the environment",
		command: "resume",
		env:     map[string]string{"KOPF_RESUME_PEERING": "from-env", "KOPF_FREEZE_PEERING": "other"},
		want:    options{command: "resume", peering: "from-env"},
	}, {
		name:    "freeze: no peering",
		command: "freeze",
		args:    []string{"--lifetime", "60"},
		env:     map[string]string{"KOPF_RESUME_PEERING": "not for freeze"},
		wantErr: "--peering NAME is required (or $KOPF_FREEZE_PEERING)",
	}, {
		name:    "resume: no peering",
		command: "resume",
		wantErr: "--peering NAME is required (or $KOPF_RESUME_PEERING)",
	}, {
		name:    "freeze: no lifetime (required in Kopf)",
		command: "freeze",
		args:    []string{"--peering", "p"},
		wantErr: "--lifetime SECONDS is required",
	}, {
		name:    "freeze: a negative lifetime",
		command: "freeze",
		args:    []string{"--peering", "p", "--lifetime", "-1"},
		wantErr: "--lifetime must not be negative",
	}, {
		name:    "freeze: a lifetime that is no number",
		command: "freeze",
		args:    []string{"--peering", "p", "--lifetime", "1m"},
		wantErr: `invalid value "1m" for flag -lifetime: not an integer`,
	}, {
		name:    "freeze: a bad number in the environment",
		command: "freeze",
		args:    []string{"--peering", "p"},
		env:     map[string]string{"KOPF_FREEZE_LIFETIME": "soon"},
		wantErr: `invalid value "soon" of $KOPF_FREEZE_LIFETIME: not an integer`,
	}, {
		name:    "freeze: a bad boolean in the environment",
		command: "freeze",
		args:    []string{"--peering", "p", "-t", "1"},
		env:     map[string]string{"KOPF_FREEZE_DEV": "maybe"},
		wantErr: `invalid value "maybe" of $KOPF_FREEZE_DEV: not a boolean`,
	}, {
		name:    "freeze: namespaces and -A",
		command: "freeze",
		args:    []string{"--peering", "p", "-t", "1", "-n", "ns", "-A"},
		wantErr: "either --namespace or --all-namespaces can be used, not both",
	}, {
		name:    "resume: no lifetime, priority or message",
		command: "resume",
		args:    []string{"--peering", "p", "--lifetime", "60"},
		wantErr: "flag provided but not defined: -lifetime",
	}, {
		name:    "freeze: stray arguments",
		command: "freeze",
		args:    []string{"--peering", "p", "-t", "1", "default"},
		wantErr: "unexpected arguments: default",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.command, tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				var usage usageError
				if !errors.As(err, &usage) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse() error = %v, want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(options{})); diff != "" {
				t.Errorf("parse() -want +got:\n%s", diff)
			}
		})
	}
}

func TestParseHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-P", "p", "-help"}} {
		if _, err := parse("freeze", args, func(string) string { return "" }); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("parse(%q) error = %v, want flag.ErrHelp", args, err)
		}
	}
}

// TestRunUsage covers the command lines that never reach the cluster.
func TestRunUsage(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{nil, 2, "", "Usage: kopf COMMAND"},
		{[]string{"--help"}, 0, "Usage: kopf COMMAND", ""},
		{[]string{"help"}, 0, "Commands:", ""},
		{[]string{"unfreeze"}, 2, "", `kopf: unknown command "unfreeze"`},
		{[]string{"run", "example.py"}, 2, "", "kopf-go has no run command"},
		{[]string{"freeze", "--help"}, 0, "Usage: kopf freeze --peering NAME --lifetime SECONDS", ""},
		{[]string{"resume", "-h"}, 0, "Usage: kopf resume --peering NAME", ""},
		{[]string{"freeze", "-P", "p"}, 2, "", "kopf freeze: --lifetime SECONDS is required"},
		{[]string{"freeze", "-P", "p", "-t", "1", "--bogus"}, 2, "", "Run 'kopf freeze --help' for usage."},
		{[]string{"resume", "-P", "p", "-A", "-n", "ns"}, 2, "", "kopf resume: either --namespace or --all-namespaces"},
		// Past the parsing: no cluster at this kubeconfig.
		{[]string{"resume", "-P", "p", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "",
			"kopf resume: load the kubeconfig /nonexistent/kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) || (tt.wantStdout == "" && stdout.Len() > 0) {
				t.Errorf("stdout %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) || (tt.wantStderr == "" && stderr.Len() > 0) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
