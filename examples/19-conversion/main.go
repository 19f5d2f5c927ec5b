// Command 19-conversion converts ConversionExample objects between their
// versions v1 (spec.field) and v2 (spec.value) for the API server, and
// keeps the CRD's spec.conversion pointing at its webhook server while it
// runs. Its create handler runs once per object, whichever version it
// watches (--handle-version) and whichever version the CRD stores.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// managed names the writer of the CRD's conversion, as the admission
// example names its webhook configurations.
const managed = "auto.kopf.dev"

func main() {
	version, args, err := parseFlags(os.Args[1:])
	if err == nil {
		err = handlers.Run(ctrl.SetupSignalHandler(), registry(version), args, handlers.RunOptions{
			Options: handlers.Options{Webhooks: handlers.WebhookOptions{Managed: managed}},
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// parseFlags takes the example's --handle-version (v1 or v2; default v2)
// out of args and returns the rest for the runner.
func parseFlags(args []string) (string, []string, error) {
	version := "v2"
	set := flag.NewFlagSet("19-conversion", flag.ContinueOnError)
	set.SetOutput(io.Discard)
	set.StringVar(&version, "handle-version", version, "the version of ConversionExample that the handlers see")
	var rest []string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || set.Lookup(name) == nil {
			rest = append(rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return "", nil, fmt.Errorf("parse the command line: --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := set.Set(name, value); err != nil {
			return "", nil, err
		}
	}
	if version != "v1" && version != "v2" {
		return "", nil, fmt.Errorf("--handle-version %q: want v1 or v2", version)
	}
	return version, rest, nil
}

// registry handles ConversionExample in one version and converts it both
// ways.
func registry(version string) *handlers.Registry {
	reg := handlers.NewRegistry()
	cex := handlers.ForKind(reg, "kopf.dev", version, "ConversionExample")
	handlers.OnCreate(cex, "create_fn", createFn)
	handlers.OnUpdate(cex, "update_fn", updateFn)
	conv := handlers.ForConversion(reg, "kopf.dev", "ConversionExample")
	handlers.Converter(conv, "v1", "v2", func(ctx context.Context, obj *unstructured.Unstructured) error {
		return renameSpecField(obj, "field", "value")
	})
	handlers.Converter(conv, "v2", "v1", func(ctx context.Context, obj *unstructured.Unstructured) error {
		return renameSpecField(obj, "value", "field")
	})
	return reg
}

// renameSpecField moves spec.<from> to spec.<to>; an object without it
// stays without it.
func renameSpecField(obj *unstructured.Unstructured, from, to string) error {
	value, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", from)
	if err != nil || !found {
		return err
	}
	unstructured.RemoveNestedField(obj.Object, "spec", from)
	return unstructured.SetNestedField(obj.Object, value, "spec", to)
}

// createFn runs once per new object; its result becomes the object's
// status.create_fn.
func createFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Printf("And here we are! Creating: %v\n", c.Spec())
	return map[string]any{"message": "hello world"}, nil
}

// updateFn runs on each change of an object, never on a change of its
// version only: the operator compares the diff-base recorded in one
// version with the object read in another through the converters.
func updateFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Printf("Updating %s: %v\n", obj.GetName(), c.Diff)
	return map[string]any{"message": "updated"}, nil
}
