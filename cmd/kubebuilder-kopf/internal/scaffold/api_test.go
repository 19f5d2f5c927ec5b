package scaffold

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAPI(t *testing.T) {
	u, p := initialised(t)
	r, err := API(Input{Universe: u, Project: p, Year: 2026}, APIOptions{Group: "apps", Version: "v1", Kind: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api/v1/widget_types.go", "internal/kopf/widget_handlers.go", "internal/kopf/widget_handlers_test.go"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(r.Files))); diff != "" {
		t.Fatalf("API() files -want +got:\n%s", diff)
	}
	handlers := r.Files["internal/kopf/widget_handlers.go"]
	mustParse(t, "widget_handlers.go", handlers)
	mustContain(t, "widget_handlers.go", handlers,
		"/*\nCopyright 2026.\n*/\n\npackage kopf\n",
		`appsv1 "example.com/demo/api/v1"`,
		"func init() { addKind(appsv1.AddToScheme, widgetHandlers) }",
		"widgets := handlers.For[*appsv1.Widget](reg)",
		`handlers.OnCreate(widgets, "create_widget", createWidget)`,
		`handlers.OnUpdate(widgets, "update_widget", updateWidget)`,
		`handlers.OnDelete(widgets, "delete_widget", deleteWidget)`,
		`handlers.OnResume(widgets, "resume_widget", resumeWidget)`,
		"+kubebuilder:rbac:groups=apps.example.com,resources=widgets,verbs=list;watch;patch\n",
		"+kubebuilder:rbac:groups=apps.example.com,resources=widgets/status,verbs=patch\n")
	for _, absent := range []string{"Daemon", "Timer", `"time"`} {
		if strings.Contains(handlers, absent) {
			t.Errorf("widget_handlers.go without --daemon and --timer has %q", absent)
		}
	}
	test := r.Files["internal/kopf/widget_handlers_test.go"]
	mustParse(t, "widget_handlers_test.go", test)
	mustContain(t, "widget_handlers_test.go", test,
		"func TestWidgetHandlers(t *testing.T) {",
		"env.StartOperator(t, ns, NewRegistry(), handlers.Options{Standalone: true})",
		`Name: "widget-sample", Namespace: ns`,
		`op.WaitForLog(t, "Handler 'create_widget' succeeded.", 30*time.Second)`,
		`unstructured.NestedString(got.Object, "status", "create_widget", "message")`,
		`op.WaitForLog(t, "Handler 'delete_widget' succeeded.", 30*time.Second)`,
		"apierrors.IsNotFound(err)")
	mustContain(t, "widget_types.go", r.Files["api/v1/widget_types.go"], "// "+preserveMarker+"\ntype WidgetStatus struct {")
}

func TestAPIDaemonAndTimer(t *testing.T) {
	u, p := initialised(t)
	r, err := API(Input{Universe: u, Project: p}, APIOptions{Group: "apps", Version: "v1", Kind: "Widget", Daemon: true, Timer: true})
	if err != nil {
		t.Fatal(err)
	}
	handlers := r.Files["internal/kopf/widget_handlers.go"]
	mustParse(t, "widget_handlers.go", handlers)
	mustContain(t, "widget_handlers.go", handlers,
		`handlers.Daemon(widgets, "widget_daemon", widgetDaemon)`,
		`handlers.Timer(widgets, "widget_timer", widgetTimer, handlers.Interval(time.Minute))`,
		"func widgetDaemon(ctx context.Context, obj *appsv1.Widget, d *cause.Daemon) (any, error) {",
		"if !d.Sleep(ctx, time.Minute) {",
		"func widgetTimer(ctx context.Context, obj *appsv1.Widget, d *cause.Daemon) (any, error) {")
}

func TestAPIClusterScopedKind(t *testing.T) {
	u, p := initialised(t)
	p.Resources[0].API.Namespaced = false
	r, err := API(Input{Universe: u, Project: p}, APIOptions{Group: "apps", Version: "v1", Kind: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "widget_handlers_test.go", r.Files["internal/kopf/widget_handlers_test.go"], `Name: "widget-sample-" + ns}}`)
}

func TestAPIBuiltInKind(t *testing.T) {
	u, p := initialised(t)
	r, err := API(Input{Universe: u, Project: p}, APIOptions{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"internal/kopf/deployment_handlers.go"}, slices.Sorted(maps.Keys(r.Files))); diff != "" {
		t.Errorf("API() of a built-in kind: files -want +got:\n%s", diff)
	}
	mustContain(t, "deployment_handlers.go", r.Files["internal/kopf/deployment_handlers.go"],
		`appsv1 "k8s.io/api/apps/v1"`, "+kubebuilder:rbac:groups=apps,resources=deployments,")
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "no test is scaffolded") {
		t.Errorf("API() of a built-in kind: notes = %q", r.Notes)
	}
}

func TestAPIMultiGroup(t *testing.T) {
	u, p := initialised(t)
	p.MultiGroup, p.Resources = true, nil
	u["api/ship/v1beta1/frigate_types.go"] = strings.ReplaceAll(goV4Types, "Widget", "Frigate")
	r, err := API(Input{Universe: u, Project: p}, APIOptions{Group: "ship", Version: "v1beta1", Kind: "Frigate"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "shipfrigate_handlers.go", r.Files["internal/kopf/shipfrigate_handlers.go"],
		`shipv1beta1 "example.com/demo/api/ship/v1beta1"`, "func shipFrigateHandlers(", `"create_shipfrigate"`, "func createShipFrigate(")
	mustContain(t, "shipfrigate_handlers_test.go", r.Files["internal/kopf/shipfrigate_handlers_test.go"], "func TestShipFrigateHandlers(")
}

func TestAPIRefusals(t *testing.T) {
	u, p := initialised(t)
	opts := APIOptions{Group: "apps", Version: "v1", Kind: "Widget"}
	u["internal/kopf/widget_handlers.go"] = "package kopf\n"
	if _, err := API(Input{Universe: u, Project: p}, opts); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("API() over existing handlers: error = %v", err)
	}
	opts.Force = true
	if _, err := API(Input{Universe: u, Project: p}, opts); err != nil {
		t.Errorf("API() with --force: %v", err)
	}
	delete(u, setupFile)
	if _, err := API(Input{Universe: u, Project: p}, opts); err != errNotInitialised {
		t.Errorf("API() before init: error = %v", err)
	}
}

func TestWebhook(t *testing.T) {
	u, p := initialised(t)
	tests := []struct {
		name                 string
		validating, mutating bool
		want, absent         []string
	}{
		{"both", true, true, []string{`handlers.OnValidate(widgets, "validate_widget", validateWidget)`, `handlers.OnMutate(widgets, "mutate_widget", mutateWidget)`}, nil},
		{"validating", true, false, []string{"func validateWidget("}, []string{"mutate"}},
		{"mutating", false, true, []string{"func mutateWidget("}, []string{"validate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Webhook(Input{Universe: u, Project: p}, WebhookOptions{Group: "apps", Version: "v1", Kind: "Widget", Validating: tt.validating, Mutating: tt.mutating})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Files["internal/kopf/widget_webhooks.go"]
			mustParse(t, "widget_webhooks.go", got)
			mustContain(t, "widget_webhooks.go", got, append(tt.want, "func init() { addWebhooks(widgetWebhooks) }")...)
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("widget_webhooks.go has %q", a)
				}
			}
		})
	}
	if _, err := Webhook(Input{Universe: u, Project: p}, WebhookOptions{Group: "apps", Version: "v1", Kind: "Widget"}); err == nil {
		t.Error("Webhook() with neither handler: want an error")
	}
}
