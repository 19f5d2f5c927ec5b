package kopftest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

var env *kopftest.Env

func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	crd := filepath.Join(filepath.Dir(file), "..", "..", "examples", "crd.yaml")
	kopftest.Main(m, kopftest.Options{CRDs: []string{crd}}, &env)
}

func example(namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(namespace)
	obj.SetName(name)
	_ = unstructured.SetNestedField(obj.Object, "small", "spec", "field")
	return obj
}

// The toolkit's whole round: a namespace, an operator in-process, a
// handler's outcome awaited through the log and on the object, deletion
// through the finalizer, and no goroutine left behind.
func TestOperatorRound(t *testing.T) {
	kopftest.NoLeaks(t)
	ns := env.Namespace(t)
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	deleted := make(chan string, 1)
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		return map[string]any{"message": "hello"}, nil
	})
	handlers.OnDelete(kind, "delete_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		deleted <- obj.GetName()
		return nil, nil
	})
	started := time.Now()
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	obj := example(ns, "round")
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	op.WaitForLogAbout(t, "round", "Handler 'create_fn' succeeded.", 30*time.Second)
	op.WaitForLog(t, "Creation is processed: 1 succeeded; 0 failed.", 30*time.Second)
	// Each entry tells when it was logged: the handler's success before
	// the cause's summary, both since the operator started.
	succeeded, processed := op.Logs.Entries("Handler 'create_fn' succeeded."), op.Logs.Entries("Creation is processed")
	if len(succeeded) != 1 || len(processed) != 1 {
		t.Fatalf("entries: %d of the handler's success, %d of the summary; want 1 each", len(succeeded), len(processed))
	}
	if at := succeeded[0].Time; at.Before(started) || at.After(time.Now()) {
		t.Errorf("the handler's success is stamped %s, not between the start (%s) and now", at, started)
	}
	if processed[0].Time.Before(succeeded[0].Time) {
		t.Errorf("the summary is stamped %s, before the handler's success (%s)", processed[0].Time, succeeded[0].Time)
	}
	kopftest.Eventually(t, "the result in status", 30*time.Second, func() bool {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return false
		}
		message, _, _ := unstructured.NestedString(got.Object, "status", "create_fn", "message")
		return message == "hello"
	})

	if err := env.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the object is gone", 30*time.Second, func() bool {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got))
	})
	if name := <-deleted; name != "round" {
		t.Errorf("the delete handler saw %q", name)
	}
	if n := len(op.Logs.Messages("Handler 'delete_fn' succeeded.")); n != 1 {
		t.Errorf("the delete handler succeeded %d times in the log, want 1", n)
	}
}

func TestKubeconfigFile(t *testing.T) {
	path, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Error("the kubeconfig is empty")
	}
}

// fatalRecorder is a testing.TB whose Fatalf ends the goroutine, as the
// real one does, after recording the message.
type fatalRecorder struct {
	testing.TB
	message string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.message = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventuallyFailsWithWhatItAwaited(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	calls := 0
	go func() {
		defer close(done)
		kopftest.Eventually(rec, "the impossible", 50*time.Millisecond, func() bool { calls++; return false })
	}()
	<-done
	if want := "timed out after 50ms waiting for: the impossible"; rec.message != want {
		t.Errorf("message = %q, want %q", rec.message, want)
	}
	if calls < 2 {
		t.Errorf("the condition was checked %d times, want several", calls)
	}
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	kopftest.Eventually(t, "the third check", time.Second, func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("checked %d times, want 3", calls)
	}
}
