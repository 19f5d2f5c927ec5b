// Command 12-embedded embeds the operator in a program of its own: the
// program builds a controller-runtime manager, adds the engine to it, runs
// it in a goroutine it owns, and meanwhile does its own work (it creates
// and deletes three KopfExample objects). Then it stops the manager, waits
// for it, and exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/template"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/memo"
)

// steps is how many objects the app creates and deletes, one at a time.
const steps = 3

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the whole program: the operator in a goroutine, the app's
// activity in this one. It returns once both have finished.
func run(args []string) error {
	// The program takes the runner's command line (--namespace,
	// --standalone, --verbose, --kubeconfig, --shard-ring, ...), but runs
	// the manager itself.
	flags, err := handlers.ParseFlags(args)
	if err != nil {
		return err
	}
	if flags.Liveness != "" {
		return errors.New("--liveness is served by the standalone runner only")
	}
	// Kopf's example always logs verbosely.
	ctrl.SetLogger(zap.New(zap.ConsoleEncoder(), zap.Level(zapcore.DebugLevel), zap.StacktraceLevel(zapcore.PanicLevel)))

	// SIGINT and SIGTERM end the app's activity early; the operator then
	// stops as it would at the end.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	fmt.Println("Starting the main app.")
	cfg, err := restConfig(flags.Kubeconfig)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		// The app serves no metrics.
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	// ready is closed once the operator's startup handlers have finished:
	// Kopf's ready_flag.
	ready := make(chan struct{})
	reg := registry()
	if err := handlers.SetupWithManager(mgr, reg, handlers.Options{
		Ready:      ready,
		Memo:       operatorMemo(),
		Namespaces: flags.Namespaces,
		Standalone: flags.Standalone,
		Peering:    flags.Peering,
		Priority:   flags.Priority,
		Sharding:   handlers.Sharding{Ring: flags.ShardRing},
	}); err != nil {
		return err
	}

	// The operator's goroutine is owned here: stopOperator cancels its
	// context and waits until the manager has stopped everything it runs.
	opCtx, stopOp := context.WithCancel(context.Background())
	defer stopOp()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(opCtx) }()
	stopOperator := func() error {
		stopOp()
		if err := <-stopped; err != nil {
			return fmt.Errorf("run the operator: %w", err)
		}
		return nil
	}

	select {
	case <-ready:
	case <-ctx.Done():
		return stopOperator()
	case err := <-stopped:
		if err != nil {
			return fmt.Errorf("run the operator: %w", err)
		}
		return errors.New("the operator stopped before it was ready")
	}
	namespace := "default"
	if len(flags.Namespaces) > 0 {
		namespace = flags.Namespaces[0]
	}
	appErr := activity(ctx, mgr.GetClient(), namespace)

	// Ask the operator to stop gracefully; it takes a moment.
	fmt.Println("Exiting the main app.")
	return errors.Join(appErr, stopOperator())
}

// registry has the operator's handlers: they print the templates of the
// operator's memo.
func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", printing("create_tpl"))
	handlers.OnDelete(kex, "delete_fn", printing("delete_tpl"))
	return reg
}

// operatorMemo is the memo that every object's memo starts from: here,
// the templates the handlers print.
func operatorMemo() *memo.Memo {
	memo := &memo.Memo{}
	memo.Set("create_tpl", template.Must(template.New("create").Parse("Hello, {{.name}}!\n")))
	memo.Set("delete_tpl", template.Must(template.New("delete").Parse("Good bye, {{.name}}!\n")))
	return memo
}

// printing returns a handler that prints the memo's template under the
// key with the object's name and namespace.
func printing(key string) handlers.ChangeFunc[*unstructured.Unstructured] {
	return func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		value, _ := c.Memo.Get(key)
		tpl, ok := value.(*template.Template)
		if !ok {
			return nil, handlers.Permanent(errors.New(fmt.Sprintf("the memo has no template %q", key)))
		}
		var line strings.Builder
		if err := tpl.Execute(&line, map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}); err != nil {
			return nil, handlers.Permanent(fmt.Errorf("render %s: %w", key, err))
		}
		fmt.Print(line.String())
		return nil, nil
	}
}

// restConfig connects as the runner would: --kubeconfig, else $KUBECONFIG,
// ~/.kube/config or the in-cluster configuration.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load the kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find the cluster: %w", err)
	}
	return cfg, nil
}
