package handlers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The options of every registration function are checked by the compiler:
// each option type-checks with the functions it applies to, and is
// rejected by all the others. Each pair is a small program, type-checked
// against the export data of the handlers package.
func TestOptionsAreCheckedAtCompileTime(t *testing.T) {
	check := newChecker(t)
	// The option classes, with an expression of each of their options.
	classes := map[string][]string{
		"filter": {`handlers.Labels{"a": filter.Present}`, `handlers.Annotations{"a": filter.Absent}`,
			`handlers.Field("spec.x")`, `handlers.Value(filter.Equals("x"))`,
			`handlers.When(func(U, *cause.Change) bool { return true })`},
		"limit": {`handlers.Retries(3)`, `handlers.Backoff(time.Second)`, `handlers.Timeout(time.Second)`,
			`handlers.Errors(failure.ErrorsIgnored)`},
		"value change":  {`handlers.ValueBefore(filter.Absent)`, `handlers.ValueAfter(filter.Present)`},
		"delete":        {`handlers.Optional()`},
		"resume":        {`handlers.Deleted()`},
		"initial delay": {`handlers.InitialDelay(time.Second)`, `handlers.InitialDelayFunc(func(U) time.Duration { return 0 })`},
		"daemon": {`handlers.CancellationBackoff(time.Second)`, `handlers.CancellationTimeout(time.Second)`,
			`handlers.CancellationPolling(time.Second)`},
		"timer": {`handlers.Interval(time.Second)`, `handlers.Idle(time.Second)`, `handlers.Sharp()`},
		"webhook": {`handlers.Operations(admission.Create)`, `handlers.Subresource("status")`,
			`handlers.Persistent()`, `handlers.SideEffects()`, `handlers.IgnoreFailures()`,
			`handlers.WhenRequest(func(U, *admission.Request) bool { return true })`},
	}
	// The registration functions (the option goes in place of OPT), with
	// the classes of options they take.
	functions := []struct {
		call  string
		takes []string
	}{
		{`handlers.OnCreate(res, "id", change, OPT)`, []string{"filter", "limit"}},
		{`handlers.OnUpdate(res, "id", change, OPT)`, []string{"filter", "limit", "value change"}},
		{`handlers.OnField(res, "id", "spec.x", change, OPT)`, []string{"filter", "limit", "value change"}},
		{`_ = handlers.Subhandler(ctx, "id", change, OPT)`, []string{"filter", "limit", "value change"}},
		{`handlers.OnDelete(res, "id", change, OPT)`, []string{"filter", "limit", "delete"}},
		{`handlers.OnResume(res, "id", change, OPT)`, []string{"filter", "limit", "resume"}},
		{`handlers.OnEvent(res, "id", event, OPT)`, []string{"filter"}},
		{`handlers.Index(res, "id", change, OPT)`, []string{"filter", "limit"}},
		{`handlers.Daemon(res, "id", daemon, OPT)`, []string{"filter", "limit", "initial delay", "daemon"}},
		{`handlers.Timer(res, "id", daemon, OPT)`, []string{"filter", "limit", "initial delay", "timer"}},
		{`handlers.OnValidate(res, "id", webhook, OPT)`, []string{"filter", "webhook"}},
		{`handlers.OnMutate(res, "id", webhook, OPT)`, []string{"filter", "webhook"}},
		{`handlers.OnStartup(reg, "id", activity, OPT)`, []string{"limit"}},
		{`handlers.OnCleanup(reg, "id", activity, OPT)`, []string{"limit"}},
		{`handlers.OnProbe(reg, "id", probe, OPT)`, []string{"limit"}},
	}
	for _, fn := range functions {
		for class, options := range classes {
			for _, opt := range options {
				call := strings.Replace(fn.call, "OPT", opt, 1)
				err := check(call)
				switch want := slices.Contains(fn.takes, class); {
				case want && err != nil:
					t.Errorf("%s does not compile, want it to:\n%v", call, err)
				case !want && err == nil:
					t.Errorf("%s compiles, want it rejected: a %s option does not apply", call, class)
				case !want && !strings.Contains(err.Error(), "does not implement"):
					t.Errorf("%s is rejected for another reason than its option:\n%v", call, err)
				}
			}
		}
	}
}

// The compiler's message names what is wrong: the option's class and the
// registration function's option type.
func TestOptionRejectionsSayWhy(t *testing.T) {
	check := newChecker(t)
	tests := []struct {
		call, want string
	}{
		{`handlers.OnEvent(res, "id", event, handlers.Retries(3))`,
			"cannot use handlers.Retries(3) (value of interface type handlers.LimitOption) as handlers.FilterOption value in argument to handlers.OnEvent: handlers.LimitOption does not implement handlers.FilterOption (missing method event)"},
		{`handlers.OnCreate(res, "id", change, handlers.Optional())`,
			"cannot use handlers.Optional() (value of interface type handlers.DeleteOption) as handlers.CreateOption value in argument to handlers.OnCreate: handlers.DeleteOption does not implement handlers.CreateOption (missing method create)"},
	}
	for _, tt := range tests {
		err := check(tt.call)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: the error does not contain the message (-want +got):\n%s", tt.call, cmp.Diff(tt.want, got))
		}
	}
}

// program is the source every checked call goes into.
const program = `package p

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
	"github.com/kopf-go/kopf/pkg/filter"
)

type U = *unstructured.Unstructured

var (
	_ = admission.Create
	_ = failure.ErrorsIgnored
	_ = filter.Present
)

func change(context.Context, U, *cause.Change) (any, error)        { return nil, nil }
func daemon(context.Context, U, *cause.Daemon) (any, error)  { return nil, nil }
func event(context.Context, U, *cause.Event) (any, error)      { return nil, nil }
func webhook(context.Context, U, *admission.Request) error   { return nil }
func activity(context.Context, *cause.Activity) error             { return nil }
func probe(context.Context, *cause.Activity) (any, error)         { return nil, nil }

var _ = time.Second

func register(ctx context.Context, reg *handlers.Registry, res *handlers.Resource[U]) {
	%s
}
`

// newChecker returns a function that type-checks one call in program and
// returns the first error, if any.
func newChecker(t *testing.T) func(call string) error {
	t.Helper()
	exports := exportData(t, "context", "time", "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured",
		"github.com/kopf-go/kopf/handlers", "github.com/kopf-go/kopf/pkg/admission", "github.com/kopf-go/kopf/pkg/cause",
		"github.com/kopf-go/kopf/pkg/failure", "github.com/kopf-go/kopf/pkg/filter")
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	return func(call string) error {
		f, err := parser.ParseFile(fset, "p.go", fmt.Sprintf(program, call), 0)
		if err != nil {
			t.Fatalf("parse %s: %v", call, err)
		}
		var first error
		conf := types.Config{Importer: imp, Error: func(err error) {
			if first == nil {
				first = err
			}
		}}
		_, _ = conf.Check("p", fset, []*ast.File{f}, nil)
		return first
	}
}

// exportData builds the packages and their dependencies and returns where
// their export data is, by import path.
func exportData(t *testing.T, pkgs ...string) map[string]string {
	t.Helper()
	// The test's cached result depends on the files it reads: read the
	// package's own, which go list compiles.
	sources, _ := filepath.Glob("*.go")
	for _, file := range sources {
		if _, err := os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "="); ok {
			exports[path] = file
		}
	}
	return exports
}
