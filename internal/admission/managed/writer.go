package managed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/jitter"
)

// fatal reports whether a write failed in a way that retrying cannot
// mend: the operator lacks the RBAC, or the configuration is refused.
func fatal(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }

// write keeps the configurations in line with the handlers until ctx
// ends: it applies them, then watches them and applies them again
// whenever what FieldManager owns of them drifts from what it applies (a
// hand edit, a deletion), and every retry interval while a kind is not
// served yet or a write failed. With presence, it also deletes abandoned
// presence Leases every writer lease duration. It returns an error only
// for a write that retrying cannot mend; ctx's end is no error.
func (m *Configurations) write(ctx context.Context, p *presence) error {
	ctx, cancel := context.WithCancel(ctx)
	var informing sync.WaitGroup
	defer informing.Wait()
	defer cancel()
	changed := make(chan struct{}, 1)
	for _, inf := range m.informers(changed) {
		informing.Go(func() { inf.RunWithContext(ctx) })
	}
	var collecting <-chan time.Time
	if p != nil {
		t := time.NewTicker(WriterLeaseDuration)
		defer t.Stop()
		collecting = t.C
		m.collect(ctx, p)
	}
	why := starting
	for {
		complete, err := m.sync(ctx, why)
		why = watching
		switch {
		case err != nil && fatal(err):
			return fmt.Errorf("configure the webhooks %s: %w", m.Config.Name, err)
		case err != nil && ctx.Err() == nil:
			m.Logger.Error(err, "Failed to configure the webhooks; will retry", "name", m.Config.Name, "retry", m.interval())
		}
		var again <-chan time.Time
		var timer *time.Timer
		if err != nil || !complete {
			// With jitter, as the engine's retries after API errors.
			timer = time.NewTimer(jitter.Default().Apply(m.interval()))
			again = timer.C
		}
	wait:
		for {
			select {
			case <-ctx.Done():
			case <-changed:
			case <-again:
			case <-collecting:
				m.collect(ctx, p)
				continue // nothing to write: wait on
			}
			break wait
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// collect deletes abandoned presence Leases, logging what it did.
func (m *Configurations) collect(ctx context.Context, p *presence) {
	n, err := p.collect(ctx)
	if err != nil && ctx.Err() == nil {
		m.Logger.Error(err, "Abandoned presence Leases could not be deleted; they are tried again later.")
	}
	if n > 0 {
		m.Logger.Info("Deleted the presence Leases of replicas that stopped without dropping them.", "deleted", n)
	}
}

// informers watch the two configurations (by name: the RBAC may grant
// only them) and signal every change on changed, without blocking.
func (m *Configurations) informers(changed chan<- struct{}) []toolscache.SharedIndexInformer {
	api := m.Clientset.AdmissionregistrationV1()
	byName := func(o metav1.ListOptions) metav1.ListOptions {
		o.FieldSelector = "metadata.name=" + m.Config.Name
		return o
	}
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}
	validating := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return api.ValidatingWebhookConfigurations().List(ctx, byName(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.ValidatingWebhookConfigurations().Watch(ctx, byName(o))
		},
	}
	mutating := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return api.MutatingWebhookConfigurations().List(ctx, byName(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.MutatingWebhookConfigurations().Watch(ctx, byName(o))
		},
	}
	var out []toolscache.SharedIndexInformer
	for _, w := range []struct {
		kind    string
		lw      toolscache.ListerWatcher
		example runtime.Object
	}{
		{"ValidatingWebhookConfiguration", validating, &admissionregistrationv1.ValidatingWebhookConfiguration{}},
		{"MutatingWebhookConfiguration", mutating, &admissionregistrationv1.MutatingWebhookConfiguration{}},
	} {
		inf := toolscache.NewSharedIndexInformerWithOptions(w.lw, w.example, toolscache.SharedIndexInformerOptions{})
		kind := w.kind
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *toolscache.Reflector, err error) {
			if ctx.Err() == nil {
				m.Logger.Error(err, "Cannot watch the webhook configuration; its changes are not seen until the watch works again.",
					"kind", kind, "name", m.Config.Name)
			}
		})
		_, _ = inf.AddEventHandler(handler)
		out = append(out, inf)
	}
	return out
}

// cause is why the configurations are written.
type cause int

const (
	// starting: a writer's first write (logged as Kopf logs it).
	starting cause = iota
	// watching: a change of the configurations, or a retry.
	watching
	// cleaning: the last replica leaves only the persistent webhooks.
	cleaning
)

// sync brings both configurations in line with the handlers (only the
// persistent ones when cleaning); complete is false while some kind's
// resource is unknown (its webhooks have no rules yet).
func (m *Configurations) sync(ctx context.Context, why cause) (complete bool, err error) {
	resources, complete := m.resources()
	a, err := ApplyConfigurations(m.Config, m.Registry, resources, why == cleaning)
	if err != nil {
		return complete, err
	}
	if why == starting {
		m.Logger.Info(fmt.Sprintf("Reconfiguring the validating and mutating webhooks %s.", m.Config.Name))
	}
	api := m.Clientset.AdmissionregistrationV1()
	validating := func() error {
		live, err := api.ValidatingWebhookConfigurations().Get(ctx, m.Config.Name, metav1.GetOptions{})
		var owned Content
		if err == nil {
			owned, err = ownedValidating(live)
		}
		return m.carry(ctx, "ValidatingWebhookConfiguration", owned, err, a.Validating, why == watching,
			func(patch []byte) error {
				_, err := api.ValidatingWebhookConfigurations().Patch(ctx, m.Config.Name, types.StrategicMergePatchType, patch,
					metav1.PatchOptions{FieldManager: FieldManager})
				return err
			},
			func() error {
				_, err := api.ValidatingWebhookConfigurations().Apply(ctx, a.Validating, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
				return err
			})
	}
	mutating := func() error {
		live, err := api.MutatingWebhookConfigurations().Get(ctx, m.Config.Name, metav1.GetOptions{})
		var owned Content
		if err == nil {
			owned, err = ownedMutating(live)
		}
		return m.carry(ctx, "MutatingWebhookConfiguration", owned, err, a.Mutating, why == watching,
			func(patch []byte) error {
				_, err := api.MutatingWebhookConfigurations().Patch(ctx, m.Config.Name, types.StrategicMergePatchType, patch,
					metav1.PatchOptions{FieldManager: FieldManager})
				return err
			},
			func() error {
				_, err := api.MutatingWebhookConfigurations().Apply(ctx, a.Mutating, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
				return err
			})
	}
	err = errors.Join(validating(), mutating())
	if err == nil && why != cleaning {
		m.wrote.Store(true)
	}
	return complete, err
}

// carry out the plan for one configuration, as read (owned, or readErr):
// delete the stale webhooks whole, then apply. A drift seen by watching
// is someone else's change, and logged.
func (m *Configurations) carry(ctx context.Context, kind string, owned Content, readErr error, applied any, drift bool,
	remove func([]byte) error, apply func() error) error {
	absent := apierrors.IsNotFound(readErr)
	if readErr != nil && !absent {
		return fmt.Errorf("read the %s %s: %w", kind, m.Config.Name, readErr)
	}
	want, err := ContentOf(applied)
	if err != nil {
		return err
	}
	plan := PlanOf(owned, want, absent)
	if !plan.Apply() {
		return nil
	}
	if drift {
		m.Logger.Info("The webhook configuration differs from the handlers' webhooks; applying it again.",
			"kind", kind, "name", m.Config.Name, "absent", plan.Absent, "changed", plan.Drifted, "stale", plan.Stale, "annotations", plan.Annotations)
	}
	if len(plan.Stale) > 0 && !absent {
		patch, err := deletion(plan.Stale)
		if err != nil {
			return err
		}
		if err := remove(patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the webhooks %v from the %s %s: %w", plan.Stale, kind, m.Config.Name, err)
		}
	}
	if err := apply(); err != nil {
		return fmt.Errorf("apply the %s %s: %w", kind, m.Config.Name, err)
	}
	return nil
}

// resources maps the kinds to their resources as the mapper knows them;
// complete is false while some kind's resource is unknown. A kind that the
// mapper knew once keeps its last known resource while the mapper fails
// to tell it (a discovery hiccup): its webhooks keep their rules rather
// than match nothing until the next retry.
func (m *Configurations) resources() (admission.Resources, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known == nil {
		m.known = map[*admission.Kind]schema.GroupVersionResource{}
	}
	complete := true
	known := map[*admission.Kind]schema.GroupVersionResource{}
	for _, k := range m.Registry.Kinds {
		mapping, err := m.Mapper.RESTMapping(k.GVK.GroupKind(), k.GVK.Version)
		if err != nil {
			complete = false
			last, ok := m.known[k]
			m.Logger.Info("The resource of a kind with webhooks is not served (yet)", "kind", k.GVK.String(), "reason", err.Error(),
				"lastKnown", last.String())
			if ok {
				known[k] = last
			}
			continue
		}
		known[k] = mapping.Resource
		m.known[k] = mapping.Resource
	}
	return func(k *admission.Kind) (schema.GroupVersionResource, bool) { gvr, ok := known[k]; return gvr, ok }, complete
}
