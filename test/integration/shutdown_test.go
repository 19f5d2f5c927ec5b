package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// When the operator stops, it waits for the change handlers and daemons
// still running, says every report interval which ones of which objects,
// and after the grace gives up on them and says what it leaves behind.
func TestShutdownNamesWhatItWaitsFor(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlerStarted, daemonStarted := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	handlers.OnCreate(kind, "slow_create", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		close(handlerStarted)
		<-release // ignores its context
		return nil, nil
	})
	handlers.Daemon(kind, "stubborn", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		close(daemonStarted)
		<-release // ignores its context and the stop signal
		return nil, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{ShutdownGrace: 2 * time.Second, ReportInterval: 200 * time.Millisecond})
	create(t, exampleObject(t, ns))
	<-handlerStarted
	<-daemonStarted

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		op.Stop(t)
	}()
	eventually(t, "the stopping operator names what it waits for", func() bool {
		for _, line := range op.Logs.Messages("The operator is stopping; still waiting for 2: ") {
			if strings.Contains(line, "Daemon 'stubborn' of "+ns+"/kopf-example-1 (stopping for ") &&
				strings.Contains(line, "OPERATOR_EXITING|DAEMON_CANCELLED") &&
				strings.Contains(line, "Handler 'slow_create' of "+ns+"/kopf-example-1 (running for ") {
				return true
			}
		}
		return false
	})
	eventually(t, "after the grace it says what it leaves behind", func() bool {
		for _, line := range op.Logs.Messages("The operator stops without waiting any longer (2s); left running") {
			if strings.Contains(line, "Daemon 'stubborn'") && strings.Contains(line, "Handler 'slow_create'") {
				return true
			}
		}
		return false
	})
	close(release)
	<-stopped
}
