package handlers

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/conversion"
	conversionmanaged "github.com/kopf-go/kopf/internal/conversion/managed"
	"github.com/kopf-go/kopf/internal/engine"
	"github.com/kopf-go/kopf/internal/peering"
)

// setupConversion serves the converters' ConversionReviews at
// <path>/convert on the manager's webhook server, beside the admission
// webhooks, and with opts.Managed keeps the CRDs' spec.conversion
// pointing there (docs/conversion.md). Without converters it does
// nothing.
func setupConversion(mgr manager.Manager, convs *conversion.Registry, opts WebhookOptions, path string, served *conversion.Served) error {
	if convs == nil {
		return nil
	}
	log := mgr.GetLogger().WithName("conversion")
	if err := register(mgr.GetWebhookServer().Register, path+ConversionPath, &conversion.Server{Registry: convs, Logger: log, Served: served}); err != nil {
		return err
	}
	if opts.Managed == "" {
		return nil
	}
	crds, err := apiextensionsclient.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("create a client of the CRDs: %w", err)
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	started := mgr.GetWebhookServer().StartedChecker()
	return mgr.Add(&conversionmanaged.Conversions{
		Name:         opts.Managed,
		Kinds:        convs.GroupKinds(),
		ClientConfig: conversionClientConfig(opts.ClientConfig, path),
		Annotations:  opts.Annotations,
		CRDs:         crds,
		Clientset:    clientset,
		Mapper:       mgr.GetRESTMapper(),
		Ready:        func() error { return started(nil) },
		Namespace:    cmp.Or(opts.LeaseNamespace, engine.PodNamespace()),
		Identity:     peering.Identity(false, time.Now()),
		Logger:       log,
	})
}

// conversionGate holds the engine's first watch of each kind whose
// conversion is managed until the API server converts it through the
// webhook (docs/conversion.md, "First start"); nil when nothing is
// managed. served counts the reviews that the webhook serves.
func conversionGate(mgr manager.Manager, convs *conversion.Registry, opts WebhookOptions, served *conversion.Served) (*conversionmanaged.Gate, error) {
	if convs == nil || opts.Managed == "" {
		return nil, nil
	}
	crds, err := apiextensionsclient.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("create a client of the CRDs: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("create a client of the converted kinds: %w", err)
	}
	return &conversionmanaged.Gate{CRDs: crds, Dynamic: dyn, Mapper: mgr.GetRESTMapper(), Served: served, Kinds: convs.GroupKinds(),
		Clock: clock.RealClock{}, Logger: mgr.GetLogger().WithName("conversion")}, nil
}

// conversionClientConfig is the client config of the webhook server's
// root with the conversion endpoint's path appended.
func conversionClientConfig(c admissionregistrationv1.WebhookClientConfig, path string) admissionregistrationv1.WebhookClientConfig {
	suffix := path + ConversionPath
	if c.URL != nil {
		u := strings.TrimRight(*c.URL, "/") + suffix
		c.URL = &u
	}
	if c.Service != nil {
		s := *c.Service
		p := suffix
		if s.Path != nil {
			p = strings.TrimRight(*s.Path, "/") + suffix
		}
		s.Path = &p
		c.Service = &s
	}
	return c
}
