package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/metrics"
)

// WebhookOptions configure the serving of webhook handlers.
type WebhookOptions struct {
	// Path is where the handlers are served on the manager's webhook
	// server: each at <Path>/<handler id>. Default: the root, as in Kopf.
	Path string
	// Managed, if set, names the ValidatingWebhookConfiguration and
	// MutatingWebhookConfiguration that the operator keeps in line with its
	// handlers (Kopf's settings.admission.managed, e.g. "auto.kopf.dev"):
	// one webhook per handler, named "<id>.<Managed>"; when the operator
	// exits, only the Persistent handlers' webhooks stay.
	Managed string
	// ClientConfig is how the API server reaches the webhook server's root:
	// a URL ("https://host:9443") or a service reference, plus the CA bundle
	// of the server's certificate. Path and the handler id are appended.
	// Without a URL or service, the URL is the server's host and port (the
	// host a local cluster reaches this machine at, if it is one Kopf
	// knows: K3d, Minikube, Docker Desktop; else localhost); without a CA
	// bundle, the self-signed CA's if the server serves with one.
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// SelfSigned serves the webhooks with a self-signed certificate made at
	// the start, for development (the runner's --webhook-self-signed).
	// Without it, the webhook server needs a certificate, except outside a
	// cluster, where it serves with a self-signed one if it finds none
	// (docs/admission.md, "In development: no certificates").
	SelfSigned bool
	// MaxConcurrentReviews bounds the admission reviews served at once, a
	// review over 1 MiB counting once per MiB begun; the excess is answered
	// 429 with a Retry-After of one second, which the API server honours
	// (the runner's --webhook-max-concurrent-reviews). Default 16.
	MaxConcurrentReviews int
}

// SetupWebhooksWithManager serves the registry's validating and mutating
// handlers on the manager's webhook server, whose address and
// certificates are set in manager.Options.WebhookServer; with
// WebhookOptions.Managed, it also keeps the webhook configurations in line
// with the handlers. SetupWithManager calls it with Options.Webhooks: call
// it yourself only to serve the webhooks without the rest of the engine.
// Without webhook handlers it does nothing, and the webhook server is not
// started. Registration problems are reported here, all at once.
func SetupWebhooksWithManager(mgr manager.Manager, reg *Registry, opts WebhookOptions) error {
	if err := reg.checkResources(mgr.GetScheme()); err != nil {
		return err
	}
	return setupWebhooks(mgr, reg, opts)
}

// setupWebhooks is SetupWebhooksWithManager for a registry whose resources
// are checked already.
func setupWebhooks(mgr manager.Manager, reg *Registry, opts WebhookOptions) error {
	served, err := reg.servedWebhooks(mgr.GetScheme(), opts)
	if err != nil {
		return err
	}
	if len(served.Kinds) == 0 {
		return nil
	}
	if err := metrics.Register(); err != nil {
		return fmt.Errorf("register the metrics: %w", err)
	}

	log := mgr.GetLogger().WithName("admission")
	ws := mgr.GetWebhookServer()
	// Before the first registration, which fills in the server's defaults.
	dev, err := serveSelfSigned(mgr, opts.SelfSigned)
	if err != nil {
		return err
	}
	path := strings.TrimRight(opts.Path, "/")
	if err := register(ws.Register, path+"/", &admission.Server{
		Registry: served, Prefix: path, Mapper: mgr.GetRESTMapper(), Logger: log,
		MaxConcurrent: opts.MaxConcurrentReviews,
	}); err != nil {
		return err
	}
	if opts.Managed == "" {
		return nil
	}
	opts.ClientConfig = dev.clientConfig(opts.ClientConfig)
	// Writes go straight to the API server, with client-go's scheme (which
	// knows the webhook configurations whatever the manager's scheme).
	writer, err := client.New(mgr.GetConfig(), client.Options{HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	started := ws.StartedChecker()
	return mgr.Add(&admission.Managed{
		Config:   admission.Config{Name: opts.Managed, ClientConfig: opts.ClientConfig, Path: path},
		Registry: served,
		Client:   writer,
		Mapper:   mgr.GetRESTMapper(),
		Ready:    func() error { return started(nil) },
		Logger:   log,
	})
}

// servedWebhooks checks the webhook registration and returns a copy of
// the webhook handlers with the typed kinds' GVKs from the scheme; the
// registered kinds stay as they are.
func (r *Registry) servedWebhooks(scheme *runtime.Scheme, opts WebhookOptions) (*admission.Registry, error) {
	errs := []error{r.webhooks.Validate()}
	served := &admission.Registry{}
	for _, k := range r.webhooks.Kinds {
		kind := *k
		if kind.GVK.Empty() {
			gvk, err := apiutil.GVKForObject(kind.NewObject(), scheme)
			if err != nil {
				errs = append(errs, fmt.Errorf("find the kind of %T: %w", kind.NewObject(), err))
			}
			kind.GVK = gvk
		}
		served.Kinds = append(served.Kinds, &kind)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid webhook registration: %w", err)
	}
	return served, nil
}

// register mounts the handler, turning the webhook server's panic on a
// path used twice into an error.
func register(mount func(string, http.Handler), pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("serve the webhooks at %s: %v", pattern, p)
		}
	}()
	mount(pattern, h)
	return nil
}
