package clients

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/write/writetest"
)

// TestClientWrapperThatPanicsItself: a WrapClient that panics instead of
// returning a client gives the engine a client whose requests fail, with
// the panic as their error.
func TestClientWrapperThatPanicsItself(t *testing.T) {
	raw := fake.NewClientBuilder().Build()
	c := Contain(func(client.Client) client.Client { panic("no client today") }, raw, logr.Discard())
	obj := writetest.Object("a", nil)
	for name, err := range map[string]error{
		"Get":          c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj),
		"Patch":        c.Patch(context.Background(), obj, client.Merge),
		"Status.Patch": c.Status().Patch(context.Background(), obj, client.Merge),
	} {
		var p *contain.Panic
		if !errors.As(err, &p) || p.Value != "no client today" {
			t.Errorf("%s() = %v, want the wrapper's panic", name, err)
		}
	}
	if c.Scheme() == nil {
		t.Error("the client has no scheme")
	}
}

// statusWrapper is a WrapClient with a status writer of its own, as
// fault injectors and instrumentation have.
type statusWrapper struct {
	client.Client
	patched *int
}

type countingStatus struct {
	client.SubResourceWriter
	patched *int
}

func (w statusWrapper) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: w.Client.Status(), patched: w.patched}
}

func (s countingStatus) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	*s.patched++
	return nil
}

// TestGuardKeepsTheWrappersStatus: the guard writes the status through
// the wrapper's own Status(), not around it.
func TestGuardKeepsTheWrappersStatus(t *testing.T) {
	var patched int
	c := Guard(statusWrapper{Client: fake.NewClientBuilder().Build(), patched: &patched}, logr.Discard())
	if err := c.Status().Patch(context.Background(), writetest.Object("a", nil), client.Merge); err != nil {
		t.Fatal(err)
	}
	if patched != 1 {
		t.Errorf("the wrapper's status writer patched %d times, want 1", patched)
	}
}
