// Package testenv starts one envtest control plane (a real kube-apiserver
// and etcd) for a test binary, building the binaries from source first if
// they are not there yet, and runs operators against it, in the test's
// process or as child processes.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Assets returns the directory with kube-apiserver and etcd: the
// KUBEBUILDER_ASSETS of the environment if set, else what
// hack/envtest-binaries.sh builds (once) or finds in its cache.
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command(filepath.Join(Root(), "hack", "envtest-binaries.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the envtest binaries: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Start starts a control plane with the given CRD files installed.
func Start(crds ...string) (*Env, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("create a client: %w", err)
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// PeeringCRDs are the paths of the peering CRDs.
func PeeringCRDs() []string {
	return []string{
		filepath.Join(Root(), "config", "crd", "kopfpeerings.yaml"),
		filepath.Join(Root(), "config", "crd", "clusterkopfpeerings.yaml"),
	}
}

// ExampleCRD is the path of the KopfExample CRD.
func ExampleCRD() string { return filepath.Join(Root(), "examples", "crd.yaml") }

// KubeconfigFile writes a kubeconfig for an administrator of the control
// plane into dir and returns its path, for operators run as processes or
// through a command line.
func (e *Env) KubeconfigFile(dir string) (string, error) { return WriteKubeconfig(e.env, dir) }

// WriteKubeconfig writes a kubeconfig for an administrator (a user of its
// own, in system:masters) of a running envtest control plane into dir and
// returns its path. It serves Env and programs that run envtest
// themselves, such as the demo.
func WriteKubeconfig(env *envtest.Environment, dir string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "kopf-go-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("add a user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("render the kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write the kubeconfig: %w", err)
	}
	return path, nil
}
