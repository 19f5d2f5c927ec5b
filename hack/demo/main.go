// Command demo shows kopf-go at work with nothing but Go installed: it
// starts an embedded control plane (envtest: kube-apiserver and etcd),
// installs the KopfExample CRD, runs examples/01-minimal as an operator
// process, creates an object, shows what the handler did to it, deletes
// it, and stops everything. Run it from the repository root with
// `make demo`; it exits 0 on success and 1 with a message otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

// overallTimeout bounds the demo once the control-plane binaries exist.
const overallTimeout = 2 * time.Minute

// example is the operator the demo runs.
const example = "./examples/01-minimal"

func main() {
	// envtest logs through controller-runtime's logger; the demo prints
	// its own story instead.
	ctrllog.SetLogger(logr.Discard())
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stopSignals()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nDEMO FAILED: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("\nDemo finished: the operator handled the object, exited 0 on SIGTERM, and the control plane is stopped.")
}

// run does the whole demo. Everything it starts is stopped and waited for
// before it returns, on success and on failure alike.
func run(ctx context.Context) (err error) {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	assets, err := envtestAssets(ctx, root)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, overallTimeout)
	defer cancel()
	defer func() {
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the demo did not finish within %s: %w", overallTimeout, err)
		}
	}()

	step("Starting a control plane: kube-apiserver and etcd from %s", assets)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "examples", "crd.yaml")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		// Stop what did start (etcd, say) before giving up.
		_ = env.Stop()
		return fmt.Errorf("start the control plane: %w", err)
	}
	defer func() {
		step("Stopping the control plane")
		if stopErr := env.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
	}()
	fmt.Printf("    API server at %s; CRD kopfexamples.kopf.dev installed from examples/crd.yaml\n", cfg.Host)

	tmp, err := os.MkdirTemp("", "kopf-demo-")
	if err != nil {
		return fmt.Errorf("make a temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	kubeconfig, err := kopftest.WriteKubeconfig(env, tmp)
	if err != nil {
		return err
	}

	step("Building %s", example)
	bin := filepath.Join(tmp, "01-minimal")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, example)
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build %s: %w", example, err)
	}

	args := []string{"--standalone", "--verbose", "--kubeconfig", kubeconfig}
	step("Running the operator: 01-minimal %s", strings.Join(args, " "))
	op, err := startOperator(bin, args...)
	if err != nil {
		return err
	}
	defer op.Kill()
	defer func() {
		if err != nil {
			op.printNew("The operator's output before the failure:")
		}
	}()

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	if err := handleOneObject(ctx, c, op, root); err != nil {
		return err
	}

	step("Sending SIGTERM to the operator")
	if err := op.stop(ctx); err != nil {
		return err
	}
	op.printNew("The operator's output while stopping:")
	fmt.Println("    The operator exited with code 0.")
	return nil
}

// handleOneObject creates the example object, waits for the create
// handler's result, shows the object, deletes it and waits until it is gone.
func handleOneObject(ctx context.Context, c client.Client, op *operator, root string) error {
	obj, err := exampleObject(root)
	if err != nil {
		return err
	}
	step("Creating %s/%s from examples/obj.yaml", obj.GetNamespace(), obj.GetName())
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("create the example object: %w", err)
	}
	key := client.ObjectKeyFromObject(obj)
	var message string
	err = poll(ctx, op, "status.create_fn.message is set", func() (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, err
		}
		message, _, _ = unstructured.NestedString(obj.Object, "status", "create_fn", "message")
		return message != "", nil
	})
	if err != nil {
		return err
	}
	op.printNew("The operator's output so far (the handler's print on stdout, the engine's log on stderr):")
	step("What the create handler did to the object")
	if err := showObject(ctx, c, obj); err != nil {
		return err
	}

	step("Deleting %s/%s", obj.GetNamespace(), obj.GetName())
	if err := c.Delete(ctx, obj); err != nil {
		return fmt.Errorf("delete the example object: %w", err)
	}
	err = poll(ctx, op, "the object is gone", func() (bool, error) {
		err := c.Get(ctx, key, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample"}})
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		return err != nil, nil
	})
	if err != nil {
		return err
	}
	fmt.Println("    The object is gone: 01-minimal has no delete handler, so no finalizer held it back.")
	err = poll(ctx, op, "the operator notices the deletion", func() (bool, error) {
		return strings.Contains(op.Output(), "Deleted, really deleted"), nil
	})
	if err != nil {
		return err
	}
	op.printNew("The operator's output during the deletion:")
	return nil
}

// showObject prints the object's status, the framework's annotations, its
// finalizers and the Events about it.
func showObject(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	text, err := yaml.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("render the status: %w", err)
	}
	fmt.Println("    The handler's result, stored in status.create_fn:")
	printIndented(string(text))

	fmt.Println("    The framework's state in annotations (kopf.zalando.org/*, as Python Kopf writes it):")
	found := false
	for k, v := range obj.GetAnnotations() {
		if strings.HasPrefix(k, "kopf.zalando.org/") {
			fmt.Printf("        %s: %s\n", k, strings.TrimSpace(v))
			found = true
		}
	}
	if !found {
		fmt.Println("        (none)")
	}

	fmt.Printf("    Finalizers: %v\n", obj.GetFinalizers())
	if len(obj.GetFinalizers()) == 0 {
		fmt.Println("        (none: no delete handler needs to block the deletion)")
	}

	events, err := eventsAbout(ctx, c, obj)
	if err != nil {
		return err
	}
	fmt.Println("    Events about the object:")
	if len(events) == 0 {
		fmt.Println("        (none)")
	}
	for _, e := range events {
		fmt.Printf("        %s\n", e)
	}
	return nil
}

// poll checks cond every 100 ms until it holds; it gives up when ctx ends
// or when the operator exits, since nothing would then change.
func poll(ctx context.Context, op *operator, what string, cond func() (bool, error)) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		ok, err := cond()
		switch {
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("check whether %s: %w", what, err)
		case ok:
			return nil
		}
		if op.Exited() {
			return fmt.Errorf("the operator exited while waiting until %s: %v", what, op.Err())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until %s: %w", what, ctx.Err())
		case <-ticker.C:
		}
	}
}

func step(format string, args ...any) {
	fmt.Printf("\n==> %s\n", fmt.Sprintf(format, args...))
}

func printIndented(text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Printf("        %s\n", line)
	}
}
