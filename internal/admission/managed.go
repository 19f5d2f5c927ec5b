package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultRetryInterval is how often Managed retries a failed write, or
// looks again for kinds the API server did not serve yet.
const DefaultRetryInterval = 10 * time.Second

// cleanupTimeout bounds the last write, after the operator was told to stop.
const cleanupTimeout = 10 * time.Second

// Managed keeps a ValidatingWebhookConfiguration and a
// MutatingWebhookConfiguration, both named Config.Name, in line with the
// handlers: it creates them if absent and sets their webhooks, once the
// webhook server listens; when told to stop, it leaves only the persistent
// handlers' webhooks. It is a manager.Runnable that runs on every replica
// (webhooks are served by all of them).
type Managed struct {
	Config   Config
	Registry *Registry
	// Client writes the configurations (no reads: it creates, and on a
	// conflict, merge-patches the webhooks).
	Client client.Client
	// Mapper finds the kinds' resources (plurals).
	Mapper meta.RESTMapper
	// Ready returns nil once the webhook server serves; the configurations
	// are not touched before, so that the API server does not call a
	// server that is not there.
	Ready func() error
	// RetryInterval: DefaultRetryInterval if zero.
	RetryInterval time.Duration
	Logger        logr.Logger
}

// NeedLeaderElection is false: every replica serves webhooks.
func (m *Managed) NeedLeaderElection() bool { return false }

// Start waits for the webhook server, writes the configurations (retrying
// transient failures, and again while some kind is not served yet), then
// waits for ctx's end and leaves only the persistent webhooks.
func (m *Managed) Start(ctx context.Context) error {
	interval := m.RetryInterval
	if interval == 0 {
		interval = DefaultRetryInterval
	}
	if !m.waitReady(ctx, interval) {
		return nil
	}
	written := false
	for {
		complete, err := m.apply(ctx, false)
		switch {
		case err == nil:
			written = true
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			return fmt.Errorf("configure the webhooks %s: %w", m.Config.Name, err)
		case ctx.Err() == nil:
			m.Logger.Error(err, "Failed to configure the webhooks; will retry", "name", m.Config.Name, "retry", interval)
		}
		if err == nil && complete {
			break
		}
		if !sleep(ctx, interval) {
			break
		}
	}
	<-ctx.Done()
	if !written {
		return nil
	}
	m.Logger.Info(fmt.Sprintf("Cleaning up the admission webhooks %s.", m.Config.Name))
	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := m.apply(cleanupCtx, true); err != nil {
		return fmt.Errorf("clean up the webhooks %s: %w", m.Config.Name, err)
	}
	return nil
}

// waitReady polls Ready until it passes; false if ctx ends first.
func (m *Managed) waitReady(ctx context.Context, interval time.Duration) bool {
	if m.Ready == nil {
		return ctx.Err() == nil
	}
	poll := 100 * time.Millisecond
	for waited := time.Duration(0); ; waited += poll {
		err := m.Ready()
		if err == nil {
			return true
		}
		if waited >= interval {
			m.Logger.Info("Waiting for the webhook server", "reason", err.Error())
			waited = 0
		}
		if !sleep(ctx, poll) {
			return false
		}
	}
}

// apply writes both configurations; complete is false while some kind's
// resource is unknown (its webhooks have no rules yet).
func (m *Managed) apply(ctx context.Context, persistentOnly bool) (complete bool, err error) {
	complete = true
	known := map[*Kind]schema.GroupVersionResource{}
	for _, k := range m.Registry.Kinds {
		mapping, err := m.Mapper.RESTMapping(k.GVK.GroupKind(), k.GVK.Version)
		if err != nil {
			complete = false
			m.Logger.Info("The resource of a kind with webhooks is not served (yet)", "kind", k.GVK.String(), "reason", err.Error())
			continue
		}
		known[k] = mapping.Resource
	}
	resources := func(k *Kind) (schema.GroupVersionResource, bool) { gvr, ok := known[k]; return gvr, ok }

	if !persistentOnly {
		m.Logger.Info(fmt.Sprintf("Reconfiguring the validating and mutating webhooks %s.", m.Config.Name))
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: m.Config.Name},
		Webhooks:   m.Config.ValidatingWebhooks(m.Registry, resources, persistentOnly),
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: m.Config.Name},
		Webhooks:   m.Config.MutatingWebhooks(m.Registry, resources, persistentOnly),
	}
	return complete, errors.Join(
		m.write(ctx, validating, validating.Webhooks),
		m.write(ctx, mutating, mutating.Webhooks),
	)
}

// write creates the configuration, or if it exists, replaces its webhooks
// with a merge patch (so that nothing else of it is touched).
func (m *Managed) write(ctx context.Context, obj client.Object, webhooks any) error {
	err := m.Client.Create(ctx, obj)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	body, err := json.Marshal(map[string]any{"webhooks": webhooks})
	if err != nil {
		return fmt.Errorf("encode the webhooks: %w", err)
	}
	return m.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body))
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
