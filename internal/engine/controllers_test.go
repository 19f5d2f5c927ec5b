package engine

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A reconcile's logger names the controller and the object as
// controller-runtime's default does, but binds the object's values only
// when the reconcile writes a line: a reconcile that writes none (most
// of a takeover's first cycles) makes the structured logger encode
// nothing, whatever values controller-runtime adds.
func TestReconcileLoggerBindsOnlyWhenWriting(t *testing.T) {
	counting := &bindings{}
	newLog := reconcileLogger(logr.New(counting), "kopf-kopfexample.kopf.dev")
	bound := counting.values
	req := &reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "obj"}}
	quiet := newLog(req).WithValues("reconcileID", "r1")
	quiet.V(1).Info("a detail nobody prints")
	if counting.values != bound {
		t.Errorf("a reconcile that wrote nothing bound values %d times", counting.values-bound)
	}

	var lines []string
	printing := reconcileLogger(funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}), "kopf-kopfexample.kopf.dev")
	log := printing(req).WithValues("reconcileID", "r2")
	log.Info("Handler 'create_fn' succeeded.")
	want := `"level"=0 "msg"="Handler 'create_fn' succeeded." "controller"="kopf-kopfexample.kopf.dev" "object"={"name"="obj" "namespace"="ns"} "namespace"="ns" "name"="obj" "reconcileID"="r2"`
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), want)
	}
	if got := printing(nil); got.GetSink() == nil {
		t.Error("the controller's own logger (no request) discards")
	}
}

// bindings counts the values bound to it.
type bindings struct{ values int }

func (b *bindings) Init(logr.RuntimeInfo)          {}
func (b *bindings) Enabled(level int) bool         { return level == 0 }
func (b *bindings) Info(int, string, ...any)       {}
func (b *bindings) Error(error, string, ...any)    {}
func (b *bindings) WithName(string) logr.LogSink   { return b }
func (b *bindings) WithValues(...any) logr.LogSink { b.values++; return b }
