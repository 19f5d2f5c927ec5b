package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kopf-go/kopf/internal/peering"
	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// targets are the peering objects of the options, as Kopf's operators
// use them: the KopfPeering in each namespace, or the ClusterKopfPeering
// with -A or without namespaces.
func targets(o options) []peering.Target {
	if o.clusterwide {
		return peering.Targets(o.peering, nil)
	}
	return peering.Targets(o.peering, o.namespaces)
}

// describe names the object as kubectl's users know it: Kind ns/name.
func describe(t peering.Target) string {
	if t.Namespace == "" {
		return t.Kind() + " " + t.Name
	}
	return t.Kind() + " " + t.Namespace + "/" + t.Name
}

// absent says where the object was looked for, for error messages.
func absent(t peering.Target) string {
	if t.Namespace == "" {
		return "the " + t.Kind() + " '" + t.Name + "' does not exist (cluster-wide)"
	}
	return "the " + t.Kind() + " '" + t.Name + "' does not exist in the namespace '" + t.Namespace + "'"
}

// resourceLister is the part of a discovery client that tells which
// kinds the cluster serves.
type resourceLister interface {
	ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// writer writes or removes one identity's record in peering objects.
type writer struct {
	dyn    dynamic.Interface
	disco  resourceLister
	stdout io.Writer
	stderr io.Writer
}

// apply writes the options' record (or, with a zero lifetime, its removal)
// into every target, and returns the exit code: 0 if all went well, else 1
// after one error line per failed target.
func (w writer) apply(ctx context.Context, o options, identity string, now time.Time) int {
	var record *kopfv1.Peer
	if o.lifetime > 0 {
		record = peering.Peer{Identity: identity, Priority: o.priority, Lifetime: time.Duration(o.lifetime) * time.Second,
			LastSeen: now, Message: o.message}.Record()
	}
	all := targets(o)
	if err := w.check(ctx, all[0]); err != nil { // all targets are of one kind
		fmt.Fprintf(w.stderr, "kopf %s: %v\n", o.command, err)
		return 1
	}
	code := 0
	for _, t := range all {
		if err := w.patch(ctx, o, t, identity, record); err != nil {
			fmt.Fprintf(w.stderr, "kopf %s: %v\n", o.command, err)
			code = 1
			continue
		}
		if o.quiet {
			continue
		}
		if record == nil {
			fmt.Fprintf(w.stdout, "Resumed: the record '%s' is removed from %s.\n", identity, describe(t))
			continue
		}
		details := fmt.Sprintf("priority %d, lifetime %d s", o.priority, o.lifetime)
		if o.message != "" {
			details += fmt.Sprintf(", message %q", o.message)
		}
		fmt.Fprintf(w.stdout, "Frozen: the record '%s' (%s) is in %s.\n", identity, details, describe(t))
	}
	return code
}

// check makes sure that the cluster serves the target's kind, so that a
// missing CRD is not reported as a missing object.
func (w writer) check(ctx context.Context, t peering.Target) error {
	gvr := t.Resource()
	list, err := w.disco.ServerResourcesForGroupVersionWithContext(ctx, gvr.GroupVersion().String())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("look up the %s kind in the cluster: %w", t.Kind(), err)
	}
	if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
		return nil
	}
	return fmt.Errorf("the cluster has no %s kind (the CRD %s.%s is missing): apply config/crd/%s.yaml first",
		t.Kind(), gvr.Resource, gvr.Group, gvr.Resource)
}

// patch writes the record into the object, or removes it (nil).
func (w writer) patch(ctx context.Context, o options, t peering.Target, identity string, record *kopfv1.Peer) error {
	var value any // a nil *Peer would marshal as null too, but say it plainly
	if record != nil {
		value = record
	}
	records := map[string]any{identity: value}
	if o.verbose {
		data, _ := json.Marshal(map[string]any{"status": records}) // what WriteRecords sends
		fmt.Fprintf(w.stderr, "Patching %s with %s\n", describe(t), data)
	}
	err := peering.WriteRecords(ctx, w.dyn, t, records)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: create it first (config/crd/peerings-default.yaml has the ones named 'default'), or name another with --peering", absent(t))
	case err != nil:
		return fmt.Errorf("write the record into %s: %w", describe(t), err)
	}
	return nil
}
