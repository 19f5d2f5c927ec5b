package main

// help is the description and examples of each subcommand, shown by
// `kubebuilder <command> --help`. Descriptions end with a newline:
// kubebuilder prints the list of plugins right after them.
var help = map[string]metadata{
	"init": {
		Description: `Add kopf-go to a new project: Kopf's model (a handler per cause: create,
update, delete, resume; daemons, timers, admission webhooks) beside the
project's controllers. Chain the plugin after go/v4; it then requires
github.com/kopf-go/kopf in go.mod, calls kopf.Setup(mgr) in cmd/main.go,
and writes internal/kopf/setup.go (the registry that each kind's files add
to), a test harness, hack/envtest-binaries.sh with a "make kopf-test"
target, and the peering CRDs in config/crd/kopf.
`,
		Examples: `  # A new project with kopf-go; PROJECT remembers the chain.
  kubebuilder init --plugins go/v4,kopf.kopf.dev/v1-alpha --domain example.com --repo example.com/demo

  # The same against a kopf-go checkout.
  kubebuilder init --plugins go/v4,kopf.kopf.dev/v1-alpha --domain example.com --repo example.com/demo --kopf-replace ../kopf-go`,
	},
	"api": {
		Description: `Scaffold kopf-go handlers of a kind: internal/kopf/<kind>_handlers.go with
create, update, delete and resume handlers (and a daemon, a timer), and,
for the project's own kinds, a test of them against a real API server
(internal/kopf/<kind>_handlers_test.go). The kind's <Kind>Status type gets
a marker that keeps the handlers' results in status.
`,
		Examples: `  # A new API with a controller and kopf-go handlers (the chain is in PROJECT).
  kubebuilder create api --group apps --version v1 --kind Widget --resource --controller --daemon --timer

  # kopf-go handlers of an existing or built-in kind, without go/v4.
  kubebuilder create api --plugins kopf.kopf.dev/v1-alpha --group apps --version v1 --kind Deployment`,
	},
	"webhook": {
		Description: `Scaffold kopf-go admission handlers of a kind: internal/kopf/<kind>_webhooks.go
with a validating and a mutating handler, served by the manager's webhook
server at /kopf/<handler id>.
`,
		Examples: `  # kopf-go webhooks only (go/v4 would scaffold its own webhooks too).
  kubebuilder create webhook --plugins kopf.kopf.dev/v1-alpha --group apps --version v1 --kind Widget

  # Only a validating handler.
  kubebuilder create webhook --plugins kopf.kopf.dev/v1-alpha --group apps --version v1 --kind Widget --mutating=false`,
	},
	"edit": {
		Description: `Add kopf-go to an existing project, as init does for a new one; what is
there already is left alone, so it is safe to repeat. PROJECT's plugin
chain stays as it is: name the plugin in later commands with --plugins.
`,
		Examples: `  kubebuilder edit --plugins kopf.kopf.dev/v1-alpha
  go mod tidy`,
	},
}
