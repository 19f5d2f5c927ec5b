// Command kopf freezes and resumes operators through their peering
// objects, as Python Kopf's `kopf freeze` and `kopf resume` do: it writes
// (or removes) a peer record of its own, whose priority pauses every
// operator of lower or equal priority that uses the same peering object,
// whether written in Go with kopf-go or in Python with Kopf.
//
// There is no `kopf run`: a kopf-go operator is a program of its own, and
// handlers.Main gives it Kopf's command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/kopf-go/kopf/internal/peering"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// requestTimeout bounds each request to the API server, so that an
// unreachable cluster fails the command instead of hanging it.
const requestTimeout = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line (without the program's name) and returns
// the exit code: 0 on success, 1 on failure, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	switch command := args[0]; command {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, mainUsage)
		return exitOK
	case "run":
		fmt.Fprintln(stderr, "kopf: kopf-go has no run command: an operator is a Go program of its own, "+
			"and handlers.Main gives it Kopf's command line (see examples/).")
		return exitUsage
	case "freeze", "resume":
		o, err := parse(command, args[1:], os.Getenv)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usages[command])
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(stderr, "kopf %s: %v\nRun 'kopf %s --help' for usage.\n", command, err, command)
			return exitUsage
		}
		return execute(ctx, o, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "kopf: unknown command %q\n%s", command, mainUsage)
		return exitUsage
	}
}

// execute connects to the cluster and writes the record.
func execute(ctx context.Context, o options, stdout, stderr io.Writer) int {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "kopf %s: %v\n", o.command, err)
		return exitFailure
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	cfg.UserAgent = "kopf-go/" + o.command
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kopf %s: create a client: %v\n", o.command, err)
		return exitFailure
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kopf %s: create a discovery client: %v\n", o.command, err)
		return exitFailure
	}
	now := time.Now()
	identity := o.id
	if identity == "" {
		identity = peering.Identity(true, now)
	}
	return writer{dyn: dyn, disco: disco, stdout: stdout, stderr: stderr}.apply(ctx, o, identity, now)
}

// restConfig loads the kubeconfig file if given; else $KUBECONFIG,
// the in-cluster configuration, or ~/.kube/config, as controller-runtime
// finds them.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load the kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find the cluster: %w", err)
	}
	return cfg, nil
}
