package handlers

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
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
func setupConversion(mgr manager.Manager, convs *conversion.Registry, opts WebhookOptions, path string) error {
	if convs == nil {
		return nil
	}
	log := mgr.GetLogger().WithName("conversion")
	if err := register(mgr.GetWebhookServer().Register, path+ConversionPath, &conversion.Server{Registry: convs, Logger: log}); err != nil {
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
	kinds := make([]schema.GroupKind, 0, len(convs.Kinds))
	for _, k := range convs.Kinds {
		kinds = append(kinds, k.GroupKind)
	}
	started := mgr.GetWebhookServer().StartedChecker()
	return mgr.Add(&conversionmanaged.Conversions{
		Name:         opts.Managed,
		Kinds:        kinds,
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
