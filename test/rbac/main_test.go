// Package rbac checks the RBAC that kopf-go ships (config/rbac, the roles
// in config/deploy, the kubebuilder plugin's markers) against what the
// operator does with it. Operators run as ServiceAccounts bound to those
// roles only, through scenarios that use the engine's features, against a
// kube-apiserver that writes an audit log of every request a
// ServiceAccount makes. Every verb a role grants must be seen used, or be
// listed (in exemptions) with the rarer path that needs it; and the API
// server must refuse none of the operators' requests.
package rbac

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

var (
	// cfg connects to the control plane as an administrator.
	cfg *rest.Config
	// admin is a direct client of cfg.
	admin client.Client
	// auditLog is the file the API server writes its audit events to.
	auditLog string
)

// auditPolicy records every request of a ServiceAccount (the operators,
// and the scrapers of their metrics) at the Metadata level: who, which
// verb on which resource, and the answer's code. Nothing else is
// recorded, so the log holds the operators' requests and little more.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts a control plane of its own (the audit log needs flags of the
// kube-apiserver's that pkg/kopftest does not set), runs the tests and
// stops it.
func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	// client-go streams an informer's first listing in a watch
	// (sendInitialEvents) where the API server can, as this one can, and
	// lists otherwise (older API servers, or WatchList turned off). The
	// operators here take the listing path, which needs list and watch; the
	// streaming one needs watch alone, a subset.
	if err := os.Setenv("KUBE_FEATURE_WatchListClient", "false"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kopf-rbac-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	auditLog = filepath.Join(dir, "audit.log")
	assets, err := kopftest.Assets()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append(testenv.PeeringCRDs(), testenv.ExampleCRD()),
		ErrorIfCRDPathMissing: true,
	}
	e.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog)
	if cfg, err = e.Start(); err != nil {
		fmt.Fprintln(os.Stderr, fmt.Errorf("start the control plane (binaries from %s): %w", assets, err))
		return 1
	}
	code := 1
	if admin, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, fmt.Errorf("stop the control plane: %w", err))
		code = 1
	}
	return code
}
