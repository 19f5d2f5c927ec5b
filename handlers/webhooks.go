package handlers

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/admission/managed"
	"github.com/kopf-go/kopf/internal/conversion"
	"github.com/kopf-go/kopf/internal/engine"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/runner"
	"github.com/kopf-go/kopf/internal/tracing"
)

// WebhookOptions configure the serving of webhook handlers.
type WebhookOptions struct {
	// Path is where the handlers are served on the manager's webhook
	// server: each at <Path>/<handler id>. Default: the root, as in Kopf.
	Path string
	// Managed, if set, names the ValidatingWebhookConfiguration and
	// MutatingWebhookConfiguration that the operator keeps in line with its
	// handlers (Kopf's settings.admission.managed, e.g. "auto.kopf.dev"):
	// one webhook per handler, named "<id>.<Managed>", applied with
	// server-side apply by one elected replica and applied again when
	// someone changes them; when the last replica that serves them exits,
	// only the Persistent handlers' webhooks stay (docs/admission.md).
	Managed string
	// LeaseNamespace holds the Leases by which the replicas that serve
	// Managed webhooks elect their writer and tell that they serve.
	// Default: the namespace the replica runs in ($POD_NAMESPACE, else its
	// service account's). Outside a cluster there is none, and the process
	// writes the configurations alone, as one process in development.
	LeaseNamespace string
	// Annotations are applied on both Managed configurations, as the
	// operator's own fields: e.g. cert-manager's
	// "cert-manager.io/inject-ca-from", to have its cainjector inject the
	// CA bundle (then leave ClientConfig.CABundle empty).
	Annotations map[string]string
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
	return setupWebhooks(mgr, reg, opts, tracing.Tracer{}, nil)
}

// setupWebhooks is SetupWebhooksWithManager for a registry whose resources
// are checked already; the reviews have spans of the tracer, and the
// conversion reviews are counted in converted (nil: not counted).
func setupWebhooks(mgr manager.Manager, reg *Registry, opts WebhookOptions, tracer tracing.Tracer, converted *conversion.Served) error {
	served, err := reg.servedWebhooks(mgr.GetScheme(), opts)
	if err != nil {
		return err
	}
	convs, err := reg.conversionRegistry(mgr.GetScheme())
	if err != nil {
		return err
	}
	if len(served.Kinds) == 0 && convs == nil {
		return nil
	}
	if err := metrics.Register(); err != nil {
		return fmt.Errorf("register the metrics: %w", err)
	}

	log := mgr.GetLogger().WithName("admission")
	ws := mgr.GetWebhookServer()
	// Before the first registration, which fills in the server's defaults.
	dev, err := runner.SelfSigned(mgr, opts.SelfSigned)
	if err != nil {
		return err
	}
	path := strings.TrimRight(opts.Path, "/")
	opts.ClientConfig = dev.ClientConfig(opts.ClientConfig)
	if err := setupConversion(mgr, convs, opts, path, converted); err != nil {
		return err
	}
	if len(served.Kinds) == 0 {
		return nil
	}
	if err := register(ws.Register, path+"/", &admission.Server{
		Registry: served, Prefix: path, Mapper: mgr.GetRESTMapper(), Logger: log,
		MaxConcurrent: opts.MaxConcurrentReviews, Tracer: tracer,
	}); err != nil {
		return err
	}
	if opts.Managed == "" {
		return nil
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	started := ws.StartedChecker()
	configurations := &managed.Configurations{
		Config:    admission.Config{Name: opts.Managed, ClientConfig: opts.ClientConfig, Path: path, Annotations: opts.Annotations},
		Registry:  served,
		Clientset: clientset,
		Mapper:    mgr.GetRESTMapper(),
		Ready:     func() error { return started(nil) },
		Namespace: cmp.Or(opts.LeaseNamespace, engine.PodNamespace()),
		Identity:  peering.Identity(false, time.Now()),
		Logger:    log,
	}
	if err := mgr.AddReadyzCheck("webhooks-"+opts.Managed, func(*http.Request) error { return configurations.Serving() }); err != nil {
		return fmt.Errorf("add the readiness check of the webhooks: %w", err)
	}
	return mgr.Add(configurations)
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
