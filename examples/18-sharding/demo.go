package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kopf-go/kopf/handlers"
)

// The demo's ring. Its durations are short, so that the demo takes
// seconds; a Deployment keeps the defaults (15 s, 10 s, 5 s), which
// tolerate slow API servers and paused processes.
const (
	demoRing          = "demo"
	demoLeaseDuration = 3 * time.Second
	demoRenewDeadline = 2 * time.Second
	demoRenewPeriod   = 500 * time.Millisecond
)

const (
	// demoLabel marks the demo's objects, so that it lists only them.
	demoLabel = "kopf.dev/demo"
	// waitTimeout bounds each of the demo's waits.
	waitTimeout = time.Minute
	// quiet is how long the owners must stay as they are before the demo
	// counts the ring as settled: the assigner writes its handover
	// requests one object at a time.
	quiet = time.Second
	// joinGrace is how long the demo waits for a new replica to take an
	// object: with few objects, hashing may give it none.
	joinGrace = 5 * time.Second
)

// replica is one replica of the ring: a manager of its own, run by a
// goroutine that the demo owns, as a pod would run it.
type replica struct {
	cancel context.CancelFunc
	// done is closed once the manager has stopped; err is why.
	done chan struct{}
	err  error
}

// ownership is what the tables show of one object: its owner (a replica),
// the replica it is being handed over to, if any, and the replica that
// ran its create handler.
type ownership struct{ owner, granted, creator string }

// demoRun is one run of the demo.
type demoRun struct {
	cfg     *rest.Config
	c       client.Client
	ns      string
	objects int
	log     logr.Logger
	// running are the replicas that run now; names maps the member name
	// of every replica started to the replica's name.
	running map[string]*replica
	names   map[string]string
}

// demo runs three replicas, makes them share objects, stops one, adds
// another, and prints who owns which object after each step.
func demo(args []string) error {
	fs := flag.NewFlagSet("18-sharding --demo", flag.ContinueOnError)
	ns := fs.String("namespace", "default", "the namespace of the objects and of the ring's Leases")
	objects := fs.Int("objects", 12, "how many objects the replicas share")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := zap.New(zap.ConsoleEncoder(), zap.Level(zapcore.InfoLevel), zap.StacktraceLevel(zapcore.PanicLevel))
	ctrl.SetLogger(log)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("find the cluster: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("connect to the cluster: %w", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	d := &demoRun{cfg: cfg, c: c, ns: *ns, objects: *objects, log: log,
		running: map[string]*replica{}, names: map[string]string{}}
	err = d.run(ctx)
	return errors.Join(err, d.stopAll())
}

// run is the demo's story; the caller stops the replicas that are left.
func (d *demoRun) run(ctx context.Context) error {
	for _, name := range []string{"replica-1", "replica-2", "replica-3"} {
		if err := d.start(ctx, name); err != nil {
			return err
		}
	}
	if err := d.create(ctx); err != nil {
		return err
	}
	first, err := d.settle(ctx, "")
	if err != nil {
		return err
	}
	printTable(fmt.Sprintf("3 replicas share %d objects", d.objects), nil, first)

	if err := d.stop("replica-2"); err != nil {
		return err
	}
	second, err := d.settle(ctx, "")
	if err != nil {
		return err
	}
	printTable("replica-2 has stopped: its objects moved to the others", first, second)

	if err := d.start(ctx, "replica-4"); err != nil {
		return err
	}
	third, err := d.settle(ctx, "replica-4")
	if err != nil {
		return err
	}
	printTable("replica-4 has joined: it took its share from the others", second, third)

	if err := d.delete(ctx); err != nil {
		return err
	}
	fmt.Println("The objects are deleted; the replicas stop.")
	return nil
}

// start runs a replica and waits until it has joined the ring: its Lease
// exists.
func (d *demoRun) start(ctx context.Context, name string) error {
	mgr, err := manager.New(d.cfg, manager.Options{
		Logger:  d.log.WithName(name),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("create the manager of %s: %w", name, err)
	}
	err = handlers.SetupWithManager(mgr, registry(name), handlers.Options{
		// The identity names the replica in the ring: the pod's name in a
		// Deployment.
		Identity:   name,
		Namespaces: []string{d.ns},
		Standalone: true,
		Sharding: handlers.Sharding{Ring: demoRing, Namespace: d.ns,
			LeaseDuration: demoLeaseDuration, RenewDeadline: demoRenewDeadline, RenewPeriod: demoRenewPeriod},
	})
	if err != nil {
		return fmt.Errorf("set up %s: %w", name, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = mgr.Start(runCtx)
	}()
	d.running[name] = r
	// The replica's name in the ring (the owner labels' value) is on its
	// Lease, beside its identity.
	return d.waitFor(ctx, name+" joins the ring", func() (bool, error) {
		members, err := handlers.ShardMembers(ctx, d.c, d.ns, demoRing)
		for member, identity := range members {
			if identity == name {
				d.names[member] = name
				return true, nil
			}
		}
		return false, err
	})
}

// stop stops a replica gracefully: it stops its daemons, and then
// releases its Lease, which moves its objects to the others at once.
func (d *demoRun) stop(name string) error {
	r := d.running[name]
	delete(d.running, name)
	r.cancel()
	<-r.done
	if r.err != nil {
		return fmt.Errorf("stop %s: %w", name, r.err)
	}
	return nil
}

// stopAll stops the replicas that still run.
func (d *demoRun) stopAll() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(d.running)) {
		errs = append(errs, d.stop(name))
	}
	return errors.Join(errs...)
}

// object is the demo's i-th object (from 1).
func (d *demoRun) object(i int) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": "value"}}}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(d.ns)
	obj.SetName(fmt.Sprintf("kopf-demo-%02d", i))
	obj.SetLabels(map[string]string{demoLabel: "18-sharding"})
	return obj
}

// create creates the objects; ones left by an interrupted run are fine.
func (d *demoRun) create(ctx context.Context) error {
	for i := range d.objects {
		if err := d.c.Create(ctx, d.object(i+1)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create an object: %w", err)
		}
	}
	return nil
}

// delete deletes the objects and waits until they are gone: their owners
// stop their daemons and let the deletion finish.
func (d *demoRun) delete(ctx context.Context) error {
	for i := range d.objects {
		if err := d.c.Delete(ctx, d.object(i+1)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete an object: %w", err)
		}
	}
	return d.waitFor(ctx, "the objects are gone", func() (bool, error) {
		owners, err := d.read(ctx)
		return len(owners) == 0, err
	})
}
