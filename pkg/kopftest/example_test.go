package kopftest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A test package starts one control plane for all its tests in TestMain
// (kopftest.Main), and each test runs the operator in-process, in a
// namespace of its own, and waits for what it does:
//
//	var env *kopftest.Env
//
//	func TestMain(m *testing.M) {
//		kopftest.Main(m, kopftest.Options{CRDs: []string{"../config/crd"}}, &env)
//	}
func Example() {
	testCreate := func(t *testing.T) {
		kopftest.NoLeaks(t)
		ns := env.Namespace(t)
		reg := handlers.NewRegistry()
		kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
		handlers.OnCreate(kex, "create_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
			return map[string]any{"message": "hello"}, nil
		})
		op := env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
		if err := env.Client.Create(context.Background(), example(ns, "kex-1")); err != nil {
			t.Fatal(err)
		}
		op.WaitForLogAbout(t, "kex-1", "Handler 'create_fn' succeeded.", 10*time.Second)
	}
	_ = testCreate
}

// A kubeconfig for the control plane, for an operator run as a process
// (or kubectl while a test is being debugged). This example runs against
// the control plane of this package's TestMain.
func ExampleEnv_KubeconfigFile() {
	dir, err := os.MkdirTemp("", "kopftest-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path, err := env.KubeconfigFile(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var ns corev1.Namespace
	err = c.Get(context.Background(), client.ObjectKey{Name: "default"}, &ns)
	fmt.Println(ns.Name, err)
	// Output:
	// default <nil>
}
