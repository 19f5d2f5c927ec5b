package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/test/testenv"
)

// The deployment manifests of config/deploy are accepted by the API
// server as they are (in the test's namespace), and the operator runs with
// their container's arguments and environment, as their ServiceAccount
// with config/rbac's Role and metrics role: it handles an object, and its
// probes answer.
func TestDeploymentManifests(t *testing.T) {
	for _, file := range []string{"namespaced.yaml", "sharded.yaml"} {
		t.Run(file, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			role := manifest[rbacv1.Role](t, "namespaced.yaml")
			role.Namespace = ns
			testenv.Create(t, env.Client, role, manifest[rbacv1.ClusterRole](t, "metrics-auth.yaml"))
			var deployment *appsv1.Deployment
			for _, obj := range deployManifests(t, file, ns) {
				testenv.Create(t, env.Client, obj)
				if obj.GetKind() == "Deployment" {
					deployment = &appsv1.Deployment{}
					if err := runtimeConvert(obj, deployment); err != nil {
						t.Fatal(err)
					}
				}
			}
			container := deployment.Spec.Template.Spec.Containers[0]
			for _, e := range container.Env {
				switch e.Name {
				case "POD_ID":
					t.Setenv("POD_ID", deployment.Name+"-pod-1")
				case "POD_NAMESPACE":
					t.Setenv("POD_NAMESPACE", ns)
				}
			}
			sa := account{namespace: ns, name: deployment.Spec.Template.Spec.ServiceAccountName}
			args, probes := localArgs(t, container.Args)
			args = append(args, "--kubeconfig", sa.kubeconfig(t))

			reg, kind := kex()
			var served servedCreates
			served.register(kind)
			runRunner(t, reg, args)
			create(t, exampleObject(t, ns))
			eventually(t, "the object is handled", func() bool { return served.createdIn(ns) })
			for _, u := range probes {
				eventually(t, u+" answers 200", func() bool {
					resp, err := http.Get(u)
					if err != nil {
						return false
					}
					defer func() { _ = resp.Body.Close() }()
					_, _ = io.Copy(io.Discard, resp.Body)
					return resp.StatusCode == http.StatusOK
				})
			}
		})
	}
}

// deployManifests reads a manifest of config/deploy, its namespace
// ("operators") replaced with ns.
func deployManifests(t *testing.T, file, ns string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("operators"), []byte(ns))
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		obj.SetNamespace(ns)
		out = append(out, obj)
	}
}

// localArgs are the container's arguments with its listening ports moved
// to free local ones, and the probe URLs to check.
func localArgs(t *testing.T, args []string) ([]string, []string) {
	var out, probes []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--liveness":
			addr := testenv.FreeAddress(t)
			a = "--liveness=http://" + addr + "/healthz"
			probes = append(probes, "http://"+addr+"/healthz")
		case "--health-probe-bind-address":
			addr := testenv.FreeAddress(t)
			a = name + "=" + addr
			probes = append(probes, "http://"+addr+"/readyz", "http://"+addr+"/healthz")
		case "--metrics-bind-address":
			a = fmt.Sprintf("%s=%s", name, testenv.FreeAddress(t))
		}
		out = append(out, a)
	}
	return out, probes
}

// runtimeConvert converts an unstructured object to a typed one.
func runtimeConvert(u *unstructured.Unstructured, into any) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, into)
}
