// Package managed keeps the spec.conversion of the CRDs whose kinds have
// converters pointing at the operator's conversion webhook
// (docs/conversion.md): strategy Webhook, the webhook's client config and
// CA bundle, conversionReviewVersions ["v1"], applied with server-side
// apply under the field manager kopf-go by one writer elected among the
// replicas, and applied again on drift. Nothing here ever removes it: a
// CRD whose conversion is taken away serves stored objects of one version
// as another, unconverted, which is silently wrong; a conversion webhook
// that is not served fails requests loudly instead.
package managed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	acv1 "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/kopf-go/kopf/internal/jitter"
)

// FieldManager is the field manager of the applied spec.conversion: the
// admission configurations' one, so that an operator's writes are one
// manager's.
const FieldManager = "kopf-go"

// ReviewVersions is the managed webhook's conversionReviewVersions.
var ReviewVersions = []string{"v1"}

// LeasePrefix starts the name of the Lease that elects the writer of the
// CRDs' conversions: "kopf-conversion-<name>".
const LeasePrefix = "kopf-conversion-"

// DefaultRetryInterval is how often a failed write is retried, or a CRD
// that does not exist yet is looked for.
const DefaultRetryInterval = 10 * time.Second

// Conversions keeps the spec.conversion of the CRDs of some kinds. It is
// a manager.Runnable that runs on every replica (the webhook is served by
// all); with a Namespace, one of them, elected through a Lease there,
// writes.
type Conversions struct {
	// Name names the writer's Lease (the operator's managed webhooks'
	// name, e.g. "auto.kopf.dev").
	Name string
	// Kinds are the group-kinds whose CRDs are managed.
	Kinds []schema.GroupKind
	// ClientConfig is how the API server reaches the conversion endpoint:
	// a URL or a service (its path included), and the CA bundle; an empty
	// bundle is left to whoever else writes it (cert-manager's cainjector).
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// Annotations are applied on the CRDs as the operator's own, e.g.
	// cert-manager.io/inject-ca-from.
	Annotations map[string]string
	// CRDs reads, watches and applies the CRDs; Clientset holds the Lease.
	CRDs      apiextensionsclient.Interface
	Clientset kubernetes.Interface
	// Mapper finds the kinds' plurals, which name their CRDs.
	Mapper meta.RESTMapper
	// Ready returns nil once the webhook server serves: the conversion is
	// not pointed at a server that is not there yet.
	Ready func() error
	// Namespace holds the writer's Lease; empty: this process writes
	// alone (one process in development).
	Namespace string
	Identity  string
	// RetryInterval: DefaultRetryInterval if zero.
	RetryInterval time.Duration
	Logger        logr.Logger

	written atomic.Int32
}

// NeedLeaderElection is false: every replica serves the webhook; the
// writer is elected by a Lease of its own, apart from the manager's.
func (c *Conversions) NeedLeaderElection() bool { return false }

// Written is how many CRDs' conversions were applied (or found in line)
// by this process, for tests.
func (c *Conversions) Written() int { return int(c.written.Load()) }

func (c *Conversions) interval() time.Duration {
	if c.RetryInterval == 0 {
		return DefaultRetryInterval
	}
	return c.RetryInterval
}

// Start waits for the webhook server, then keeps the conversions until
// ctx ends, alone or as the elected writer. It returns an error only for a
// write that retrying cannot mend (forbidden, invalid). When ctx ends,
// the conversions stay as they are.
func (c *Conversions) Start(ctx context.Context) error {
	if !c.waitReady(ctx) {
		return nil
	}
	if c.Namespace == "" {
		c.Logger.Info("This process writes the CRDs' conversion alone: no namespace is known for the replicas' Lease.", "kinds", c.kindNames())
		return c.write(ctx)
	}
	return c.elect(ctx)
}

func (c *Conversions) kindNames() []string {
	out := make([]string, 0, len(c.Kinds))
	for _, k := range c.Kinds {
		out = append(out, k.String())
	}
	return out
}

// Lease is the name of the writer's Lease for a name of the managed
// webhooks: the name itself if it fits a Lease's, else a hash of it.
func Lease(name string) string {
	base := name
	if len(validation.IsDNS1123Subdomain(LeasePrefix+base)) > 0 || len(validation.IsValidLabelValue(base)) > 0 || base == "" {
		sum := sha256.Sum256([]byte(name))
		base = "h" + hex.EncodeToString(sum[:8])
	}
	return LeasePrefix + base
}

// write applies the conversions, then applies them again on every change
// of the CRDs and every retry interval while one is missing or failed,
// until ctx ends.
func (c *Conversions) write(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var watching sync.WaitGroup
	defer watching.Wait()
	defer cancel()
	changed := make(chan struct{}, 1)
	watched := map[string]bool{}
	for {
		names, complete := c.crdNames()
		// A kind served only later (its CRD installed after the start)
		// is watched from then on, or its drift would go unseen.
		var fresh []string
		for _, name := range names {
			if !watched[name] {
				watched[name] = true
				fresh = append(fresh, name)
			}
		}
		for _, inf := range c.informers(fresh, changed) {
			watching.Go(func() { inf.RunWithContext(ctx) })
		}
		complete, err := c.sync(ctx, names, complete)
		switch {
		case err != nil && fatal(err):
			return fmt.Errorf("configure the conversion of the CRDs %v: %w", c.kindNames(), err)
		case err != nil && ctx.Err() == nil:
			c.Logger.Error(err, "Failed to configure the conversion of the CRDs; will retry", "retry", c.interval())
		}
		var again <-chan time.Time
		var timer *time.Timer
		if err != nil || !complete {
			// With jitter, as the engine's retries after API errors.
			timer = time.NewTimer(jitter.Default().Apply(c.interval()))
			again = timer.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-again:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// fatal reports whether a write failed in a way that retrying cannot
// mend.
func fatal(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }

// crdNames maps the kinds to their CRDs' names, as the mapper knows them;
// complete is false while some kind is not served yet.
func (c *Conversions) crdNames() (names []string, complete bool) {
	complete = true
	for _, gk := range c.Kinds {
		mapping, err := c.Mapper.RESTMapping(gk)
		if err != nil {
			c.Logger.Info("The kind with converters is not served (yet); its CRD's conversion waits.", "kind", gk.String(), "reason", err.Error())
			complete = false
			continue
		}
		names = append(names, mapping.Resource.Resource+"."+gk.Group)
	}
	return names, complete
}

// sync brings the conversions of the CRDs named in line; complete stays
// false if it was.
func (c *Conversions) sync(ctx context.Context, names []string, complete bool) (bool, error) {
	var errs []error
	for _, name := range names {
		ok, err := c.syncOne(ctx, name)
		errs = append(errs, err)
		complete = complete && ok
	}
	return complete, errors.Join(errs...)
}

// syncOne applies one CRD's conversion if what FieldManager owns of it
// differs from what it applies; false if the CRD does not exist.
func (c *Conversions) syncOne(ctx context.Context, name string) (bool, error) {
	api := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	live, err := api.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.Logger.Info("The CRD does not exist (yet); its conversion waits.", "crd", name)
		return false, nil
	case err != nil:
		return true, fmt.Errorf("read the CRD %s: %w", name, err)
	}
	want := c.Apply(name)
	owned, err := acv1.ExtractCustomResourceDefinition(live, FieldManager)
	if err != nil {
		return true, fmt.Errorf("read the fields of %s in the CRD %s: %w", FieldManager, name, err)
	}
	if equal(owned, want) {
		c.written.Add(1)
		return true, nil
	}
	c.Logger.Info("Configuring the CRD's conversion webhook.", "crd", name, "strategy", apiextensionsv1.WebhookConverter,
		"url", ptrString(c.ClientConfig.URL), "service", serviceName(c.ClientConfig.Service), "caBundle", len(c.ClientConfig.CABundle) > 0,
		"was", conversionOf(live))
	if _, err := api.Apply(ctx, want, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return true, fmt.Errorf("apply the conversion of the CRD %s: %w", name, err)
	}
	c.written.Add(1)
	return true, nil
}

// Apply is the apply configuration of a CRD's conversion: only the fields
// the operator sets, so that a caBundle it is not given stays with its
// injector.
func (c *Conversions) Apply(name string) *acv1.CustomResourceDefinitionApplyConfiguration {
	cc := acv1.WebhookClientConfig()
	if c.ClientConfig.URL != nil {
		cc.WithURL(*c.ClientConfig.URL)
	}
	if s := c.ClientConfig.Service; s != nil {
		svc := acv1.ServiceReference().WithNamespace(s.Namespace).WithName(s.Name)
		if s.Path != nil {
			svc.WithPath(*s.Path)
		}
		if s.Port != nil {
			svc.WithPort(*s.Port)
		}
		cc.WithService(svc)
	}
	if len(c.ClientConfig.CABundle) > 0 {
		cc.WithCABundle(c.ClientConfig.CABundle...)
	}
	a := acv1.CustomResourceDefinition(name).WithSpec(acv1.CustomResourceDefinitionSpec().WithConversion(
		acv1.CustomResourceConversion().WithStrategy(apiextensionsv1.WebhookConverter).WithWebhook(
			acv1.WebhookConversion().WithClientConfig(cc).WithConversionReviewVersions(ReviewVersions...))))
	if len(c.Annotations) > 0 {
		a.WithAnnotations(c.Annotations)
	}
	return a
}

// equal compares what FieldManager owns of a CRD with what it applies:
// the conversion and the annotations.
func equal(owned, want *acv1.CustomResourceDefinitionApplyConfiguration) bool {
	var ownedConversion, wantConversion *acv1.CustomResourceConversionApplyConfiguration
	if owned.Spec != nil {
		ownedConversion = owned.Spec.Conversion
	}
	if want.Spec != nil {
		wantConversion = want.Spec.Conversion
	}
	a, errA := json.Marshal(ownedConversion)
	b, errB := json.Marshal(wantConversion)
	return errA == nil && errB == nil && string(a) == string(b) && maps.Equal(owned.Annotations, want.Annotations)
}

// conversionOf renders a CRD's conversion for the log.
func conversionOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Spec.Conversion == nil {
		return string(apiextensionsv1.NoneConverter)
	}
	out := string(crd.Spec.Conversion.Strategy)
	if w := crd.Spec.Conversion.Webhook; w != nil && w.ClientConfig != nil {
		out += " " + strings.TrimSpace(ptrString(w.ClientConfig.URL)+" "+serviceName(convertService(w.ClientConfig.Service)))
	}
	return out
}

func convertService(s *apiextensionsv1.ServiceReference) *admissionregistrationv1.ServiceReference {
	if s == nil {
		return nil
	}
	return &admissionregistrationv1.ServiceReference{Namespace: s.Namespace, Name: s.Name}
}

func serviceName(s *admissionregistrationv1.ServiceReference) string {
	if s == nil {
		return ""
	}
	return s.Namespace + "/" + s.Name
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// waitReady polls Ready until it passes; false if ctx ends first.
func (c *Conversions) waitReady(ctx context.Context) bool {
	for c.Ready != nil && c.Ready() != nil {
		if !sleep(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return ctx.Err() == nil
}

// sleep waits for d; false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
