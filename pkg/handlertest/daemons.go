package handlertest

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"github.com/kopf-go/kopf/pkg/cause"
)

// Daemon is one call of a daemon or timer function, for a unit test: the
// test runs the function with Cause, and stops it as the engine would.
//
//	d := handlertest.NewDaemon(obj)
//	go func() { done <- myDaemon(ctx, obj, d.Cause) }()
//	d.Stop(cause.StopResourceDeleted) // Stopped closes, Sleep returns false
type Daemon struct {
	// Cause is what the function gets.
	Cause    *cause.Daemon
	detached *daemons.Detached
}

// NewDaemon makes the call for obj, as the first attempt of handler
// "daemon" beginning now.
func NewDaemon(obj client.Object) *Daemon {
	d := daemons.Detach("daemon", obj, mustBody(obj), 0, time.Now())
	return &Daemon{Cause: d.Cause, detached: d}
}

// Stop asks the daemon to stop with the reason: Stopped closes,
// StopReason says why, and Sleep returns false. The context the test
// passed is the test's to cancel.
func (d *Daemon) Stop(reason cause.StopReason) { d.detached.Stop(reason) }

// Latest makes the cause's Latest return obj.
func (d *Daemon) Latest(obj client.Object) {
	d.detached.SetLatest(func(context.Context) (causes.Object, error) { return obj, nil })
}

// Patch is what the daemon put in its patch, as the merge patch the engine
// would apply; nil if nothing.
func (d *Daemon) Patch() map[string]any { return mergepatch.Whole(d.Cause.Patch) }
